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

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/scheduler"
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
	// RestartCost: zero means DefaultRestartCost, negative none.
	RestartCost time.Duration
	Clock       clock.Clock
	Logger      *slog.Logger
}

type job struct {
	name, app string
	m         *perfmodel.Parametric
	total     float64 // work to do, in one-GPU seconds
	done      float64
	place     []int // workers per node index
	workers   int
	rate      float64
	paused    time.Time // no progress before this (restart)
	last      time.Time
	finished  bool
	epochs    int // the epochs total stands for
	// gen counts the job's placements: each starts a new generation of
	// its (simulated) training processes.
	gen int
}

// SimPool is a simulated cluster of one GPU type. It is safe for
// concurrent use.
type SimPool struct {
	opts    Options
	clk     clock.Clock
	log     *slog.Logger
	restart time.Duration
	models  map[string]*perfmodel.Parametric
	nodes   []model.Node
	nodeIdx map[string]int

	// boot tells this process's generations from an earlier one's: a
	// restarted cluster's jobs are new incarnations.
	boot string

	mu   sync.Mutex
	jobs map[string]*job
	wake chan struct{}
}

var _ scheduler.Port = (*SimPool)(nil)

// New returns a cluster of opts.Nodes nodes with opts.GPUsPerNode GPUs
// each, named <gpu-type>-node-NN.
func New(opts Options) (*SimPool, error) {
	if opts.GPUType == "" {
		return nil, fmt.Errorf("simulated cluster: empty GPU type")
	}
	if opts.Nodes < 1 || opts.GPUsPerNode < 1 {
		return nil, fmt.Errorf("simulated cluster %s: need at least one node with one GPU (got %d x %d)", opts.GPUType, opts.Nodes, opts.GPUsPerNode)
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
	c := &SimPool{
		opts: opts, clk: opts.Clock, log: log.With("gpuType", opts.GPUType), restart: restart,
		models:  map[string]*perfmodel.Parametric{},
		nodeIdx: map[string]int{},
		jobs:    map[string]*job{},
		wake:    make(chan struct{}, 1),
		boot:    strconv.FormatInt(opts.Clock.Now().UnixNano(), 36),
	}
	for _, m := range perfmodel.BuiltinParametric() {
		c.models[m.App] = m
	}
	for i := 0; i < opts.Nodes; i++ {
		n := model.Node{Name: fmt.Sprintf("%s-node-%02d", opts.GPUType, i), GPUs: opts.GPUsPerNode, Index: i}
		c.nodes = append(c.nodes, n)
		c.nodeIdx[n.Name] = i
	}
	return c, nil
}

// Models returns the names of the performance models jobs may use.
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
// default when epochs <= 0), of which the fraction progress is done.
// Tracking a job already known updates nothing and is not an error.
func (c *SimPool) Track(name, app string, epochs int, progress float64) error {
	if app == "" {
		app = DefaultModel
	}
	m, ok := c.models[app]
	if !ok {
		return fmt.Errorf("simulated cluster: job %s: unknown model %q (have %v)", name, app, Models())
	}
	if epochs <= 0 {
		epochs = m.DefaultEpochs()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.jobs[name]; ok {
		return nil
	}
	total := m.EpochProgress(epochs)
	c.jobs[name] = &job{
		name: name, app: app, m: m, total: total, epochs: epochs,
		done:  total * math.Min(math.Max(progress, 0), 1),
		place: make([]int, len(c.nodes)),
		last:  c.clk.Now(),
	}
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
// keeps any, it restarts and makes no progress for the restart cost.
func (c *SimPool) Apply(_ context.Context, a scheduler.Action) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[a.Job]
	if !ok {
		return fmt.Errorf("simulated cluster %s: unknown job %s", c.opts.GPUType, a.Job)
	}
	place := make([]int, len(c.nodes))
	for _, nw := range a.To {
		i, ok := c.nodeIdx[nw.Node]
		if !ok {
			return fmt.Errorf("simulated cluster %s: job %s: unknown node %s", c.opts.GPUType, a.Job, nw.Node)
		}
		place[i] += nw.Workers
	}
	now := c.clk.Now()
	c.advance(j, now)
	j.place = place
	j.workers = 0
	for _, w := range place {
		j.workers += w
	}
	j.rate = 0
	if j.workers > 0 {
		r, err := j.m.Rate(place, 0, 0)
		if err != nil {
			return fmt.Errorf("simulated cluster: job %s: %w", a.Job, err)
		}
		j.rate = r
		j.paused = now.Add(c.restart)
		j.gen++
	}
	c.signal()
	return nil
}

// Progress returns the fraction of a job's work done (0 if unknown).
func (c *SimPool) Progress(name string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[name]
	if !ok || j.total <= 0 {
		return 0
	}
	c.advance(j, c.clk.Now())
	return j.done / j.total
}

// ReportEvery is how often a simulated job reports its progress, in
// simulated time: more often than a real job's 30 seconds, because the
// first two reports of every placement are not measured and simulated
// time may run 60 times faster than the scheduler's resync.
const ReportEvery = 10 * time.Second

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
// generation (a new one with every placement), workers and nodes.
func (c *SimPool) Reports() []Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	var out []Report
	for _, name := range c.sortedNames() {
		j := c.jobs[name]
		c.advance(j, now)
		if j.workers == 0 || now.Before(j.paused) || j.total <= 0 {
			continue
		}
		nodes := 0
		for _, w := range j.place {
			if w > 0 {
				nodes++
			}
		}
		epoch := j.done / j.total * float64(j.epochs)
		out = append(out, Report{Job: name, Report: progress.Report{
			Generation: c.boot + "-" + strconv.Itoa(j.gen), Workers: j.workers, Nodes: nodes,
			Steps: int64(epoch * stepsPerEpoch), Epoch: epoch, TotalEpochs: float64(j.epochs),
		}})
	}
	return out
}

// RunReports sends every training job's report to in (the API's
// ingestion, so that simulated jobs are measured as real ones are) every
// ReportEvery of the cluster's clock until ctx ends. A report refused is
// logged; a job that finished meanwhile is not an error.
func (c *SimPool) RunReports(ctx context.Context, in progress.Sink) error {
	every := ReportEvery
	t := c.clk.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
		t.Reset(every)
		for _, r := range c.Reports() {
			if _, err := in.Ingest(ctx, r.Job, r.Report); err != nil && !errors.Is(err, progress.ErrFinished) && ctx.Err() == nil {
				c.log.Warn("progress report of a simulated job", "job", r.Job, "err", err)
			}
		}
	}
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
func (c *SimPool) advance(j *job, now time.Time) {
	from := j.last
	if now.After(j.last) {
		j.last = now
	}
	if j.workers == 0 || j.finished {
		return
	}
	if j.paused.After(from) {
		from = j.paused
	}
	dt := now.Sub(from).Seconds()
	if dt <= 0 {
		return
	}
	work := j.rate * dt
	if left := j.total - j.done; work >= left || left-work <= 1e-9*j.total {
		work = left
		j.finished = true
	}
	j.done += work
}

// finishAt returns when a running job will finish at its current rate.
func (c *SimPool) finishAt(j *job) (time.Time, bool) {
	if j.workers == 0 || j.finished || j.rate <= 0 {
		return time.Time{}, false
	}
	start := j.last
	if j.paused.After(start) {
		start = j.paused
	}
	secs := (j.total - j.done) / j.rate
	return start.Add(time.Duration(math.Ceil(secs * 1e9))), true
}

func (c *SimPool) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run advances jobs until ctx ends, calling onFinish (never with the
// cluster's lock held, from goroutines of their own for jobs done at the
// same time) once for each job whose work is done. The job
// keeps its GPUs until the scheduler halts it.
func (c *SimPool) Run(ctx context.Context, onFinish func(name string, status model.Status)) error {
	reported := map[string]bool{}
	var timer clock.Timer
	defer func() {
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
			c.advance(j, now)
			if j.finished {
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
