package livecluster

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/model"
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
	obs       collector.Observation
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

	mu   sync.Mutex
	jobs map[string]*job
	obs  []collector.Observation
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
		name: name, app: app, m: m, total: total,
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
	c.flush(j)
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
	}
	j.obs = collector.Observation{Job: j.name, App: j.app, Workers: j.workers}
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

// Remaining returns a job's remaining work in one-GPU seconds and whether
// the job is known.
func (c *SimPool) Remaining(name string) (float64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[name]
	if !ok {
		return 0, false
	}
	c.advance(j, c.clk.Now())
	return j.total - j.done, true
}

// Observations returns and clears what jobs did since the last call.
func (c *SimPool) Observations() []collector.Observation {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	for _, name := range c.sortedNames() {
		j := c.jobs[name]
		c.advance(j, now)
		c.flush(j)
	}
	out := c.obs
	c.obs = nil
	return out
}

func (c *SimPool) sortedNames() []string {
	names := make([]string, 0, len(c.jobs))
	for n := range c.jobs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// flush moves a job's pending observation to the list.
func (c *SimPool) flush(j *job) {
	if j.obs.Seconds > 0 && j.obs.Workers > 0 {
		c.obs = append(c.obs, j.obs)
	}
	j.obs = collector.Observation{Job: j.name, App: j.app, Workers: j.workers}
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
		dt = work / j.rate
		j.finished = true
	}
	j.done += work
	j.obs.Seconds += dt
	j.obs.Work += work
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
// cluster's lock held) once for each job whose work is done. The job
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
		for _, name := range done {
			c.log.Info("job finished its work", "job", name)
			onFinish(name, model.StatusCompleted)
		}
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
