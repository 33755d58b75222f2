package collector

import (
	"maps"
	"slices"

	"github.com/vodascheduler/voda/internal/model"
)

// DefaultSerial is the serial fraction assumed before any job of an
// application was seen at two worker counts.
const DefaultSerial = 0.05

// MinSerial is the least serial fraction a fit may report. Observed rates
// can look superlinear (fewer accumulation steps, better statistical
// efficiency later in training), but a curve that is exactly linear ties
// every allocation for algorithms that maximise total speedup, and the
// ties then starve later jobs.
const MinSerial = 0.01

// Observation is a stretch of time a job ran on one placement.
type Observation struct {
	Job, App string
	Workers  int
	// Nodes is how many distinct nodes the workers ran on; 0 is unknown,
	// which is its own placement and counts as one node in the fit.
	Nodes int
	// Pods is how many worker pods held the workers when they hold
	// several GPUs each; 0 or Workers is one pod per worker.
	Pods    int
	Seconds float64
	// Work is the progress made, in one-GPU seconds.
	Work float64
}

// jobState is what is known of one live job.
type jobState struct {
	app string
	m   Measurements
	// fitted caches the job's fit with the prior and reference fittedFor
	// until m changes.
	fitted    *fit
	fittedFor fitKey
	// perGPU caches othersPerGPU, computed when the application's
	// total was summed the perGPUFor-th time (0: not computed).
	perGPU    float64
	perGPUFor uint64
}

// fitKey is what a job's fit depends on besides its measurements: the
// prior, and the best rate per GPU of its application's other sources,
// which tells its outliers.
type fitKey struct {
	prior
	perGPU float64
}

// appState is what is known of one application: base, what its finished
// jobs left, and the live jobs naming it.
type appState struct {
	base Measurements
	jobs map[string]bool
	// total is base plus the live jobs' measurements, each bounded by the
	// others (robustSum), unless dirty. Every change but a restart marks
	// it dirty, and it is summed again, in the order of job names, when
	// next needed.
	total  Measurements
	dirty  bool
	fitted *fit // caches the fit of total until it changes
	// rates are every source's rate on each placement, sorted, as
	// robustSum bounded total with; summed with it.
	rates map[placementKey][]float64
	// sums counts the times total was summed, from 1.
	sums uint64
}

// Collector keeps measurements per job and per application and fits the
// estimates allocators use. It is not safe for concurrent use.
type Collector struct {
	jobs        map[string]*jobState
	apps        map[string]*appState
	gpusPerNode int
}

// New returns an empty collector.
func New() *Collector {
	return &Collector{jobs: map[string]*jobState{}, apps: map[string]*appState{}}
}

// Observe records that job (of application app) did work in seconds on
// workers GPUs, on an unknown number of nodes.
func (c *Collector) Observe(job, app string, workers int, seconds, work float64) {
	c.observe(Observation{Job: job, App: app, Workers: workers, Seconds: seconds, Work: work})
}

// ObserveAll records observations in order.
func (c *Collector) ObserveAll(obs []Observation) {
	for _, o := range obs {
		c.observe(o)
	}
}

func (c *Collector) observe(o Observation) {
	if !validObservation(o) {
		return
	}
	js := c.attach(o.Job, o.App)
	if !js.m.add(o) {
		return
	}
	js.fitted, js.perGPUFor = nil, 0
	// The application's total bounds each job by the others (robustSum):
	// it is summed again.
	c.touch(c.apps[o.App])
}

// ObserveRestart records that job (of application app) took seconds to
// start again on a new placement.
func (c *Collector) ObserveRestart(job, app string, seconds float64) {
	js := c.attach(job, app)
	js.m.AddRestart(seconds)
	if as := c.apps[js.app]; !as.dirty {
		as.total.AddRestart(seconds) // restarts do not enter the fit
	}
}

// Forget drops a finished job: its measurements join its application's
// base, which App returns.
func (c *Collector) Forget(job string) {
	js := c.jobs[job]
	if js == nil {
		return
	}
	as := c.apps[js.app]
	// What the job leaves is bounded by the others, as it was in the
	// application's total while it ran.
	as.base.Merge(js.m.boundedBy(ratesByPlacement(c.sources(as))))
	delete(as.jobs, job)
	delete(c.jobs, job)
	c.touch(as)
}

// SetJob replaces everything known of job with m, as a live job of app.
// Placements m holds that Validate would refuse are dropped.
func (c *Collector) SetJob(job, app string, m Measurements) {
	js := c.attach(job, app)
	js.m = normalize(m)
	js.fitted, js.perGPUFor = nil, 0
	c.touch(c.apps[app])
}

// Job returns what is known of a live job.
func (c *Collector) Job(job string) (Measurements, bool) {
	js := c.jobs[job]
	if js == nil {
		return Measurements{}, false
	}
	return js.m.clone(), true
}

// SetApp replaces the base of app's history: what its finished jobs left.
// Placements m holds that Validate would refuse are dropped.
func (c *Collector) SetApp(app string, m Measurements) {
	as := c.app(app)
	as.base = normalize(m)
	c.touch(as)
}

// App returns the base of app's history: what its finished jobs left,
// without its live jobs.
func (c *Collector) App(app string) Measurements {
	if as := c.apps[app]; as != nil {
		return as.base.clone()
	}
	return Measurements{}
}

// DropApp forgets app, what its finished jobs left included, unless a
// live job names it; it reports whether app is no longer known. A caller
// that does not keep an application's history drops it once its last
// job leaves, so that the collector holds the applications of its live
// jobs and of the histories kept, not every name ever used.
func (c *Collector) DropApp(app string) bool {
	if as := c.apps[app]; as != nil {
		if len(as.jobs) > 0 {
			return false
		}
		delete(c.apps, app)
	}
	return true
}

// SetGPUsPerNode sets the GPUs of one node of this collector's GPU type; 0
// or 1 is unknown, and every placement is then assumed to be on one node.
// Estimate's speedup curve is for k workers on ceil(k/n) nodes.
func (c *Collector) SetGPUsPerNode(n int) { c.gpusPerNode = n }

// nodesFor is the nodes k workers take when packed.
func (c *Collector) nodesFor(k int) int {
	if g := c.gpusPerNode; g > 1 {
		return (k + g - 1) / g
	}
	return 1
}

// attach returns job's state as a live job of app, moving it there from
// another application if it was known under one.
func (c *Collector) attach(job, app string) *jobState {
	js := c.jobs[job]
	if js == nil {
		js = &jobState{app: app}
		c.jobs[job] = js
		c.app(app).jobs[job] = true
		return js
	}
	if js.app != app {
		old := c.apps[js.app]
		delete(old.jobs, job)
		c.touch(old)
		js.app, js.perGPUFor = app, 0
		as := c.app(app)
		as.jobs[job] = true
		c.touch(as)
	}
	return js
}

func (c *Collector) app(name string) *appState {
	as := c.apps[name]
	if as == nil {
		as = &appState{jobs: map[string]bool{}}
		c.apps[name] = as
	}
	return as
}

// touch marks an application's total to be summed again.
func (c *Collector) touch(as *appState) {
	as.dirty = true
	as.fitted = nil
}

// sources are the application's base and its live jobs, in the order
// of their names.
func (c *Collector) sources(as *appState) []source {
	srcs := make([]source, 0, 1+len(as.jobs))
	srcs = append(srcs, source{m: &as.base})
	for _, job := range slices.Sorted(maps.Keys(as.jobs)) {
		srcs = append(srcs, source{m: &c.jobs[job].m, live: true})
	}
	return srcs
}

// appTotal returns the application's base plus its live jobs, each
// bounded by the others (robustSum).
func (c *Collector) appTotal(as *appState) *Measurements {
	if as.dirty {
		srcs := c.sources(as)
		as.rates = ratesByPlacement(srcs)
		as.total = robustSum(srcs, as.rates)
		as.dirty = false
		as.sums++
	}
	return &as.total
}

// othersPerGPU is the best rate per GPU the application's sources but
// job measured (bestPerGPU), kept until the application changes.
func (c *Collector) othersPerGPU(as *appState, js *jobState) float64 {
	c.appTotal(as)
	if js.perGPUFor != as.sums {
		js.perGPU, js.perGPUFor = bestPerGPU(c.sources(as), &js.m, as.rates), as.sums
	}
	return js.perGPU
}

// normalize is m sorted, with duplicate placements summed and invalid ones
// dropped; it shares no memory with m.
func normalize(m Measurements) Measurements {
	n := Measurements{Placements: make([]PlacementRate, 0, len(m.Placements))}
	n.Merge(m)
	if len(n.Placements) == 0 {
		n.Placements = nil
	}
	return n
}

// RestartSeconds returns the mean measured restart time of job, else of its
// application (its base and live jobs), and false when neither has one.
func (c *Collector) RestartSeconds(job, app string) (float64, bool) {
	if js := c.jobs[job]; js != nil {
		if s, ok := js.m.restartMean(); ok {
			return s, true
		}
	}
	if as := c.apps[app]; as != nil {
		return c.appTotal(as).restartMean()
	}
	return 0, false
}

// Fit sources, as Detail reports them.
const (
	SourceJob         = "job"
	SourceApplication = "application"
	SourceDefault     = "default"
)

// fitFor returns the fit Estimate uses for job and where it comes from.
func (c *Collector) fitFor(job, app string) (fit, string) {
	af := c.appFit(app)
	pr := prior{serial: DefaultSerial}
	if af.ok && af.counts >= 2 {
		pr.serial = af.serial
	}
	if af.ok && af.nodes {
		pr.penalty = af.penalty
	}
	if js := c.jobs[job]; js != nil {
		var perGPU float64
		if as := c.apps[js.app]; as != nil && len(js.m.Placements) > 0 {
			perGPU = c.othersPerGPU(as, js)
		}
		if key := (fitKey{pr, perGPU}); js.fitted == nil || js.fittedFor != key {
			// Placements far faster than the application's other jobs
			// are left out until confirmed (outliers).
			m, _ := outliers(&js.m, perGPU)
			f := fitMeasurements(m, pr)
			js.fitted, js.fittedFor = &f, key
		}
		if js.fitted.ok {
			return *js.fitted, SourceJob
		}
	}
	if af.ok {
		return af, SourceApplication
	}
	// Nothing known: Amdahl's law with the default serial fraction is a
	// safer prior than linear scaling, which would make an unseen job look
	// better than every measured one.
	return fit{serial: DefaultSerial}, SourceDefault
}

func (c *Collector) appFit(app string) fit {
	as := c.apps[app]
	if as == nil {
		return fit{}
	}
	if as.fitted == nil {
		f := fitMeasurements(c.appTotal(as), prior{serial: DefaultSerial})
		as.fitted = &f
	}
	return *as.fitted
}

// Estimate returns the speedup curve up to maxWorkers and the remaining
// time on one GPU for remainingWork. An unknown remaining time is -1; with
// nothing known the curve is Amdahl's law with DefaultSerial. The curve is
// for k workers on as few nodes as hold them (see SetGPUsPerNode).
func (c *Collector) Estimate(job, app string, remainingWork float64, maxWorkers int) model.Estimates {
	est := model.Estimates{RemainingSeconds: -1}
	f, _ := c.fitFor(job, app)
	if f.ok && remainingWork >= 0 {
		est.RemainingSeconds = remainingWork / f.rate1
	}
	if maxWorkers < 1 {
		maxWorkers = 1
	}
	est.Speedup = make([]float64, maxWorkers+1)
	for k := 1; k <= maxWorkers; k++ {
		est.Speedup[k] = float64(k) / f.cost(k, c.nodesFor(k))
	}
	est.RestartSeconds, _ = c.RestartSeconds(job, app)
	return est
}
