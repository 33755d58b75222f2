package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/estimate"
	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

// GPUType is the GPU type of the simulated cluster.
const GPUType = "sim-gpu"

// epoch0 is virtual time zero.
var epoch0 = time.Unix(0, 0).UTC()

func at(sec float64) time.Time { return epoch0.Add(nanos(sec)) }

// nanos is sec seconds in whole nanoseconds, the nearest, saturated at
// the range of a time.Duration (292 years) rather than wrapped.
func nanos(sec float64) time.Duration {
	ns := math.Round(sec * 1e9)
	switch {
	case ns >= math.MaxInt64 || math.IsNaN(ns):
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(ns)
}

// instant is a simulated time as the engine keeps it (see engine.clock
// and engine.now): nanoseconds since epoch0 and seconds.
type instant struct {
	clock time.Duration
	sec   float64
}

// never is later than any event.
var never = instant{clock: math.MaxInt64, sec: math.Inf(1)}

// timeAt is the instant of an event at sec seconds: a submission or a
// predicted completion.
func timeAt(sec float64) instant { return instant{clock: nanos(sec), sec: sec} }

// earlier returns the earlier of a and b in each unit. Both units rise
// together (nanos is monotonic), so this is the earlier event but for a
// due time within a nanosecond of another event, where it keeps the
// exact due time and the other event's seconds.
func earlier(a, b instant) instant {
	return instant{clock: min(a.clock, b.clock), sec: min(a.sec, b.sec)}
}

// Options configure one simulation run.
type Options struct {
	// Nodes nodes of GPUsPerNode GPUs each make the cluster, unless
	// NodeGroups gives nodes of several sizes (then both must be 0).
	Nodes       int
	GPUsPerNode int
	// NodeGroups, if not empty, are the cluster's nodes by size, named
	// node-000 onwards in this order.
	NodeGroups []NodeGroup
	// Interval > 0 runs in fixed-interval mode; 0 is event-driven.
	Interval time.Duration
	// RateLimit and Tick configure the core in event-driven mode
	// (scheduler defaults when zero).
	RateLimit time.Duration
	Tick      time.Duration
	// StartInterval is the core's least time between a cycle and a
	// limited one (scheduler.DefaultStartInterval when zero): a server
	// running N times faster than real time uses N times its default.
	StartInterval time.Duration
	// RestartCost is the time a job makes no progress after every new
	// placement; negative means none, zero means 30 s.
	RestartCost time.Duration
	// Estimator names what gives allocators their estimates: online
	// measurements fitted by Amdahl's law over worker count
	// (EstimatorWorkers, the default), or by a throughput model over
	// placement and batch size (EstimatorGoodput, the server's policy;
	// it needs measured profiles), or the true speedup and remaining
	// time (EstimatorOracle). See package estimate.
	Estimator EstimatorKind
	// AdaptiveBatch lets every job choose its global batch size on each
	// new placement and after each epoch, for the most estimated goodput
	// between its application's bounds, as the Pollux artifact runs
	// Pollux's jobs. It implies EstimatorGoodput.
	AdaptiveBatch bool
	// Allocator decides the GPUs; if nil, NewAllocator builds it.
	Allocator algorithm.Allocator
	// NewAllocator builds an instance of the algorithm: the run's
	// allocator when Allocator is nil, and, in a run with teams (Teamed)
	// that does not ignore its quotas, each team's and priority class's
	// own (algorithm.NewTeams).
	NewAllocator func() (algorithm.Allocator, error)
	// Quotas are the teams' quotas; a team of the workload that none
	// names has model.DefaultQuota. With quotas, or jobs of a team, the
	// run has teams: its allocator is NewAllocator's composed across
	// them (algorithm.NewTeams), and the record has each team's share of
	// the GPUs over time, its reclaims and each job's finish-time
	// fairness (report.TeamShare).
	Quotas []model.Quota
	// IgnoreQuotas runs a workload with teams on NewAllocator's (or
	// Allocator's) algorithm alone, as if the cluster had one owner, and
	// still records the teams as if their quotas held: the baseline that
	// shows what the quotas cost and what they change.
	IgnoreQuotas bool
	Placer       placement.Placer
	Models       *perfmodel.Set
	// MaxTime stops the run at this simulated time (default 365 days).
	MaxTime time.Duration
	// Progress, if set, is called with the fraction of jobs finished.
	Progress func(fraction float64)
	// Workload names the workload in the report.
	Workload string
}

// EstimatorKind names an estimator of the simulator (Options.Estimator).
type EstimatorKind string

// The simulator's estimators.
const (
	EstimatorWorkers EstimatorKind = "workers"
	EstimatorGoodput EstimatorKind = "goodput"
	EstimatorOracle  EstimatorKind = "oracle"
)

// EstimatorKinds lists the estimators, for help and errors.
func EstimatorKinds() []EstimatorKind {
	return []EstimatorKind{EstimatorWorkers, EstimatorGoodput, EstimatorOracle}
}

// stepModels reports whether jobs report step times to a goodput model.
func (o Options) stepModels() bool { return o.Estimator == EstimatorGoodput }

// DefaultRestartCost is the time a re-placed job spends restarting.
const DefaultRestartCost = perfmodel.RestartCost

// restartCost is the time a job makes no progress after a placement.
func (o Options) restartCost() time.Duration {
	switch {
	case o.RestartCost == 0:
		return DefaultRestartCost
	case o.RestartCost < 0:
		return 0
	}
	return o.RestartCost
}

type simJob struct {
	JobProgress
	w   workload.Job
	cat string // estimate category, see category

	nodes int

	start      float64
	restarts   int
	migrations int

	// Goodput estimates (EstimatorGoodput): the job's measured profile,
	// its batch bounds and the configurations run since the last
	// estimate.
	prof    *perfmodel.Profiled
	bounds  goodput.Bounds
	pending []goodput.Obs
	// measureFrom is the first time the job's configuration on its
	// placement is measured (see ReportEvery).
	measureFrom float64
}

// ReportEvery is how often a job's configuration is measured: a
// simulated job reports what it runs every ReportEvery of the cluster's
// clock on the server (livecluster.ReportEvery), and the server measures
// the configuration of each report but the first two of a placement (the
// one at its restart's end, and the warm-up after it). The simulator
// measures the same instants, multiples of ReportEvery from its start,
// so that its throughput model is fitted from the configurations the
// server's is: an adaptive job changes its batch at every epoch, and a
// batch run between two reports is measured by neither.
const ReportEvery = 10 * time.Second

// firstMeasured is when the configuration of a job placed at now, which
// restarts for restart seconds, is first measured: the second report
// instant after its restart's end.
func firstMeasured(now, restart float64) float64 {
	every := ReportEvery.Seconds()
	return (math.Floor((now+restart)/every) + 2) * every
}

// category groups jobs whose history predicts each other's: the same
// application at the same batch size (the original Voda keys its job
// information by such a category too).
func (j *simJob) category() string { return j.cat }

// step advances a running job by dt seconds from now. With round set,
// epoch boundaries fall on whole seconds as in the Pollux artifact. With
// rechoose set, the job chooses its batch again after each epoch.
func (j *simJob) step(now, dt float64, round bool, rechoose func(*simJob) error) error {
	var h stepHooks
	if j.prof != nil && now+dt > j.measureFrom {
		h.span = j.sample
	}
	if rechoose != nil {
		h.epochEnd = func() error { return rechoose(j) }
	}
	return j.JobProgress.step(now, dt, round, h)
}

// sample measures the configuration the job runs from from to to if a
// report instant measured falls within: at or after measureFrom, on the
// ReportEvery grid.
func (j *simJob) sample(from, to float64) error {
	every := ReportEvery.Seconds()
	at := max(j.measureFrom, math.Ceil(from/every-1e-9)*every)
	if at >= to {
		return nil
	}
	return j.measure()
}

// measure records the configuration the job runs, with its true time per
// step, for the next estimate: what a job's progress reports carry.
func (j *simJob) measure() error {
	_, atomic, accum, sec, err := j.prof.Iteration(j.place, j.batch)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.w.Name, err)
	}
	o := goodput.Obs{Nodes: j.nodes, Replicas: j.workers(), Atomic: atomic, Accum: accum, Iteration: sec}
	for _, p := range j.pending {
		if p == o {
			return nil
		}
	}
	j.pending = append(j.pending, o)
	return nil
}

// gradStats are the gradient statistics the job measures: at its current
// batch size and epoch.
func (j *simJob) gradStats() goodput.GradStats {
	sqr, vr := j.prof.GradStats(j.batch, j.epoch)
	return goodput.GradStats{Sqr: sqr, Var: vr}
}

// replayPort is the replay's scheduler.Port: it applies the core's
// actions to the simulated jobs (placement, restarts, migrations) and
// records each change of a job's GPU count. Unlike the cluster types of
// the live path and of livecluster, it keeps no node state: the core
// owns the nodes, and the port only checks that their names exist.
type replayPort struct {
	jobs        map[string]*simJob
	nodeIndex   map[string]int
	now         float64
	restartCost float64
	changes     []report.Change
	scratch     []int // a placement being read
	// placed, if set, is called after a job gets a non-empty placement.
	placed func(*simJob) error
}

// Apply implements scheduler.Port.
func (p *replayPort) Apply(_ context.Context, a scheduler.Action) error {
	j, ok := p.jobs[a.Job]
	if !ok {
		return fmt.Errorf("simulated cluster: unknown job %s", a.Job)
	}
	p.scratch = p.scratch[:0]
	for _, nw := range a.To {
		if _, ok := p.nodeIndex[nw.Node]; !ok {
			return fmt.Errorf("simulated cluster: job %s: unknown node %s", a.Job, nw.Node)
		}
		p.scratch = append(p.scratch, nw.Workers*j.w.PerWorker()) // the models take GPUs per node
	}
	j.Place(p.scratch, p.restartCost)
	j.nodes = len(a.To)
	j.migrations += a.Moved
	if len(j.place) > 0 {
		if j.start < 0 {
			j.start = p.now
		} else {
			j.restarts++
		}
		if p.placed != nil {
			if err := p.placed(j); err != nil {
				return err
			}
		}
	}
	p.changes = append(p.changes, report.Change{Time: p.now, Job: a.Job, GPUs: j.workers()})
	return nil
}

// Run simulates the workload and returns its record.
func Run(ctx context.Context, jobs []workload.Job, opts Options) (*report.Run, error) {
	wallStart := time.Now()
	cl, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	teamed := Teamed(jobs, opts)
	if err := checkQuotas(opts.Quotas); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if opts.Allocator == nil && opts.NewAllocator != nil {
		if teamed && !opts.IgnoreQuotas {
			opts.Allocator, err = algorithm.NewTeams(opts.NewAllocator, opts.Quotas)
		} else {
			opts.Allocator, err = opts.NewAllocator()
		}
		if err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
	} else if teamed && !opts.IgnoreQuotas {
		return nil, errors.New("simulate: a run with teams builds an allocator per team: give NewAllocator, not Allocator")
	}
	if opts.Allocator == nil || opts.Placer == nil || opts.Models == nil {
		return nil, errors.New("simulate: allocator, placer and models are required")
	}
	switch opts.Estimator {
	case "":
		opts.Estimator = EstimatorWorkers
	case EstimatorWorkers, EstimatorGoodput, EstimatorOracle:
	default:
		return nil, fmt.Errorf("simulate: unknown estimator %q (known: %v)", opts.Estimator, EstimatorKinds())
	}
	if opts.AdaptiveBatch {
		if opts.Estimator == EstimatorOracle {
			return nil, errors.New("simulate: --oracle gives fixed-batch curves; it cannot be combined with --adaptive-batch")
		}
		opts.Estimator = EstimatorGoodput
	}
	if len(jobs) == 0 {
		return nil, errors.New("simulate: empty workload")
	}
	maxTime := opts.MaxTime
	if maxTime <= 0 {
		maxTime = 365 * 24 * time.Hour
	}
	port := &replayPort{jobs: map[string]*simJob{}, nodeIndex: map[string]int{}, restartCost: opts.restartCost().Seconds()}
	sjobs := make([]*simJob, len(jobs))
	for i, w := range jobs {
		j, err := newSimJob(w, opts, cl)
		if err != nil {
			return nil, err
		}
		if _, dup := port.jobs[w.Name]; dup {
			return nil, fmt.Errorf("simulate: job %s appears twice", w.Name)
		}
		sjobs[i] = j
		port.jobs[w.Name] = j
	}

	cfg := scheduler.Config{
		GPUType:       GPUType,
		Allocator:     opts.Allocator,
		Placer:        opts.Placer,
		Port:          port,
		RateLimit:     opts.RateLimit,
		Tick:          opts.Tick,
		StartInterval: opts.StartInterval,
		// Placement times are only reported, never used in a decision:
		// the wall clock leaves the simulation deterministic apart from
		// the reported times themselves.
		Stopwatch: clock.RealClock{},
	}
	core, err := scheduler.NewCore(cfg)
	if err != nil {
		return nil, err
	}
	for _, g := range cl.groups {
		for range g.Nodes {
			i := len(port.nodeIndex)
			name := fmt.Sprintf("node-%03d", i)
			port.nodeIndex[name] = i
			if err := core.AddNode(epoch0, model.Node{Name: name, GPUs: g.GPUs}); err != nil {
				return nil, err
			}
		}
	}

	e := &engine{opts: opts, cl: cl, core: core, port: port, jobs: sjobs, round: opts.Interval > 0}
	if teamed {
		e.teams = newTeamTracker(jobs, opts.Quotas, cl.total)
		e.teamSpecs = !opts.IgnoreQuotas
	}
	if opts.Estimator == EstimatorOracle {
		e.est = &oracle{cl: cl, jobs: port.jobs, cache: map[oracleKey]oracleCurve{}}
	} else {
		e.online = estimate.NewOnline(estimate.Options{StepModels: opts.stepModels()})
		// The online estimates' curves are for k workers on as few nodes
		// as hold them, and one size of node says how many that is: the
		// largest, as the server's service tells its estimator
		// (Service.mostGPUs), since the placers pack a job onto the
		// largest free room first.
		e.online.SetGPUsPerNode(cl.largest())
		e.est = e.online
	}
	port.placed = e.placed
	if opts.Interval > 0 {
		err = e.runInterval(ctx, opts.Interval, maxTime)
	} else {
		err = e.runEvents(ctx, maxTime)
	}
	if err != nil {
		return nil, err
	}
	return e.record(time.Since(wallStart).Seconds())
}

// JobSettings are what the simulator runs a workload's job with, for
// replaying the workload elsewhere (a server): its performance model,
// worker range, priority, epochs and initial global batch size.
type JobSettings struct {
	Name, App                         string
	Submit                            float64
	MinWorkers, MaxWorkers, Requested int
	// GPUsPerWorker is G, 0 for one.
	GPUsPerWorker           int
	Priority, Epochs, Batch int
}

// Settings returns the settings Run would give each of jobs under opts
// (its Models, cluster, Estimator and AdaptiveBatch count).
func Settings(jobs []workload.Job, opts Options) ([]JobSettings, error) {
	if opts.Models == nil {
		return nil, errors.New("simulate: models are required")
	}
	cl, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	if opts.AdaptiveBatch {
		opts.Estimator = EstimatorGoodput
	}
	out := make([]JobSettings, len(jobs))
	for i, w := range jobs {
		j, err := newSimJob(w, opts, cl)
		if err != nil {
			return nil, err
		}
		out[i] = JobSettings{Name: w.Name, App: w.App, Submit: w.Submit,
			MinWorkers: j.w.MinWorkers, MaxWorkers: j.w.MaxWorkers, Requested: j.w.Requested, GPUsPerWorker: j.w.GPUsPerWorker,
			Priority: w.Priority, Epochs: j.epochs, Batch: j.batch}
	}
	return out, nil
}

func newSimJob(w workload.Job, opts Options, cl *cluster) (*simJob, error) {
	m, err := opts.Models.Get(w.App)
	if err != nil {
		return nil, fmt.Errorf("simulate: job %s: %w", w.Name, err)
	}
	j := &simJob{w: w, start: -1}
	j.init(w.Name, m, w.BatchSize, w.Epochs)
	g := w.PerWorker()
	j.cat = estimate.AppKey("", fmt.Sprintf("%s/%d", w.App, j.batch), g)
	if w.Duration > 0 {
		// Work such that the job takes Duration at its requested count
		// packed onto as few nodes as possible (restarts excluded).
		r, err := m.Rate(cl.pack(w.Requested, g), j.batch, 0)
		if err != nil || !(r > 0) {
			return nil, fmt.Errorf("simulate: job %s: no rate for %d workers: %v", w.Name, w.Requested, err)
		}
		j.perEpoch = w.Duration * r / float64(j.epochs)
	}
	// Widen the range to what the model supports when the workload gave
	// none: gradient accumulation keeps the global batch at any count up
	// to the model's limit, and the cluster's nodes hold so many workers
	// of G GPUs. A count past those a placer would leave unplaced whole.
	usable := cl.workers(g) * g
	if mw := min(m.MaxWorkers(j.batch), usable) / g; j.w.WidenMax && mw > j.w.MaxWorkers {
		j.w.MaxWorkers = mw
	}
	j.w.MaxWorkers = max(j.w.MaxWorkers, j.w.Requested, j.w.MinWorkers)
	// The algorithms count GPUs, not where workers fit: a job of G > 1
	// given more workers than the nodes hold is left unplaced whole, and
	// would wait for ever though fewer would run (on 4x8,8x4 a job asking
	// for six workers of 8). Its requested and largest counts stop at what
	// the nodes hold, never below its minimum: a job whose minimum they do
	// not hold waits. With one GPU a worker the algorithms never hand out
	// more than the cluster's GPUs, and the range stays as the workload
	// gives it.
	if fit := cl.workers(g); g > 1 {
		j.w.MaxWorkers = max(min(j.w.MaxWorkers, fit), j.w.MinWorkers)
		j.w.Requested = max(min(j.w.Requested, fit), j.w.MinWorkers)
	}
	if opts.stepModels() {
		if err := j.useGoodput(opts, usable); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// useGoodput sets the job up for goodput estimates: its bounds (the
// application's, or its fixed batch), and with adaptive batches the most
// workers its application can use, up to usable GPUs (in whole workers).
func (j *simJob) useGoodput(opts Options, usable int) error {
	prof, ok := j.m.(*perfmodel.Profiled)
	if !ok {
		return fmt.Errorf("simulate: job %s: goodput estimates and adaptive batches need a measured profile (--profiles), not the %s model", j.w.Name, j.m.Name())
	}
	j.prof = prof
	initBatch, maxBatch, minLocal, maxLocal := prof.BatchLimits()
	// The bounds are what a job's reports declare; how the profile splits
	// a batch into local batches and accumulation steps is the job's own,
	// which the estimator learns from the step times, as the server's does.
	j.bounds = goodput.Bounds{InitBatch: initBatch, MaxBatch: maxBatch, MinLocal: minLocal, MaxLocal: maxLocal}
	if !opts.AdaptiveBatch {
		j.bounds.Fixed = j.batch
		return nil
	}
	if b, pinned := prof.Pinned(); pinned {
		j.batch, j.bounds.Fixed = b, b
		j.w.MinWorkers, j.w.MaxWorkers, j.w.Requested = 1, 1, 1
		return nil
	}
	j.batch = initBatch
	j.w.MaxWorkers = max(j.w.MaxWorkers, min(j.bounds.MaxReplicas(), 64, usable)/j.w.PerWorker())
	return nil
}

type engine struct {
	opts Options
	cl   *cluster
	core *scheduler.Core
	port *replayPort
	jobs []*simJob // in workload order
	// live holds the jobs submitted and not yet handed back to the core
	// as finished, in workload order: the hot loops visit only these, so
	// an event costs what is running and waiting, not the whole workload.
	live  []*simJob
	round bool
	// est gives the estimates: online, or the oracle.
	est      estimate.Estimator
	online   *estimate.Online // nil with the oracle
	next     int              // next job to arrive
	finished int
	// clock is the simulated time in nanoseconds since epoch0: it orders
	// events, is what the core is told, and is compared exactly with the
	// core's due time. A float64 of seconds resolves only 1.86 ns past
	// 2^23 s (97 days): a due time read back from one could fall a
	// nanosecond short of itself, and no cycle would ever run.
	clock time.Duration
	// now is the jobs' time in seconds, clock to within a float64's
	// resolution (1.86 ns past 97 days): the time of the latest event as
	// the jobs' arithmetic computes it (a completion's predicted finish, a
	// submission time). A job advances to its predicted finish exactly,
	// whatever nanosecond clock rounds it to, and its arithmetic needs
	// only relative precision.
	now float64
	// Per-cycle placement metrics, summed over cycles.
	cycles          int
	spreadJobCycles int
	// stranded is the last cycle's CycleReport.Stranded, and
	// strandedSeconds its integral over time (GPU-seconds).
	stranded        int
	strandedSeconds float64
	placeTotal      time.Duration
	placeMax        time.Duration
	// teams follows the teams of a run with teams (nil without), and
	// teamSpecs says the core is told each job's team.
	teams     *teamTracker
	teamSpecs bool
}

func (e *engine) spec(j *simJob) model.JobSpec {
	return model.JobSpec{
		Name:             j.w.Name,
		GPUType:          GPUType,
		MinWorkers:       j.w.MinWorkers,
		MaxWorkers:       j.w.MaxWorkers,
		RequestedWorkers: j.w.Requested,
		GPUsPerWorker:    j.w.GPUsPerWorker,
		Priority:         j.w.Priority,
		Epochs:           j.epochs,
		SubmitTime:       at(j.w.Submit),
		Team:             e.team(j),
	}
}

// team is the team the core is told a job belongs to: its own when the
// run's quotas hold, else none.
func (e *engine) team(j *simJob) string {
	if !e.teamSpecs {
		return ""
	}
	return j.w.Team
}

// advance moves every running job from e.now to t.
func (e *engine) advance(t instant) error {
	if t.clock < e.clock || t.sec < e.now {
		return fmt.Errorf("simulate: time went backwards from %v (%g s) to %v (%g s)", e.clock, e.now, t.clock, t.sec)
	}
	dt := t.sec - e.now
	e.strandedSeconds += float64(e.stranded) * dt
	if e.teams != nil {
		e.teams.elapse(dt)
	}
	for _, j := range e.live {
		if !j.done {
			if err := j.step(e.now, dt, e.round, e.rechoose); err != nil {
				return fmt.Errorf("simulate: %w", err)
			}
		}
	}
	e.clock, e.now = t.clock, t.sec
	e.port.now = t.sec
	return nil
}

// deliver tells the core about completions and arrivals up to now, and
// reports whether there were any.
func (e *engine) deliver() (bool, error) {
	now := epoch0.Add(e.clock)
	before := e.finished + e.next
	kept := e.live[:0]
	for _, j := range e.live {
		if !j.done {
			kept = append(kept, j)
			continue
		}
		e.finished++
		if _, err := e.core.Finish(now, j.w.Name, model.StatusCompleted); err != nil {
			return false, err
		}
		e.port.changes = append(e.port.changes, report.Change{Time: j.end, Job: j.w.Name, GPUs: 0})
		e.flush(j, true)
		e.est.Forget(j.w.Name)
	}
	clear(e.live[len(kept):])
	e.live = kept
	for e.next < len(e.jobs) && e.jobs[e.next].w.Submit <= e.now {
		j := e.jobs[e.next]
		e.next++
		e.live = append(e.live, j)
		if err := e.core.Submit(now, e.spec(j)); err != nil {
			return false, fmt.Errorf("simulate: %w", err)
		}
		if e.teams != nil {
			e.teams.arrive(j.w.Team, j.w.Submit)
		}
	}
	if err := e.observeTeams(); err != nil {
		return false, err
	}
	if e.opts.Progress != nil {
		e.opts.Progress(float64(e.finished) / float64(len(e.jobs)))
	}
	return e.finished+e.next != before, nil
}

// estimate hands every live job's estimates to the core, after handing
// the estimator what each measured since the last time.
func (e *engine) estimate() error {
	for _, j := range e.live {
		e.flush(j, false)
		if err := e.core.SetEstimates(j.w.Name, e.est.Estimate(e.job(j))); err != nil {
			return err
		}
	}
	return nil
}

// job is what the estimator is told of a job: what its reports would
// say, as estimate.FromReports reads them on the server. A job with a
// measured profile that has not run yet is estimated as the server
// estimates a job that has not reported (estimate.Online.Unreported: what
// its application's jobs declared); once it runs, from its epochs done
// and its work so far (its reports' samples per epoch), its bounds and
// its gradient statistics now.
func (e *engine) job(j *simJob) estimate.Job {
	remaining := j.epochProgress(j.epochs) - j.progress
	ej := estimate.Job{Name: j.w.Name, App: j.category(), MaxWorkers: e.curveLen(j), Workers: j.workers(), Remaining: remaining, RemainingSteps: -1}
	if j.prof == nil {
		return ej
	}
	// Goodput pools a job with its application, whatever its batch: the
	// model covers batch sizes.
	app := estimate.AppKey("", j.m.Name(), j.w.PerWorker())
	if j.start < 0 {
		u := e.online.Unreported(e.spec(j), app, e.curveLen(j))
		u.Workers = j.workers()
		return u
	}
	ej.App, ej.Bounds, ej.Grad = app, j.bounds, j.gradStats()
	ej.Remaining = float64(j.epochs) - j.EpochsDone()
	if done := j.EpochsDone(); done > 0 {
		ej.RemainingSteps = ej.Remaining * j.progress / done
	}
	return ej
}

// curveLen is how far a job's speedup curve goes, in GPUs: its maximum
// workers' GPUs, but never past the cluster's GPUs, so that a job asking
// for 2^31 workers costs no more memory than one asking for the whole
// cluster.
func (e *engine) curveLen(j *simJob) int {
	return max(min(j.w.MaxWorkers*j.w.PerWorker(), e.cl.total), 1)
}

// oracle is the estimator that knows each job's true performance: the
// speedup of its workers packed onto as few nodes as possible (the
// largest first), and the remaining time on one GPU, at its current batch
// size and epoch.
type oracle struct {
	cl    *cluster
	jobs  map[string]*simJob
	cache map[oracleKey]oracleCurve
	err   error // the first model error, which Run returns
}

// Estimate implements estimate.Estimator.
func (o *oracle) Estimate(ej estimate.Job) model.Estimates {
	j := o.jobs[ej.Name]
	n := ej.MaxWorkers
	key := oracleKey{j.m.Name(), j.batch, j.epoch, n}
	c, ok := o.cache[key]
	if !ok {
		r1, err := j.m.Rate([]int{1}, j.batch, j.epoch)
		if err != nil {
			o.err = cmp.Or(o.err, err)
			return model.Estimates{RemainingSeconds: -1}
		}
		c = oracleCurve{rate1: r1, speedup: make([]float64, n+1)}
		for k := 1; k <= n; k++ {
			r, err := j.m.Rate(o.cl.pack(k, 1), j.batch, j.epoch)
			if err != nil {
				o.err = cmp.Or(o.err, err)
				return model.Estimates{RemainingSeconds: -1}
			}
			c.speedup[k] = r / r1
		}
		o.cache[key] = c
	}
	// The core copies the curve, so sharing it between jobs is safe.
	return model.Estimates{RemainingSeconds: ej.Remaining / c.rate1, Speedup: c.speedup}
}

// Forget implements estimate.Estimator: the truth needs no memory.
func (o *oracle) Forget(string) {}

// oracleKey identifies a true speedup curve: it depends on the model, the
// batch size and the epoch (statistical efficiency), and its length.
type oracleKey struct {
	model             string
	batch, epoch, max int
}

type oracleCurve struct {
	rate1   float64
	speedup []float64
}

func (e *engine) cycle(ctx context.Context) error {
	if err := e.estimate(); err != nil {
		return err
	}
	if o, ok := e.est.(*oracle); ok && o.err != nil {
		return fmt.Errorf("simulate: %w", o.err)
	}
	rep, err := e.core.Cycle(ctx, epoch0.Add(e.clock))
	if err != nil {
		return fmt.Errorf("simulate at %.0f s: %w", e.now, err)
	}
	if err := e.observeTeams(); err != nil {
		return err
	}
	e.cycles++
	e.spreadJobCycles += rep.Spread
	e.stranded = rep.Stranded
	e.placeTotal += rep.PlaceDuration
	e.placeMax = max(e.placeMax, rep.PlaceDuration)
	return nil
}

// observeTeams has the team tracker, if any, take the teams' state now.
func (e *engine) observeTeams() error {
	if e.teams == nil {
		return nil
	}
	return e.teams.observe(e.now, e.live)
}

func (e *engine) allDone() bool { return e.finished == len(e.jobs) }

// stuck reports whether nothing can change any more: no arrivals left, no
// job running, and the last cycle placed nothing.
func (e *engine) stuck() bool {
	if e.next < len(e.jobs) {
		return false
	}
	for _, j := range e.live {
		if j.workers() > 0 {
			return false
		}
	}
	return !e.core.Dirty()
}

func (e *engine) runInterval(ctx context.Context, interval, maxTime time.Duration) error {
	for !e.allDone() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.clock >= maxTime {
			break
		}
		t := e.clock + interval
		if err := e.advance(instant{clock: t, sec: t.Seconds()}); err != nil {
			return err
		}
		if _, err := e.deliver(); err != nil {
			return err
		}
		if err := e.cycle(ctx); err != nil {
			return err
		}
		if e.stuck() && !e.allDone() {
			break
		}
	}
	return nil
}

// maxIdleCycles is how many iterations in a row of the event loop may run
// a cycle and nothing else at one instant. One is ordinary: the run's
// first cycle, at time zero, after the submissions there were delivered.
// A cycle leaves the core due later (a tick, the rate limit or a failed
// cycle's backoff on), so a few in a row mean it stays due whatever it
// does, and the run would never end.
const maxIdleCycles = 3

func (e *engine) runEvents(ctx context.Context, maxTime time.Duration) error {
	if _, err := e.deliver(); err != nil {
		return err
	}
	idle := 0 // iterations in a row that neither moved time nor delivered
	for !e.allDone() {
		if err := ctx.Err(); err != nil {
			return err
		}
		next, err := e.nextEvent()
		if err != nil {
			return err
		}
		if next.clock >= maxTime {
			break
		}
		moved := next != instant{clock: e.clock, sec: e.now}
		if err := e.advance(next); err != nil {
			return err
		}
		// A completion predicted for now may miss by rounding error.
		for _, j := range e.live {
			j.Finish(e.now)
		}
		delivered, err := e.deliver()
		if err != nil {
			return err
		}
		cycled := false
		if due, ok := e.core.Due(); ok && due.Sub(epoch0) <= e.clock {
			if err := e.cycle(ctx); err != nil {
				return err
			}
			cycled = true
		}
		// Every iteration must move time or change something, or the
		// next would repeat it forever: a stall is a defect, reported.
		if moved || delivered {
			idle = 0
		} else {
			idle++
			if !cycled || idle > maxIdleCycles {
				return fmt.Errorf("simulate: stalled at %v (%g s): %d iterations in a row at one time delivered nothing (cycled: %v)", e.clock, e.now, idle, cycled)
			}
		}
		if e.stuck() && !e.allDone() {
			if _, ok := e.core.Due(); !ok {
				break
			}
			// Only the tick is left: if the last cycle could not start
			// anything, nothing will change.
			if e.noneCanRun() {
				break
			}
		}
	}
	return nil
}

// nextEvent returns the earliest of the next arrival, the running jobs'
// predicted completions and the core's due time (never before now), or
// never when there is none.
func (e *engine) nextEvent() (instant, error) {
	next := never
	if e.next < len(e.jobs) {
		next = timeAt(e.jobs[e.next].w.Submit)
	}
	for _, j := range e.live {
		if j.workers() > 0 {
			d, err := j.FinishIn()
			if err != nil {
				return never, fmt.Errorf("simulate: %w", err)
			}
			if !(d >= 0) {
				// NaN orders before nothing, and a negative time is past.
				return never, fmt.Errorf("simulate: job %s: model %s predicts its finish in %g s", j.w.Name, j.m.Name(), d)
			}
			if !math.IsInf(d, 1) {
				next = earlier(next, timeAt(e.now+d))
			}
		}
	}
	if due, ok := e.core.Due(); ok {
		d := due.Sub(epoch0)
		next = earlier(next, instant{clock: max(d, e.clock), sec: max(d.Seconds(), e.now)})
	}
	// After a due time that float64 seconds fall short of, now in seconds
	// is up to a nanosecond before clock, and an event predicted from it
	// may round to before clock: it happens now, not in the past.
	next.clock = max(next.clock, e.clock)
	return next, nil
}

// noneCanRun reports whether every waiting job needs more workers than
// the cluster's nodes hold: of one GPU, more than its GPUs; of G GPUs,
// more than its nodes of at least G GPUs hold whole.
func (e *engine) noneCanRun() bool {
	for _, j := range e.live {
		if j.w.MinWorkers <= e.cl.workers(j.w.PerWorker()) {
			return false
		}
	}
	return true
}

func (e *engine) record(wall float64) (*report.Run, error) {
	run := &report.Run{
		Algorithm:          e.opts.Allocator.Name(),
		Placer:             e.opts.Placer.Name(),
		Workload:           e.opts.Workload,
		GPUs:               e.cl.total,
		Cluster:            e.cl.String(),
		Changes:            e.port.changes,
		EndTime:            e.now,
		WallSeconds:        wall,
		Cycles:             e.cycles,
		SpreadJobCycles:    e.spreadJobCycles,
		StrandedGPUSeconds: e.strandedSeconds,
		PlaceTotal:         e.placeTotal,
		PlaceMax:           e.placeMax,
	}
	if e.online != nil && e.opts.stepModels() {
		for _, a := range e.online.Accuracy() {
			run.Estimator = append(run.Estimator, report.EstimatorError{
				App:           a.App,
				NewPlacements: a.NewPlacement.N, NewPlacementMeanErr: a.NewPlacement.Mean(), NewPlacementMaxErr: a.NewPlacement.Max,
				NewBatches: a.NewBatch.N, NewBatchMeanErr: a.NewBatch.Mean(), NewBatchMaxErr: a.NewBatch.Max,
			})
		}
	}
	for _, j := range e.jobs {
		r := report.JobResult{
			Name: j.w.Name, App: j.w.App,
			Submit: j.w.Submit, Start: j.start, End: j.end, Done: j.done,
			MinWorkers: j.w.MinWorkers, MaxWorkers: j.w.MaxWorkers, Requested: j.w.Requested,
			Restarts: j.restarts, Migrations: j.migrations, GPUSeconds: j.gpuSeconds,
		}
		run.Jobs = append(run.Jobs, r)
	}
	if e.teams == nil {
		return run, nil
	}
	run.Teams, run.Reclaims = e.teams.record(e.now)
	best := map[aloneKey]float64{}
	for i, j := range e.jobs {
		alone, err := e.aloneJCT(j, len(run.Teams), best)
		if err != nil {
			return nil, err
		}
		run.Jobs[i].Team, run.Jobs[i].AloneJCT = j.w.Team, alone
	}
	return run, nil
}

func sumInts(p []int) int {
	s := 0
	for _, v := range p {
		s += v
	}
	return s
}
