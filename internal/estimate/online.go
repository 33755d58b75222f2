package estimate

import (
	"fmt"
	"math"

	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/model"
)

// Options configure an Online estimator.
type Options struct {
	// StepModels fits step-time models to the jobs that report step times
	// and declare their batch bounds (the server's policy, and `voda
	// simulate --estimator goodput`); off, every job gets Amdahl's law on
	// its throughput (`--estimator amdahl`).
	StepModels bool
}

// Online estimates from measurements taken as jobs run. It is not safe
// for concurrent use.
type Online struct {
	opts        Options
	col         *collector.Collector
	gp          *goodput.Estimator
	gpusPerNode int
	curves      map[string]*curve
	shared      map[shape]sharedCurve
	// plans are the candidate batches of every table, which depend only
	// on a job's bounds: jobs of an application share them, and a job's
	// table is built again at each fit of its model.
	plans *goodput.Plans
	// declared is what each application's jobs last declared.
	declared map[string]Declared
}

var _ Estimator = (*Online)(nil)

// curve is a job's goodput curve, kept until what it depends on changes:
// its shape, which changes when the job is fitted again or ramps up, and
// its gradient statistics, which change at every epoch. Its table
// (goodput.Table) makes a curve for new statistics a pass over the
// candidates' step times; it is kept for jobs that report statistics. A
// job that does not (one that never ran) takes the curve of the same
// shape another such job took (Online.shared): the jobs of an application
// queue with its model and bounds, by the thousand on a busy server.
type curve struct {
	shape
	table *goodput.Table // nil: not kept

	// taken: speedup, batch and rate1 are the curve for stats.
	taken   bool
	stats   goodput.GradStats
	speedup []float64
	batch   []int
	rate1   float64
}

// shape is what a goodput curve depends on besides the gradient
// statistics.
type shape struct {
	params      goodput.Params
	bounds      goodput.Bounds
	limit       int
	gpusPerNode int
}

// sharedCurve is a curve for unknown gradient statistics.
type sharedCurve struct {
	speedup []float64
	batch   []int
	rate1   float64
}

// maxShared bounds Online.shared: it is emptied when full. Each entry is
// a curve (16 bytes a worker count); the shapes in use are about one per
// application and reach.
const maxShared = 1024

// NewOnline returns an estimator that knows nothing yet.
func NewOnline(opts Options) *Online {
	return &Online{opts: opts, col: collector.New(), gp: goodput.NewEstimator(), curves: map[string]*curve{}, shared: map[shape]sharedCurve{}, plans: goodput.NewPlans(), declared: map[string]Declared{}}
}

// SetGPUsPerNode sets the GPUs of one node: curves are for k workers on
// as few nodes as hold them (0 or 1: unknown, all on one node).
func (o *Online) SetGPUsPerNode(n int) {
	o.gpusPerNode = n
	o.col.SetGPUsPerNode(n)
}

// Observe records a stretch of time a job ran on one placement (the
// throughput Amdahl's law fits).
func (o *Online) Observe(obs collector.Observation) { o.col.ObserveAll([]collector.Observation{obs}) }

// ObserveStep records one configuration's measured time per optimizer
// step.
func (o *Online) ObserveStep(job, app string, obs goodput.Obs) { o.gp.Observe(job, app, obs) }

// ObserveRestart records that a job took seconds to start on a new
// placement.
func (o *Online) ObserveRestart(job, app string, seconds float64) {
	o.col.ObserveRestart(job, app, seconds)
}

// Measured is everything a live job's reports measured, as it is stored
// with the job (progress.State).
type Measured struct {
	Throughput collector.Measurements
	// Steps are its step times per configuration, in the order first
	// measured (nil: the job reports none).
	Steps []goodput.Config
	// Declared is what its latest report declared of its batch (zero:
	// no adaptive batch).
	Declared Declared
}

// Declared is what a job's reports declare of its batch: its bounds and
// the samples of one of its epochs. The latest a job of an application
// declared stands for the application, so that a new job of it is
// estimated like its predecessors before it reports (Unreported).
type Declared struct {
	InitBatch int `json:"initBatch"`
	MaxBatch  int `json:"maxBatch"`
	MinLocal  int `json:"minLocal,omitempty"`
	MaxLocal  int `json:"maxLocal,omitempty"`
	// SamplesPerEpoch is 0 when the reports did not say.
	SamplesPerEpoch float64 `json:"samplesPerEpoch,omitempty"`
}

// Bounds are the declared batch bounds.
func (d Declared) Bounds() goodput.Bounds {
	return goodput.Bounds{InitBatch: d.InitBatch, MaxBatch: d.MaxBatch, MinLocal: d.MinLocal, MaxLocal: d.MaxLocal}
}

// valid reports whether d declares an adaptive batch that makes sense.
func (d Declared) valid() bool {
	b := d.Bounds()
	return b.Check() == nil && b.Adaptive() && d.SamplesPerEpoch >= 0 && !math.IsInf(d.SamplesPerEpoch, 1)
}

// SetJob replaces what is known of a live job with m, as a job of app.
// Handing over the same record again changes nothing.
func (o *Online) SetJob(job, app string, m Measured) {
	o.col.SetJob(job, app, m.Throughput)
	if len(m.Steps) > 0 {
		o.gp.SetJob(job, app, m.Steps)
	}
	o.Declare(app, m.Declared)
}

// Declare records what a job of app declared in its latest report (SetJob
// does it with the job's record; the simulator's jobs declare as they
// report). Nothing is recorded for a declaration without an adaptive
// batch.
func (o *Online) Declare(app string, d Declared) {
	if d.valid() {
		o.declared[app] = d
	}
}

// Unreported is the job to estimate for a live job that has not reported
// yet: its epochs (spec.Epochs, unknown when 0), and with step models,
// what its application's jobs declared: their bounds, and the steps of
// the initial batch in its epochs.
func (o *Online) Unreported(spec model.JobSpec, app string, gpus int) Job {
	j := Job{Name: spec.Name, App: app, MaxWorkers: min(spec.MaxWorkers*spec.PerWorker(), gpus), Remaining: -1, RemainingSteps: -1}
	if spec.Epochs > 0 {
		j.Remaining = float64(spec.Epochs)
	}
	d, ok := o.declared[app]
	if !ok || !o.opts.StepModels {
		return j
	}
	j.Bounds = d.Bounds()
	if j.Remaining > 0 && d.SamplesPerEpoch > 0 {
		j.RemainingSteps = j.Remaining * d.SamplesPerEpoch / float64(d.InitBatch)
	}
	return j
}

// History is what an application's jobs measured, as it is stored
// (store.SaveHistory): the throughput sums of its finished jobs and the
// step times of all its jobs. A history written before step times were
// kept holds only the first, and reads as it is.
type History struct {
	collector.Measurements
	Steps    []goodput.Config `json:"steps,omitempty"`
	Declared *Declared        `json:"declared,omitempty"`
}

// Validate checks a history read from storage.
func (h History) Validate() error {
	if err := h.Measurements.Validate(); err != nil {
		return err
	}
	if len(h.Steps) > goodput.MaxConfigs {
		return fmt.Errorf("steps: %d configurations, at most %d", len(h.Steps), goodput.MaxConfigs)
	}
	for i, c := range h.Steps {
		if !c.Valid() {
			return fmt.Errorf("steps[%d]: not a measured configuration: %+v", i, c)
		}
	}
	if h.Declared != nil && !h.Declared.valid() {
		return fmt.Errorf("declared: not an adaptive batch: %+v", *h.Declared)
	}
	return nil
}

// Empty reports whether the history holds nothing worth storing.
func (h History) Empty() bool {
	return len(h.Placements) == 0 && h.Restarts == 0 && len(h.Steps) == 0
}

// SetApp sets what an application's jobs measured before (its stored
// history), before any of its live jobs is set.
func (o *Online) SetApp(app string, h History) {
	o.col.SetApp(app, h.Measurements)
	if len(h.Steps) > 0 {
		o.gp.SetApp(app, h.Steps)
	}
	if h.Declared != nil && h.Declared.valid() {
		o.declared[app] = *h.Declared
	}
}

// App returns the application's history, for storing.
func (o *Online) App(app string) History {
	h := History{Measurements: o.col.App(app), Steps: o.gp.AppConfigs(app)}
	if d, ok := o.declared[app]; ok {
		h.Declared = &d
	}
	return h
}

// DropApp forgets an application unless a live job names it; it reports
// whether the application is no longer known.
func (o *Online) DropApp(app string) bool {
	if !o.col.DropApp(app) || !o.gp.DropApp(app) {
		return false
	}
	delete(o.declared, app)
	return true
}

// Forget drops a job that left; what it measured stays with its
// application.
func (o *Online) Forget(job string) {
	o.col.Forget(job)
	o.gp.Forget(job)
	delete(o.curves, job)
}

// Detail is what the throughput measurements say of a job, for people and
// gauges.
func (o *Online) Detail(job, app string) collector.Detail { return o.col.Detail(job, app) }

// Accuracy is how well each application's step-time model predicted
// configurations before its jobs ran them.
func (o *Online) Accuracy() []goodput.Accuracy { return o.gp.Accuracy() }

// Choose returns the batch size with the most estimated goodput for a job
// on workers workers over nodes nodes; false before anything is known of
// its application's step times.
func (o *Online) Choose(job, app string, g goodput.GradStats, b goodput.Bounds, nodes, workers int) (goodput.Choice, bool) {
	p, ok := o.Fit(job, app)
	if !ok {
		return goodput.Choice{}, false
	}
	// The job's curve tried the same batches with the same model: on its
	// placement if it is packed, else on the one it chose for before.
	if c := o.curves[job]; c != nil && c.table != nil && c.params == p && c.bounds == b {
		return c.table.Best(g, nodes, workers), true
	}
	return goodput.Best(p, g, b, nodes, workers), true
}

// Fit is the throughput model the goodput estimates of a job use: its
// own fit, else its application's; false when neither is known. Choose
// chooses with it, and the server's replies to a job's reports do.
func (o *Online) Fit(job, app string) (goodput.Params, bool) {
	return o.gp.JobParams(job, app)
}

// Ramp is the most workers a job's goodput curve reaches: twice the most
// it was measured on, and at least the most any job of its application
// was measured on and the workers it runs on now (at least 1).
func (o *Online) Ramp(j Job) int {
	return max(2*o.gp.MostReplicas(j.Name), o.gp.AppMostReplicas(j.App), j.Workers, 1)
}

// Estimate implements Estimator with the policy the package documents.
func (o *Online) Estimate(j Job) model.Estimates {
	maxWorkers := max(j.MaxWorkers, 1)
	if o.opts.StepModels {
		limit := min(maxWorkers, o.Ramp(j))
		if j.Bounds.InitBatch > 0 {
			if e, ok := o.goodput(j, limit); ok {
				return e
			}
		}
		// Nothing measured of the job or its application: start narrow
		// and measure, as Pollux does.
		if o.col.Source(j.Name, j.App) == collector.SourceDefault && o.gp.AppMostReplicas(j.App) == 0 {
			e := model.Estimates{RemainingSeconds: -1, Speedup: make([]float64, limit+1)}
			for k := range e.Speedup {
				e.Speedup[k] = float64(k)
			}
			e.RestartSeconds, _ = o.col.RestartSeconds(j.Name, j.App)
			return e
		}
	}
	return o.col.Estimate(j.Name, j.App, j.Remaining, maxWorkers)
}

// take returns the curve of c's shape for statistics g: from c's table,
// else from the curve another job took for unknown statistics (all give
// the same curve: every batch gains 1), else from a new table, which c
// keeps when g is known.
func (o *Online) take(c *curve, g goodput.GradStats) ([]float64, []int, float64) {
	if c.table != nil {
		return c.table.Curve(g)
	}
	if !g.Known() {
		if sc, ok := o.shared[c.shape]; ok {
			return sc.speedup, sc.batch, sc.rate1
		}
	}
	t := o.plans.NewTable(c.params, c.bounds, c.gpusPerNode, c.limit)
	speedup, batch, rate1 := t.Curve(g)
	if g.Known() {
		c.table = t
	} else {
		if len(o.shared) >= maxShared {
			clear(o.shared)
		}
		o.shared[c.shape] = sharedCurve{speedup, batch, rate1}
	}
	return speedup, batch, rate1
}

// goodput is a job's goodput curve up to limit workers, from its model;
// false when there is none.
func (o *Online) goodput(j Job, limit int) (model.Estimates, bool) {
	p, ok := o.gp.JobParams(j.Name, j.App)
	if !ok {
		return model.Estimates{}, false
	}
	c := o.curves[j.Name]
	if c == nil {
		c = &curve{}
		o.curves[j.Name] = c
	}
	if sh := (shape{params: p, bounds: j.Bounds, limit: limit, gpusPerNode: o.gpusPerNode}); !c.taken || c.shape != sh {
		c.shape, c.table, c.taken = sh, nil, false
	}
	if !c.taken || c.stats != j.Grad {
		c.speedup, c.batch, c.rate1 = o.take(c, j.Grad)
		c.stats, c.taken = j.Grad, true
	}
	if c.speedup == nil {
		return model.Estimates{}, false
	}
	e := model.Estimates{Speedup: c.speedup, RemainingSeconds: -1}
	switch {
	case j.RemainingSteps >= 0:
		e.RemainingSeconds = j.RemainingSteps / c.rate1
	case j.Remaining >= 0:
		e.RemainingSeconds = o.col.Estimate(j.Name, j.App, j.Remaining, 1).RemainingSeconds
	}
	if j.Bounds.Adaptive() {
		e.Batch = c.batch
	}
	e.RestartSeconds, _ = o.col.RestartSeconds(j.Name, j.App)
	return e, true
}
