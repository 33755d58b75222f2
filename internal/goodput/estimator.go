package goodput

import (
	"math"
	"sort"
)

// MaxConfigs bounds the configurations kept per job and per application;
// later new configurations are predicted but not kept.
const MaxConfigs = 256

// RefitTolerance is the relative error in a new configuration's iteration
// time that makes a job's model fit again; a model within it already
// explains the measurement.
const RefitTolerance = 0.02

// AppRefitTolerance is RefitTolerance for an application's pooled model,
// which every job of the application measures configurations for and
// whose fit takes all of them (up to MaxConfigs): at 2% its refits were
// two thirds of the fitting on Pollux workload 6. At 5% the application
// models there are fitted 246 times instead of 379, and the mean JCT of
// the Pollux workloads moves by 0.03% (docs/simulator.md, "Estimator
// cost").
const AppRefitTolerance = 0.05

// table is the mean iteration time per configuration, in the order the
// configurations were first measured.
type table struct {
	keys []key
	sums map[key]*mean
}

type mean struct {
	sum float64
	n   int
}

func (t *table) has(k key) bool { _, ok := t.sums[k]; return ok }

// add records o; it reports false when o's configuration is new and the
// table is full.
func (t *table) add(o Obs) bool {
	k := o.key()
	if m, ok := t.sums[k]; ok {
		m.sum += o.Iteration
		m.n++
		return true
	}
	if len(t.keys) >= MaxConfigs {
		return false
	}
	if t.sums == nil {
		t.sums = map[key]*mean{}
	}
	t.keys = append(t.keys, k)
	t.sums[k] = &mean{sum: o.Iteration, n: 1}
	return true
}

func (t *table) obs() []Obs {
	out := make([]Obs, len(t.keys))
	for i, k := range t.keys {
		m := t.sums[k]
		out[i] = Obs{Nodes: k.nodes, Replicas: k.replicas, Atomic: k.atomic, Accum: k.accum, Iteration: m.sum / float64(m.n)}
	}
	return out
}

// placed reports whether the table holds the placement in any batch.
func (t *table) placed(nodes, replicas int) bool {
	for _, k := range t.keys {
		if k.nodes == nodes && k.replicas == replicas {
			return true
		}
	}
	return false
}

type fitted struct {
	t      table
	params Params
	ok     bool // params hold a fit of t
	dirty  bool // t changed in a way params do not explain
}

type jobModel struct {
	app string
	fitted
	// held counts, per configuration not yet taken, the observations
	// held back as outliers (see OutlierRatio).
	held map[key]int
}

type appModel struct {
	fitted
	placement, batch ErrorStats
	// best is each source's best samples per second per replica: a live
	// job's by name, the stored history's and the finished jobs' under "".
	best map[string]float64
}

// Step times are claims, as throughputs are: a job that reports steps far
// faster than its application's other sources ran could take GPUs from
// honest jobs. A job's configuration whose samples per second per replica
// exceed OutlierRatio times the best any other source of its application
// measured (its history, its other jobs) is held back, out of the job's
// fit and its application's, until ConfirmObservations observations (or
// reports, each of which hands the configuration over again) have
// claimed it. Until then the job is estimated by its application. The
// first job of an application has nothing to be compared with.
const (
	OutlierRatio        = 4.0
	ConfirmObservations = 10
)

// outlier reports whether o is held back: beyond OutlierRatio times the
// best of a's other sources, and not yet claimed ConfirmObservations times.
func (j *jobModel) outlier(a *appModel, job string, o Obs) bool {
	other := a.othersBest(job)
	if other == 0 || o.perReplica() <= OutlierRatio*other {
		return false
	}
	k := o.key()
	if j.held == nil {
		j.held = map[key]int{}
	}
	if j.held[k]++; j.held[k] < ConfirmObservations {
		return true
	}
	return false
}

// perReplica is o's samples per second per replica.
func (o Obs) perReplica() float64 {
	return float64(o.Atomic*(o.Accum+1)) / o.Iteration
}

// othersBest is the best samples per second per replica of app's sources
// other than job (0: none).
func (a *appModel) othersBest(job string) float64 {
	best := 0.0
	for src, v := range a.best {
		if src != job {
			best = max(best, v)
		}
	}
	return best
}

func (a *appModel) record(src string, o Obs) {
	if a.best == nil {
		a.best = map[string]float64{}
	}
	a.best[src] = max(a.best[src], o.perReplica())
}

// ErrorStats summarise relative prediction errors |predicted−measured| /
// measured.
type ErrorStats struct {
	N        int
	Sum, Max float64
}

// Mean is the mean relative error, 0 with none.
func (s ErrorStats) Mean() float64 {
	if s.N == 0 {
		return 0
	}
	return s.Sum / float64(s.N)
}

func (s *ErrorStats) add(e float64) {
	s.N++
	s.Sum += e
	s.Max = math.Max(s.Max, e)
}

// Accuracy is how well an application's configurations were predicted
// before a job first ran on them.
type Accuracy struct {
	App string
	// NewPlacement covers placements (nodes, replicas) the job had never
	// run on; NewBatch new batch sizes on a placement it had.
	NewPlacement, NewBatch ErrorStats
}

// Estimator keeps the measured iteration times of live jobs and of
// applications and fits their throughput models. It is not safe for
// concurrent use.
type Estimator struct {
	jobs map[string]*jobModel
	apps map[string]*appModel
}

// NewEstimator returns an empty estimator.
func NewEstimator() *Estimator {
	return &Estimator{jobs: map[string]*jobModel{}, apps: map[string]*appModel{}}
}

func (e *Estimator) app(name string) *appModel {
	a := e.apps[name]
	if a == nil {
		a = &appModel{}
		e.apps[name] = a
	}
	return a
}

// Observe records that job, of application app, ran o's configuration at
// o.Iteration seconds per step. The first time the job runs a
// configuration, the model's prediction for it is scored in the
// application's Accuracy, and a miss beyond RefitTolerance makes the job's
// model (beyond AppRefitTolerance, the application's) fit again when next
// asked for.
func (e *Estimator) Observe(job, app string, o Obs) {
	if !o.Valid() {
		return
	}
	j := e.jobs[job]
	if j == nil {
		j = &jobModel{app: app}
		e.jobs[job] = j
	}
	a := e.app(j.app)
	k := o.key()
	if j.outlier(a, job, o) {
		return
	}
	if !j.t.has(k) {
		if p, ok := e.Params(job); ok {
			err := math.Abs(p.Predict(o)-o.Iteration) / o.Iteration
			if j.t.placed(o.Nodes, o.Replicas) {
				a.batch.add(err)
			} else {
				a.placement.add(err)
			}
			if err > RefitTolerance {
				j.dirty = true
			}
		}
	}
	if !j.t.add(o) {
		return
	}
	if !j.ok {
		j.dirty = true
	}
	if !a.t.has(k) {
		if !a.ok || math.Abs(a.params.Predict(o)-o.Iteration)/o.Iteration > AppRefitTolerance {
			a.dirty = true
		}
	}
	a.t.add(o)
	a.record(job, o)
}

// Forget drops a finished job; what it measured stays with its
// application.
func (e *Estimator) Forget(job string) {
	if j := e.jobs[job]; j != nil {
		if a := e.apps[j.app]; a != nil {
			if v, ok := a.best[job]; ok {
				a.best[""] = max(a.best[""], v)
				delete(a.best, job)
			}
		}
	}
	delete(e.jobs, job)
}

// AppParams returns the application's pooled fit, fitting it again if new
// measurements disagree with it; false when the application has none.
func (e *Estimator) AppParams(app string) (Params, bool) {
	a := e.apps[app]
	if a == nil || len(a.t.keys) == 0 {
		return Params{}, false
	}
	if !a.ok || a.dirty {
		obs := a.t.obs()
		prior := Generic(obs[0])
		if a.ok {
			prior = a.params
		}
		a.params, a.ok, a.dirty = Fit(obs, prior), true, false
	}
	return a.params, true
}

// Params returns the job's model: its own measurements fitted with its
// application's pooled fit as the prior, or the application's fit alone
// before the job is measured; false when nothing is known.
func (e *Estimator) Params(job string) (Params, bool) {
	j := e.jobs[job]
	if j == nil {
		return Params{}, false
	}
	if len(j.t.keys) == 0 {
		return e.AppParams(j.app)
	}
	if !j.ok || j.dirty {
		obs := j.t.obs()
		prior, ok := e.AppParams(j.app)
		if !ok {
			prior = Generic(obs[0])
		}
		j.params, j.ok, j.dirty = Fit(obs, prior), true, false
	}
	return j.params, true
}

// JobParams is Params for a job that may not have been observed yet: it
// registers the job under app so that its application's fit serves it.
func (e *Estimator) JobParams(job, app string) (Params, bool) {
	if e.jobs[job] == nil {
		e.jobs[job] = &jobModel{app: app}
	}
	return e.Params(job)
}

// Accuracy returns every application's prediction errors, by name.
func (e *Estimator) Accuracy() []Accuracy {
	out := make([]Accuracy, 0, len(e.apps))
	for name, a := range e.apps {
		out = append(out, Accuracy{App: name, NewPlacement: a.placement, NewBatch: a.batch})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].App < out[j].App })
	return out
}

// SetJob makes job's measurements configs (in the order first measured,
// as a job's reports keep them), as a live job of app: a configuration
// the job had not had before is observed as Observe would (scored, and
// making the model fit again when mispredicted); one it had takes the new
// count and sum, which its application's table gets too. Setting the same
// configurations again changes nothing, so a caller may hand over a job's
// whole record after each report.
func (e *Estimator) SetJob(job, app string, configs []Config) {
	j := e.jobs[job]
	if j == nil {
		j = &jobModel{app: app}
		e.jobs[job] = j
	}
	a := e.app(j.app)
	for _, c := range configs {
		if !c.Valid() {
			continue
		}
		o := c.Obs()
		k := o.key()
		m, had := j.t.sums[k]
		if !had {
			e.Observe(job, app, o)
			if m = j.t.sums[k]; m == nil {
				continue // the table is full
			}
		}
		dn, ds := c.N-m.n, c.Seconds-m.sum
		if dn <= 0 {
			continue // nothing new
		}
		if had && j.outlier(a, job, o) {
			continue // steps claimed far faster than before: held back
		}
		m.n, m.sum = c.N, c.Seconds
		a.record(job, o)
		if am := a.t.sums[k]; am != nil {
			am.n += dn
			am.sum += ds
		}
	}
}

// SetApp sets what an application's jobs measured before (its stored
// history), before any of its live jobs is set or observed.
func (e *Estimator) SetApp(app string, configs []Config) {
	a := e.app(app)
	a.t = table{}
	delete(a.best, "")
	for _, c := range configs {
		if !c.Valid() {
			continue
		}
		if a.t.add(c.Obs()) {
			m := a.t.sums[c.Obs().key()]
			m.sum, m.n = c.Seconds, c.N
			a.record("", c.Obs())
		}
	}
	a.ok, a.dirty = false, len(a.t.keys) > 0
}

// AppConfigs returns what an application's jobs measured, finished and
// live, for storing; nil when nothing.
func (e *Estimator) AppConfigs(app string) []Config {
	a := e.apps[app]
	if a == nil || len(a.t.keys) == 0 {
		return nil
	}
	out := make([]Config, len(a.t.keys))
	for i, k := range a.t.keys {
		m := a.t.sums[k]
		out[i] = Config{Nodes: k.nodes, Workers: k.replicas, Local: k.atomic, Accum: k.accum, Seconds: m.sum, N: m.n}
	}
	return out
}

// DropApp forgets an application no live job names; it reports whether
// it did.
func (e *Estimator) DropApp(app string) bool {
	for _, j := range e.jobs {
		if j.app == app {
			return false
		}
	}
	delete(e.apps, app)
	return true
}

// MostReplicas is the most replicas job was measured on (0: none), and
// AppMostReplicas the most any job of app was.
func (e *Estimator) MostReplicas(job string) int {
	if j := e.jobs[job]; j != nil {
		return j.t.mostReplicas()
	}
	return 0
}

// AppMostReplicas: see MostReplicas.
func (e *Estimator) AppMostReplicas(app string) int {
	if a := e.apps[app]; a != nil {
		return a.t.mostReplicas()
	}
	return 0
}

func (t *table) mostReplicas() int {
	most := 0
	for _, k := range t.keys {
		most = max(most, k.replicas)
	}
	return most
}
