package livecluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/sim"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
)

// DefaultModel is the performance model of jobs that name none.
const DefaultModel = "amdahl"

// DefaultRestartCost is the time a job makes no progress after each new
// placement (an elastic restart from its last checkpoint); the same as the
// trace simulator's.
const DefaultRestartCost = perfmodel.RestartCost

// Options configure a SimPool.
type Options struct {
	GPUType     string
	Nodes       int
	GPUsPerNode int
	// More adds nodes of other sizes after the Nodes of GPUsPerNode: one
	// GPU type's nodes need not all be alike (4 and 8 GPUs).
	More []NodeSize
	// RestartCost: zero means DefaultRestartCost, negative none.
	RestartCost time.Duration
	// Models are the performance models jobs may name: nil means the
	// built-in parametric ones (perfmodel.Load("")); perfmodel.Load(DIR)
	// adds the measured profiles of `voda server --profiles DIR`.
	Models *perfmodel.Set
	Clock  clock.Clock
	Logger *slog.Logger
}

// NodeSize is a count of nodes of one size.
type NodeSize struct{ Nodes, GPUs int }

type job struct {
	name, app string
	perWorker int // GPUs a worker
	// ended is when the job's work was done (zero while it is not).
	ended time.Time
	p     *sim.JobProgress
	// prof is the job's measured profile (nil for a parametric model);
	// bounds its batch bounds, adaptive when the job lets Voda choose its
	// batch size.
	prof   *perfmodel.Profiled
	bounds goodput.Bounds
	last   time.Time // progress is computed up to here
	steps  float64   // optimizer steps done (profiled jobs)
	// gen counts the job's placements: each starts a new generation of
	// its (simulated) training processes.
	gen int
	// advice is the batch size the last reply advised, for adviceWorkers
	// workers (0: none); fresh says the job has not yet taken advice in
	// its current generation, which it does at its first reply.
	advice        int
	adviceWorkers int
	fresh         bool
	// reportedGen is the last generation a report was sent of.
	reportedGen int
}

func (j *job) workers() int {
	n := 0
	for _, w := range j.p.Placement() {
		n += w
	}
	return n
}

// SimPool is a simulated cluster of one GPU type. It is safe for
// concurrent use.
type SimPool struct {
	opts    Options
	clk     clock.Clock
	log     *slog.Logger
	restart time.Duration
	models  *perfmodel.Set
	nodes   []model.Node
	nodeIdx map[string]int
	gpus    int // on all nodes

	// boot tells this process's generations from an earlier one's: a
	// restarted cluster's jobs are new incarnations.
	boot string

	mu   sync.Mutex
	jobs map[string]*job
	wake chan struct{}
}

var _ scheduler.Port = (*SimPool)(nil)

// New returns a cluster of opts.Nodes nodes with opts.GPUsPerNode GPUs
// each, then those of opts.More, named <gpu-type>-node-NN in that order.
func New(opts Options) (*SimPool, error) {
	if opts.GPUType == "" {
		return nil, fmt.Errorf("simulated cluster: empty GPU type")
	}
	sizes := append([]NodeSize{{opts.Nodes, opts.GPUsPerNode}}, opts.More...)
	for _, s := range sizes {
		if s.Nodes < 1 || s.GPUs < 1 {
			return nil, fmt.Errorf("simulated cluster %s: need at least one node with one GPU (got %d x %d)", opts.GPUType, s.Nodes, s.GPUs)
		}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	restart := opts.RestartCost
	switch {
	case restart == 0:
		restart = DefaultRestartCost
	case restart < 0:
		restart = 0
	}
	models := opts.Models
	if models == nil {
		var err error
		if models, err = perfmodel.Load(""); err != nil {
			return nil, fmt.Errorf("simulated cluster %s: %w", opts.GPUType, err)
		}
	}
	c := &SimPool{
		opts: opts, clk: opts.Clock, log: log.With("gpuType", opts.GPUType), restart: restart,
		models:  models,
		nodeIdx: map[string]int{},
		jobs:    map[string]*job{},
		wake:    make(chan struct{}, 1),
		boot:    strconv.FormatInt(opts.Clock.Now().UnixNano(), 36),
	}
	for _, s := range sizes {
		for range s.Nodes {
			i := len(c.nodes)
			n := model.Node{Name: fmt.Sprintf("%s-node-%02d", opts.GPUType, i), GPUs: s.GPUs, Index: i}
			c.nodes = append(c.nodes, n)
			c.nodeIdx[n.Name] = i
			c.gpus += s.GPUs
		}
	}
	return c, nil
}

// Models returns the names of the built-in performance models jobs may
// use when the cluster has no measured profiles.
func Models() []string {
	var names []string
	for _, m := range perfmodel.BuiltinParametric() {
		names = append(names, m.App)
	}
	sort.Strings(names)
	return names
}

// Nodes returns the cluster's nodes.
func (c *SimPool) Nodes() []model.Node { return append([]model.Node(nil), c.nodes...) }

// Track makes a job known with its work: epochs of its model (the model's
// default when epochs <= 0), of which the fraction progress is done, and
// its workers' GPUs (perWorker, at least 1): the model runs on GPUs.
// Tracking a job already known updates nothing and is not an error.
//
// A job of a measured profile trains as the Pollux artifact's adaptive
// jobs do: it declares its application's batch bounds and starts at the
// initial batch, unless its application is pinned to one batch size
// (perfmodel.Profiled.Pinned).
func (c *SimPool) Track(name, app string, epochs, perWorker int, progress float64) error {
	if app == "" {
		app = DefaultModel
	}
	m, err := c.models.Get(app)
	if err != nil {
		return fmt.Errorf("simulated cluster: job %s: unknown model %q: %w", name, app, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.jobs[name]; ok {
		return nil
	}
	j := &job{name: name, app: app, last: c.clk.Now(), perWorker: max(perWorker, 1)}
	batch := 0
	if prof, ok := m.(*perfmodel.Profiled); ok {
		j.prof = prof
		initBatch, maxBatch, minLocal, maxLocal := prof.BatchLimits()
		j.bounds = goodput.Bounds{InitBatch: initBatch, MaxBatch: maxBatch, MinLocal: minLocal, MaxLocal: maxLocal}
		batch = initBatch
		if b, pinned := prof.Pinned(); pinned {
			batch, j.bounds.Fixed = b, b
		}
	}
	j.p = sim.NewJobProgress(name, m, batch, epochs)
	j.p.Resume(progress)
	c.jobs[name] = j
	return nil
}

// Forget drops a job (after it finished or was deleted).
func (c *SimPool) Forget(name string) {
	c.mu.Lock()
	delete(c.jobs, name)
	c.mu.Unlock()
	c.signal()
}

// Apply implements scheduler.Port: the job's workers move to a.To; if it
// keeps any, it restarts and makes no progress for the restart cost. An
// adaptive job restarts at its batch as far as its new placement allows
// (goodput.Bounds.Clamp: at first, the smallest it allows) until the reply
// to its first report there advises one, as the trace simulator's jobs
// do.
func (c *SimPool) Apply(_ context.Context, a scheduler.Action) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[a.Job]
	if !ok {
		return fmt.Errorf("simulated cluster %s: unknown job %s", c.opts.GPUType, a.Job)
	}
	place := make([]int, 0, len(a.To))
	for _, nw := range a.To {
		if _, ok := c.nodeIdx[nw.Node]; !ok {
			return fmt.Errorf("simulated cluster %s: job %s: unknown node %s", c.opts.GPUType, a.Job, nw.Node)
		}
		place = append(place, nw.Workers*j.perWorker) // the models take GPUs per node
	}
	if err := c.advance(j, c.clk.Now()); err != nil {
		return err
	}
	j.p.Place(place, c.restart.Seconds())
	if k := j.workers(); k > 0 {
		j.gen++
		j.fresh = true
		if j.bounds.Adaptive() {
			j.p.SetBatch(j.bounds.Clamp(j.p.Batch(), k))
		}
	}
	c.signal()
	return nil
}

// Progress returns the fraction of a job's work done (0 if unknown).
func (c *SimPool) Progress(name string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[name]
	if !ok {
		return 0
	}
	if err := c.advance(j, c.clk.Now()); err != nil {
		c.log.Warn("simulated job", "job", name, "err", err)
	}
	done, total := j.p.Work()
	if total <= 0 {
		return 0
	}
	return done / total
}

// ReportEvery is how often a simulated job reports its progress, in
// simulated time: more often than a real job's 30 seconds, because the
// first two reports of every placement are not measured and simulated
// time may run 60 times faster than the scheduler's resync.
const ReportEvery = sim.ReportEvery

// stepsPerEpoch is the optimizer steps a simulated epoch takes: the
// reports carry steps, as real ones do, though the scheduler measures
// epochs.
const stepsPerEpoch = 100

// Report is a simulated job's progress report, as its rank 0 would send
// it (docs/progress.md).
type Report struct {
	Job    string
	Report progress.Report
}

// Reports returns the report of every job that is training now (holding
// workers, past its restart), by name: cumulative epochs and steps, its
// generation (a new one with every placement), workers and nodes. A job
// of a measured profile also reports what a trainer measures: its step
// time, global and local batch and accumulation steps, samples, and, if
// its batch is adaptive, its bounds and the gradient statistics of its
// batch at its epoch. Every report has passed the checks a report over
// HTTP passes (progress.Wire.Check); one that fails them is logged and
// left out.
func (c *SimPool) Reports() []Report { return c.reports(false) }

// reports returns the reports of every job training now, or with onlyNew
// of the jobs whose generation has not reported yet (a trainer reports as
// soon as it starts training again, so that its restart is measured
// without a report interval's delay).
func (c *SimPool) reports(onlyNew bool) []Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	var out []Report
	for _, name := range c.sortedNames() {
		j := c.jobs[name]
		if err := c.advance(j, now); err != nil {
			c.log.Warn("simulated job", "job", name, "err", err)
			continue
		}
		if j.workers() == 0 || j.p.Restarting() || (onlyNew && j.reportedGen == j.gen) {
			continue
		}
		j.reportedGen = j.gen
		w, err := c.wire(j)
		if err != nil {
			c.log.Warn("progress report of a simulated job", "job", name, "err", err)
			continue
		}
		r, ferr := w.Check(c.gpus)
		if ferr != nil {
			c.log.Warn("progress report of a simulated job refused", "job", name, "field", ferr.Field, "reason", ferr.Reason)
			continue
		}
		out = append(out, Report{Job: name, Report: r})
	}
	return out
}

// wire is job j's report as its trainer would send it. Call with mu held.
func (c *SimPool) wire(j *job) (progress.Wire, error) {
	gen := c.boot + "-" + strconv.Itoa(j.gen)
	workers, nodes := int64(j.workers()), int64(len(j.p.Placement()))
	epoch, total := j.p.EpochsDone(), float64(j.p.Epochs())
	steps := int64(epoch * stepsPerEpoch)
	w := progress.Wire{Generation: &gen, Workers: &workers, Nodes: nodes, Steps: &steps, Epoch: &epoch, TotalEpochs: &total}
	if j.prof == nil {
		return w, nil
	}
	global, local, accum, sec, err := j.prof.Iteration(j.p.Placement(), j.p.Batch())
	if err != nil {
		return w, fmt.Errorf("job %s: %w", j.name, err)
	}
	done, _ := j.p.Work()
	steps = int64(j.steps)
	// The profiles count work in steps of the initial batch at full
	// statistical efficiency: that work times the initial batch are the
	// samples, so that an epoch holds as many samples at any batch size,
	// as a real data set does.
	samples := int64(done * float64(j.bounds.InitBatch))
	w.Samples = &samples
	w.GlobalBatchSize, w.LocalBatchSize = ptr(int64(global)), ptr(int64(local))
	w.AccumulationSteps, w.StepSeconds = ptr(int64(accum)), &sec
	if b := j.bounds; b.Adaptive() {
		sqr, vr := j.prof.GradStats(j.p.Batch(), j.p.Epoch())
		w.GradSqNorm, w.GradVariance = &sqr, &vr
		w.InitBatchSize, w.MaxBatchSize = ptr(int64(b.InitBatch)), ptr(int64(b.MaxBatch))
		w.MinLocalBatchSize, w.MaxLocalBatchSize = ptr(int64(b.MinLocal)), ptr(int64(b.MaxLocal))
	}
	return w, nil
}

func ptr[T any](v T) *T { return &v }

// RunReports sends every training job's report to in (the API's
// ingestion, so that simulated jobs are measured as real ones are) every
// ReportEvery of the cluster's clock until ctx ends, and hands each reply
// back to its job, which follows the batch size it advises. A report
// refused is logged; a job that finished meanwhile is not an error.
func (c *SimPool) RunReports(ctx context.Context, in progress.Sink) error {
	every := ReportEvery
	next := c.clk.Now().Add(every)
	t := c.clk.NewTimer(every)
	// On a clock that can be held, it stops at the next round until the
	// round's reports are in, so that however late this loop wakes, the
	// scheduler measures the jobs when the simulator would.
	release := func() {}
	holdAt := func(at time.Time) {
		prev := release
		release = func() {}
		if h, ok := c.clk.(holder); ok {
			release = h.HoldAt(at)
		}
		prev()
	}
	holdAt(next)
	defer func() {
		t.Stop()
		release()
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
		// Every ReportEvery all training jobs report; in between, a job
		// reports as soon as its restart ends, as a trainer does when it
		// starts again.
		now := c.clk.Now()
		onlyNew := now.Before(next)
		if !onlyNew {
			next = now.Add(every)
		}
		wait := next.Sub(now)
		if d, ok := c.restartEnds(); ok && d < wait {
			wait = d
		}
		t.Reset(wait)
		reports := c.reports(onlyNew)
		for _, r := range reports {
			reply, err := in.Ingest(ctx, r.Job, r.Report)
			if err != nil {
				if !errors.Is(err, progress.ErrFinished) && ctx.Err() == nil {
					c.log.Warn("progress report of a simulated job", "job", r.Job, "err", err)
				}
				continue
			}
			c.Advise(r.Job, r.Report.Generation, reply)
		}
		holdAt(now.Add(wait))
	}
}

// restartEnds is how long until the next restart under way ends; false
// when none is.
func (c *SimPool) restartEnds() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	var soonest time.Duration
	found := false
	for _, j := range c.jobs {
		if err := c.advance(j, now); err != nil || !j.p.Restarting() {
			continue
		}
		if d := j.p.RestartLeft(); !found || d < soonest {
			soonest, found = d, true
		}
	}
	return soonest, found
}

// Advise hands a job the reply to its report of generation gen. An
// adaptive job keeps the batch size advised for the reply's allocation:
// it runs it from its next epoch, or at once if the reply is the first
// of its generation (a trainer picks its batch size when it starts). A
// reply to an earlier generation's report is ignored.
func (c *SimPool) Advise(name, gen string, reply progress.Reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[name]
	if !ok || !j.bounds.Adaptive() || gen != c.boot+"-"+strconv.Itoa(j.gen) || reply.Batch == nil {
		return
	}
	if err := c.advance(j, c.clk.Now()); err != nil {
		c.log.Warn("simulated job", "job", name, "err", err)
		return
	}
	j.advice, j.adviceWorkers = reply.Batch.Size, reply.Allocation.Workers
	if j.fresh && j.adviceWorkers == j.workers() {
		j.p.SetBatch(j.advice)
	}
	j.fresh = false
	c.signal()
}

func (c *SimPool) sortedNames() []string {
	names := make([]string, 0, len(c.jobs))
	for n := range c.jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// advance brings a job's progress to now. Call with mu held.
func (c *SimPool) advance(j *job, now time.Time) error {
	dt := now.Sub(j.last).Seconds()
	if dt <= 0 {
		return nil
	}
	start := j.last
	j.last = now
	var ran func(seconds, work float64)
	if j.prof != nil {
		ran = func(seconds, _ float64) {
			if _, _, _, sec, err := j.prof.Iteration(j.p.Placement(), j.p.Batch()); err == nil {
				j.steps += seconds / sec
			}
		}
	}
	err := j.p.Advance(0, dt, ran, func() error {
		if k := j.workers(); j.bounds.Adaptive() && j.adviceWorkers == k {
			j.p.SetBatch(j.advice)
		}
		return nil
	})
	// The step knows when within it the last epoch ended: that instant,
	// whichever caller advanced the job (Run, a report, Apply), is when
	// its work was done.
	if end, done := j.p.Ended(); done && j.ended.IsZero() {
		j.ended = start.Add(time.Duration(end * float64(time.Second)))
	}
	return err
}

// EndedAt returns when a job's work was done, for the service to record
// as its finish time rather than when it heard of it (a busy process
// hears late, and at --speed N every millisecond late is N of the job's);
// false while the job is not done or not known.
func (c *SimPool) EndedAt(name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[name]
	if !ok || j.ended.IsZero() {
		return time.Time{}, false
	}
	return j.ended, true
}

// finishAt returns when a running job will finish at its current rate.
func (c *SimPool) finishAt(j *job) (time.Time, bool) {
	secs, err := j.p.FinishIn()
	if err != nil || math.IsInf(secs, 1) {
		return time.Time{}, false
	}
	return j.last.Add(time.Duration(math.Ceil(secs * 1e9))), true
}

func (c *SimPool) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// holder is a clock that can be stopped at a time until released: the
// server's scaled clock (clock.Scaled.HoldAt).
type holder interface {
	HoldAt(at time.Time) (release func())
}

// Run advances jobs until ctx ends, calling onFinish (never with the
// cluster's lock held, from goroutines of their own for jobs done at the
// same time) once for each job whose work is done. The job
// keeps its GPUs until the scheduler halts it.
func (c *SimPool) Run(ctx context.Context, onFinish func(name string, status model.Status)) error {
	reported := map[string]bool{}
	var timer clock.Timer
	// release lets go of the hold at the next job's end, if the clock
	// can be held (see holder).
	release := func() {}
	defer func() {
		release()
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		now := c.clk.Now()
		var done []string
		var next time.Time
		c.mu.Lock()
		for _, name := range c.sortedNames() {
			j := c.jobs[name]
			if err := c.advance(j, now); err != nil {
				c.log.Warn("simulated job", "job", name, "err", err)
			}
			if j.p.Finish(0) {
				if j.ended.IsZero() {
					j.ended = j.last // done within rounding error, as of its last step
				}
				if !reported[name] {
					reported[name] = true
					done = append(done, name)
				}
				continue
			}
			if at, ok := c.finishAt(j); ok && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		for name := range reported {
			if _, ok := c.jobs[name]; !ok {
				delete(reported, name)
			}
		}
		c.mu.Unlock()
		// Reported together and waited for together, as the kube pool
		// reports each from a goroutine of its own: a scheduler finishes
		// the jobs done at once in one turn rather than one turn each.
		var wg sync.WaitGroup
		for _, name := range done {
			c.log.Info("job finished its work", "job", name)
			wg.Go(func() { onFinish(name, model.StatusCompleted) })
		}
		wg.Wait()
		if len(done) > 0 {
			continue
		}
		var timerC <-chan time.Time
		// The clock stops at the next end until this loop has seen it, so
		// that however late it wakes, the job ends and its GPUs are freed
		// at that instant, as in the simulator.
		prev := release
		release = func() {}
		if h, ok := c.clk.(holder); ok && !next.IsZero() {
			release = h.HoldAt(next)
		}
		prev()
		if !next.IsZero() {
			wait := max(next.Sub(now), time.Millisecond)
			if timer == nil {
				timer = c.clk.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.wake:
		case <-timerC:
		}
	}
}
