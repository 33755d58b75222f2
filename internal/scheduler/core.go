package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
)

// DefaultRateLimit is the least time between two cycles that may change
// running jobs. A cycle that only starts waiting jobs on free GPUs is not
// held by it (see Core.Due).
const DefaultRateLimit = 30 * time.Second

// DefaultStartInterval is the least time between a cycle and a limited
// one (a cycle within the rate limit, which only starts waiting jobs on
// free GPUs): a burst of submissions is decided in a few cycles rather
// than one each, and a job still starts well within a second.
const DefaultStartInterval = 250 * time.Millisecond

// DefaultRetryMin and DefaultRetryMax bound the backoff between cycles
// after a cycle whose actions failed: the wait starts at the minimum and
// doubles with each cycle that fails again. The minimum applies even with
// the rate limit off, so an action that keeps failing (an operator that is
// not installed) cannot make the loop spin.
const (
	DefaultRetryMin = time.Second
	DefaultRetryMax = time.Minute
)

// DefaultTick is the period of cycles when no event asks for one; it keeps
// time-based priorities (Tiresias) moving.
const DefaultTick = 60 * time.Second

// ActionKind says what an action does to a job.
type ActionKind int

// Action kinds, in the order a plan applies them.
const (
	Halt ActionKind = iota
	Shrink
	Migrate
	Start
	Grow
)

func (k ActionKind) String() string {
	switch k {
	case Halt:
		return "halt"
	case Shrink:
		return "shrink"
	case Migrate:
		return "migrate"
	case Start:
		return "start"
	case Grow:
		return "grow"
	}
	return fmt.Sprintf("action(%d)", int(k))
}

// Action changes one job from one placement to another.
type Action struct {
	Kind ActionKind
	Job  string
	From model.JobPlacement
	To   model.JobPlacement
	// Moved is the number of workers that change node.
	Moved int
}

// Port applies actions to a cluster: Kubernetes in production, simulated
// state in the simulator.
type Port interface {
	Apply(ctx context.Context, a Action) error
}

// Config configures a Core.
type Config struct {
	GPUType   string
	Allocator algorithm.Allocator
	Placer    placement.Placer
	Port      Port
	// ApplyParallelism is how many actions of one kind the cycle applies
	// at once (1 if zero). Above 1 the Port must be safe for concurrent
	// use; the live Kubernetes port is, and a burst of starts then costs
	// one API round trip per batch rather than per job.
	ApplyParallelism int
	// RateLimit is the least time between two cycles that may change
	// running jobs: shrink, halt, migrate or grow them (DefaultRateLimit if
	// zero; negative means none). Within it, a cycle may still start
	// waiting jobs on GPUs that are free; see Core.Due.
	RateLimit time.Duration
	// StartInterval is the least time between a cycle and the next limited
	// one (DefaultStartInterval if zero; negative means none).
	StartInterval time.Duration
	// Tick is the period of cycles without events (DefaultTick if zero;
	// negative disables it).
	Tick time.Duration
	// RetryMin and RetryMax bound the backoff after failed actions
	// (DefaultRetryMin and DefaultRetryMax if zero).
	RetryMin, RetryMax time.Duration
	Logger             *slog.Logger
	// Stopwatch, if set, times each cycle's placement step (the
	// PlaceDuration of its report). The core never reads the wall clock
	// itself; the live system passes clock.RealClock{}, and a simulation
	// may pass one too, since the duration never feeds a decision.
	Stopwatch clock.PassiveClock
}

// CycleReport describes one cycle.
type CycleReport struct {
	Time         time.Time
	Jobs         int
	GPUs         int
	Allocated    int
	QueueChanges int
	Actions      []Action
	Unplaced     []placement.Unplaced
	// Migrated is the number of workers that changed node.
	Migrated int
	// Spread is the number of jobs that, once placed, span more nodes
	// than the fewest that could hold their workers.
	Spread int
	// Stranded is the GPUs the placement leaves free on nodes where no
	// waiting job can run a worker (placement.UnusableFreeGPUs): free, and
	// wanted, but split too small for the G of the jobs that wait.
	Stranded int
	// PlaceDuration is the time the placer took (zero without a
	// Stopwatch).
	PlaceDuration time.Duration
	// Duration is the time the whole cycle took, actions included (zero
	// without a Stopwatch).
	Duration time.Duration
	// AllocateDuration is the time the allocator took (zero without a
	// Stopwatch).
	AllocateDuration time.Duration
	// Algorithm names the allocator that decided.
	Algorithm string
	// Order is the allocator's priority order over every job of the
	// snapshot: waiting jobs earlier in it are served first.
	Order []string
	// FailedActions counts actions the port could not apply; they are
	// retried next cycle.
	FailedActions int
	// Limited is true for a cycle that ran within the rate limit: it
	// applied only the starts of waiting jobs on free GPUs.
	Limited bool
	// Reclaim is true for a cycle that ran within the rate limit yet
	// changed running jobs, because a team held less than its guarantee
	// with jobs waiting while another team borrowed GPUs
	// (algorithm.Reclaimer).
	Reclaim bool
	// Deferred are the actions a limited cycle decided but left for the
	// first cycle the rate limit allows (changes to running jobs, and
	// starts that need GPUs running jobs hold), in apply order.
	Deferred []Action
}

type jobEntry struct {
	job model.Job
}

// Core is one GPU type's scheduler state and cycle. It is not safe for
// concurrent use; Loop serialises access for the live system.
type Core struct {
	cfg  Config
	log  *slog.Logger
	jobs map[string]*jobEntry
	// order holds the entries of jobs sorted by model.Before, kept so by
	// Submit, Restore and Finish (a job's submit time and name never
	// change): a cycle at 100,000 jobs does not sort them again.
	order []*jobEntry
	nodes map[string]model.Node
	// byIndex is nodes sorted by index, built on demand and dropped on
	// every change of nodes: a cycle copies it instead of sorting again.
	byIndex   []model.Node
	nextIndex int
	dirty     bool
	cycled    bool
	lastCycle time.Time
	// lastFull is when the last cycle the rate limit allowed to change
	// running jobs ran; deferred says a limited cycle since then left
	// changes for the next one.
	lastFull time.Time
	deferred bool
	// deferredStarts are the jobs whose start the last limited cycle left
	// for the next full one.
	deferredStarts map[string]bool
	// startable caches whether some waiting job's minimum fits in the
	// free GPUs (nil: not known since the last change).
	startable *bool
	// reclaim caches whether some team is owed GPUs another team borrows
	// (algorithm.Reclaimer) for jobs no full cycle has seen owed yet (nil:
	// not known since the last change); lastOwed are the jobs owed at the
	// last full cycle. A cycle that reclaims is full whatever the rate
	// limit, once for each new set of owed jobs.
	reclaim  *bool
	lastOwed []string
	advanced time.Time
	// failStreak counts the cycles in a row that failed (an error, or an
	// action the port could not apply).
	failStreak int
}

// NewCore returns a core with no jobs and no nodes.
func NewCore(cfg Config) (*Core, error) {
	if cfg.Allocator == nil || cfg.Placer == nil || cfg.Port == nil {
		return nil, errors.New("scheduler: allocator, placer and port are required")
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = DefaultRateLimit
	}
	if cfg.StartInterval == 0 {
		cfg.StartInterval = DefaultStartInterval
	}
	if cfg.Tick == 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = max(DefaultRetryMax, cfg.RetryMin)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Core{
		cfg:   cfg,
		log:   log.With("gpuType", cfg.GPUType),
		jobs:  map[string]*jobEntry{},
		nodes: map[string]model.Node{},
	}, nil
}

// SetAllocator switches the algorithm; the next cycle uses it.
func (c *Core) SetAllocator(a algorithm.Allocator) {
	c.cfg.Allocator = a
	c.markDirty()
}

// markDirty records an event that wants a cycle.
func (c *Core) markDirty() {
	c.dirty = true
	c.startable = nil
	c.reclaim = nil
}

// Allocator returns the current algorithm.
func (c *Core) Allocator() algorithm.Allocator { return c.cfg.Allocator }

// SetRateLimit changes the least time between two cycles that may change
// running jobs.
func (c *Core) SetRateLimit(d time.Duration) { c.cfg.RateLimit = d }

// RateLimit returns the least time between two cycles that may change
// running jobs.
func (c *Core) RateLimit() time.Duration { return c.cfg.RateLimit }

// Dirty reports whether an event is waiting for a cycle, or a limited
// cycle left changes for the rate limit.
func (c *Core) Dirty() bool { return c.dirty || c.deferred }

// StartDeferred reports whether the last cycle, a limited one, decided to
// start the job but left it for the next full cycle (NextFull), because
// it needs GPUs a running job holds.
func (c *Core) StartDeferred(name string) bool { return c.deferredStarts[name] }

// NextFull returns when the next cycle that may change running jobs can
// run: the last such cycle plus the rate limit (the zero time if no cycle
// ran yet or there is no rate limit, meaning at once).
func (c *Core) NextFull() time.Time {
	if !c.cycled || c.cfg.RateLimit < 0 {
		return time.Time{}
	}
	return c.lastFull.Add(c.cfg.RateLimit)
}

// Due returns when the next cycle should run. After an event it is as
// soon as the rate limit allows, except that when a waiting job's minimum
// fits in the GPUs free now, a limited cycle runs at once (at least
// StartInterval after the last cycle): it applies only
// the starts of waiting jobs on free GPUs, which disturb no running job,
// and leaves every other change to the cycle the rate limit allows. The
// rate limit thus bounds how often running jobs are changed, not how soon
// a job starts on an idle cluster. Without events, the next cycle is one
// tick after the last. After cycles that failed, no cycle runs before the
// retry backoff has passed, rate limit or not. ok is false when nothing is
// due (no event, nothing deferred and no tick).
func (c *Core) Due() (at time.Time, ok bool) {
	if c.dirty || c.deferred {
		at := c.advanced
		if full := c.NextFull(); full.After(at) {
			if c.dirty && c.reclaimDue() {
				// A full cycle now: a team waits for its guarantee.
				if next := c.lastCycle.Add(max(c.cfg.StartInterval, 0)); next.After(at) {
					at = next
				}
				if at.After(full) {
					at = full
				}
			} else if c.dirty && c.canStart() {
				// A limited cycle, after the start interval.
				if next := c.lastCycle.Add(max(c.cfg.StartInterval, 0)); next.After(at) {
					at = next
				}
				if at.After(full) {
					at = full
				}
			} else {
				at = full
			}
		}
		if c.cycled && c.failStreak > 0 {
			if retry := c.lastCycle.Add(c.retryBackoff()); retry.After(at) {
				at = retry
			}
		}
		return at, true
	}
	if c.cfg.Tick > 0 && c.cycled && len(c.jobs) > 0 {
		return c.lastCycle.Add(c.cfg.Tick), true
	}
	return time.Time{}, false
}

// canStart reports whether some waiting job's minimum fits in the GPUs
// free now on nodes that take new workers. It is cached until the next
// event, so that the loop asking Due often costs one pass over the jobs
// per event.
func (c *Core) canStart() bool {
	if c.startable != nil {
		return *c.startable
	}
	ok := c.computeCanStart()
	c.startable = &ok
	return ok
}

func (c *Core) computeCanStart() bool {
	// least[g] is the smallest minimum, in workers, of a waiting job whose
	// workers hold g GPUs each.
	least := map[int]int{}
	used := map[string]int{}
	for _, e := range c.jobs {
		st := &e.job.State
		g := e.job.Spec.PerWorker()
		if st.GPUs == 0 {
			if l, ok := least[g]; !ok || e.job.Spec.MinWorkers < l {
				least[g] = e.job.Spec.MinWorkers
			}
			continue
		}
		for _, nw := range st.Placement {
			used[nw.Node] += nw.Workers * g
		}
	}
	// A waiting job fits when the free GPUs of the nodes that take new
	// workers hold its minimum in whole workers.
	for g, need := range least {
		fit := 0
		for name, n := range c.nodes {
			if !n.Cordoned {
				fit += max(0, n.GPUs-used[name]) / g
			}
		}
		if fit >= need {
			return true
		}
	}
	return false
}

// reclaimDue reports whether a team is owed GPUs another team borrows,
// for waiting jobs that were not owed at the last full cycle. It is cached
// until the next event.
func (c *Core) reclaimDue() bool {
	if c.reclaim != nil {
		return *c.reclaim
	}
	ok := false
	if r, isR := c.cfg.Allocator.(algorithm.Reclaimer); isR {
		total := 0
		for _, n := range c.nodes {
			total += n.GPUs
		}
		owed := r.Reclaim(total, func(yield func(*model.Job) bool) {
			for _, e := range c.order {
				if !yield(&e.job) {
					return
				}
			}
		})
		ok = len(owed) > 0 && !slices.Equal(owed, c.lastOwed)
	}
	c.reclaim = &ok
	return ok
}

// retryBackoff is the least time after a failed cycle before the next:
// RetryMin doubled per failure in a row after the first, up to RetryMax.
func (c *Core) retryBackoff() time.Duration {
	d := c.cfg.RetryMin
	for i := 1; i < c.failStreak && d < c.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, c.cfg.RetryMax)
}

// Advance accrues attained service for running jobs up to now. Every
// method that takes a time calls it first; time never goes backwards.
func (c *Core) Advance(now time.Time) {
	if c.advanced.IsZero() {
		c.advanced = now
		return
	}
	dt := now.Sub(c.advanced).Seconds()
	if dt <= 0 {
		return
	}
	for _, e := range c.jobs {
		st := &e.job.State
		if st.GPUs > 0 {
			st.AttainedService += float64(st.GPUs) * dt
			st.RunSeconds += dt
			st.QueueService += float64(st.GPUs) * dt
			st.QueueRunSeconds += dt
		}
	}
	c.advanced = now
}

// ErrUnknownJob is returned for events about a job the core does not hold.
var ErrUnknownJob = errors.New("unknown job")

// ErrDuplicateJob is returned when a job name is submitted twice.
var ErrDuplicateJob = errors.New("job already exists")

// Submit adds a job in Waiting state, in queue 0.
func (c *Core) Submit(now time.Time, spec model.JobSpec) error {
	c.Advance(now)
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("submit job %s: %w", spec.Name, err)
	}
	if _, ok := c.jobs[spec.Name]; ok {
		return fmt.Errorf("submit job %s: %w", spec.Name, ErrDuplicateJob)
	}
	if spec.SubmitTime.IsZero() {
		spec.SubmitTime = now
	}
	c.add(&jobEntry{job: model.Job{
		Spec: spec,
		State: model.JobState{
			Status:       model.StatusWaiting,
			QueueSince:   spec.SubmitTime,
			WaitingSince: now,
		},
		Est: model.Estimates{RemainingSeconds: -1},
	}})
	c.markDirty()
	return nil
}

// Restore adds a job with its saved state, for recovery after a restart.
func (c *Core) Restore(job model.Job) error {
	if err := job.Spec.Validate(); err != nil {
		return fmt.Errorf("restore job %s: %w", job.Spec.Name, err)
	}
	if _, ok := c.jobs[job.Spec.Name]; ok {
		return fmt.Errorf("restore job %s: %w", job.Spec.Name, ErrDuplicateJob)
	}
	job.State.Placement = job.State.Placement.Clone()
	c.add(&jobEntry{job: job})
	c.markDirty()
	return nil
}

// Finish removes a job that completed, failed or was deleted, freeing its
// GPUs, and returns its last state.
func (c *Core) Finish(now time.Time, name string, status model.Status) (model.Job, error) {
	c.Advance(now)
	e, ok := c.jobs[name]
	if !ok {
		return model.Job{}, fmt.Errorf("finish job %s: %w", name, ErrUnknownJob)
	}
	delete(c.jobs, name)
	if k, found := slices.BinarySearchFunc(c.order, e, cmpEntries); found {
		c.order = slices.Delete(c.order, k, k+1)
	}
	delete(c.deferredStarts, name)
	e.job.State.Status = status
	c.markDirty()
	return e.job, nil
}

// SetPriority changes a job's user priority.
func (c *Core) SetPriority(now time.Time, name string, priority int) error {
	c.Advance(now)
	e, ok := c.jobs[name]
	if !ok {
		return fmt.Errorf("set priority of job %s: %w", name, ErrUnknownJob)
	}
	if priority < 0 {
		return fmt.Errorf("set priority of job %s: priority %d must not be negative", name, priority)
	}
	if e.job.Spec.Priority != priority {
		e.job.Spec.Priority = priority
		c.markDirty()
	}
	return nil
}

// SetEstimates updates a job's performance estimates. It does not trigger
// a cycle by itself.
func (c *Core) SetEstimates(name string, est model.Estimates) error {
	e, ok := c.jobs[name]
	if !ok {
		return fmt.Errorf("set estimates of job %s: %w", name, ErrUnknownJob)
	}
	est.Speedup = append([]float64(nil), est.Speedup...)
	e.job.Est = est
	return nil
}

// AddNode adds or updates a node. A node keeps its index across updates.
func (c *Core) AddNode(now time.Time, n model.Node) error {
	c.Advance(now)
	if n.Name == "" || n.GPUs < 0 {
		return fmt.Errorf("add node %q: need a name and a non-negative GPU count", n.Name)
	}
	if old, ok := c.nodes[n.Name]; ok {
		n.Index = old.Index
	} else {
		n.Index = c.nextIndex
		c.nextIndex++
	}
	c.nodes[n.Name] = n
	c.byIndex = nil
	c.markDirty()
	return nil
}

// RemoveNode removes a node; jobs with workers there lose them and are
// re-placed next cycle.
func (c *Core) RemoveNode(now time.Time, name string) error {
	c.Advance(now)
	if _, ok := c.nodes[name]; !ok {
		return fmt.Errorf("remove node %s: unknown node", name)
	}
	delete(c.nodes, name)
	c.byIndex = nil
	for _, e := range c.sortedJobs() {
		st := &e.job.State
		var kept model.JobPlacement
		for _, nw := range st.Placement {
			if nw.Node != name {
				kept = append(kept, nw)
			}
		}
		if len(kept) != len(st.Placement) {
			st.Placement = kept
			st.GPUs = kept.Workers() * e.job.Spec.PerWorker()
			if st.GPUs == 0 {
				st.Status = model.StatusWaiting
				st.WaitingSince = now
				st.Placement = nil
			}
		}
	}
	c.markDirty()
	return nil
}

// Job returns a copy of a job's current view.
func (c *Core) Job(name string) (model.Job, bool) {
	e, ok := c.jobs[name]
	if !ok {
		return model.Job{}, false
	}
	j := e.job
	j.State.Placement = j.State.Placement.Clone()
	j.Est.Speedup = append([]float64(nil), j.Est.Speedup...)
	return j, true
}

// Len returns the number of live jobs.
func (c *Core) Len() int { return len(c.jobs) }

// sortedJobs returns the live jobs in model.Before order. The slice is
// the core's: callers must not keep or modify it.
func (c *Core) sortedJobs() []*jobEntry { return c.order }

// add adds a new job (its name is not in c.jobs).
func (c *Core) add(e *jobEntry) {
	c.jobs[e.job.Spec.Name] = e
	k, _ := slices.BinarySearchFunc(c.order, e, cmpEntries)
	c.order = slices.Insert(c.order, k, e)
}

// cmpEntries orders jobs by model.Before. Names are unique, so it is a
// total order.
func cmpEntries(a, b *jobEntry) int {
	switch {
	case model.Before(&a.job, &b.job):
		return -1
	case model.Before(&b.job, &a.job):
		return 1
	}
	return 0
}

// Snapshot returns the cycle input as of now (after Advance). It shares
// no memory with the core.
func (c *Core) Snapshot(now time.Time) *model.Snapshot { return c.snapshot(now, false) }

// snapshot is Snapshot; with share, the jobs' placements and speedup
// curves are the core's own, not copies. The core never modifies those in
// place (record, RemoveNode and SetEstimates replace them), so a cycle,
// whose allocator and placer must not modify the snapshot, can share them
// and save two allocations per job.
func (c *Core) snapshot(now time.Time, share bool) *model.Snapshot {
	c.Advance(now)
	snap := &model.Snapshot{Now: now, GPUType: c.cfg.GPUType}
	snap.Nodes = c.Nodes()
	entries := c.sortedJobs()
	cordonedCapacity(snap.Nodes, entries)
	snap.Jobs = make([]model.Job, len(entries))
	for i, e := range entries {
		snap.Jobs[i] = e.job
		if !share {
			j := &snap.Jobs[i]
			j.State.Placement = j.State.Placement.Clone()
			j.Est.Speedup = append([]float64(nil), j.Est.Speedup...)
		}
	}
	return snap
}

// Cycle runs one scheduling cycle at now and applies its decisions. Within
// the rate limit (before NextFull) the cycle is limited: it decides as
// any cycle does, applies only the starts of waiting jobs that fit in the
// GPUs free now, in the allocator's order, and reports the rest as
// Deferred; the cycle the rate limit allows decides again.
func (c *Core) Cycle(ctx context.Context, now time.Time) (rep CycleReport, err error) {
	if c.cfg.Stopwatch != nil {
		start := c.cfg.Stopwatch.Now()
		defer func() { rep.Duration = c.cfg.Stopwatch.Since(start) }()
	}
	defer func() {
		if err != nil || rep.FailedActions > 0 {
			c.failStreak++
		} else {
			c.failStreak = 0
		}
	}()
	// 1. Snapshot.
	snap := c.snapshot(now, true)
	rep = CycleReport{Time: now, Jobs: len(snap.Jobs), GPUs: snap.TotalGPUs()}
	rep.Limited = now.Before(c.NextFull())
	var owed []string
	if r, ok := c.cfg.Allocator.(algorithm.Reclaimer); ok {
		owed = r.Reclaim(snap.Capacity(), func(yield func(*model.Job) bool) {
			for i := range snap.Jobs {
				if !yield(&snap.Jobs[i]) {
					return
				}
			}
		})
		if rep.Limited && len(owed) > 0 && !slices.Equal(owed, c.lastOwed) {
			rep.Limited, rep.Reclaim = false, true
		}
	}
	c.dirty = false
	c.startable = nil
	c.reclaim = nil
	c.cycled = true
	c.lastCycle = now
	if !rep.Limited {
		c.lastOwed = owed
		c.lastFull = now
		c.deferred = false
		c.deferredStarts = nil
	}

	// 2. Requeue: multi-level algorithms move jobs between queues first.
	if pr, ok := c.cfg.Allocator.(algorithm.Prioritizer); ok {
		changes := pr.Requeue(snap)
		for _, ch := range changes {
			e, ok := c.jobs[ch.Job]
			if !ok {
				return rep, fmt.Errorf("cycle: requeue: job %s: %w", ch.Job, ErrUnknownJob)
			}
			st := &e.job.State
			st.Queue = ch.Queue
			st.QueueSince = now
			if ch.Queue == 0 {
				st.QueueService = 0
				st.QueueRunSeconds = 0
			}
		}
		if len(changes) > 0 {
			rep.QueueChanges = len(changes)
			snap = c.snapshot(now, true)
		}
	}

	// 3. Allocate and check the invariants before anything is applied.
	fitWorkers(snap)
	rep.Algorithm = c.cfg.Allocator.Name()
	var allocStart time.Time
	if c.cfg.Stopwatch != nil {
		allocStart = c.cfg.Stopwatch.Now()
	}
	alloc, err := c.cfg.Allocator.Allocate(snap)
	if c.cfg.Stopwatch != nil {
		rep.AllocateDuration = c.cfg.Stopwatch.Since(allocStart)
	}
	if err != nil {
		return rep, fmt.Errorf("cycle: allocate with %s: %w", c.cfg.Allocator.Name(), err)
	}
	if err := model.CheckAllocation(snap, alloc); err != nil {
		return rep, fmt.Errorf("cycle: %s: %w", c.cfg.Allocator.Name(), err)
	}
	if alloc.Order == nil || len(alloc.Order) != len(snap.Jobs) {
		alloc.Order = completeOrder(snap, alloc.Order)
	}
	rep.Allocated = alloc.Total()
	rep.Order = alloc.Order

	// 4. Place.
	var placeStart time.Time
	if c.cfg.Stopwatch != nil {
		placeStart = c.cfg.Stopwatch.Now()
	}
	res, err := c.cfg.Placer.Place(snap, alloc)
	if c.cfg.Stopwatch != nil {
		rep.PlaceDuration = c.cfg.Stopwatch.Since(placeStart)
	}
	if err != nil {
		return rep, fmt.Errorf("cycle: place with %s: %w", c.cfg.Placer.Name(), err)
	}
	if err := placement.Check(snap, alloc, res); err != nil {
		return rep, fmt.Errorf("cycle: placement by %s: %w", c.cfg.Placer.Name(), err)
	}
	rep.Unplaced = res.Unplaced
	rep.Spread = placement.SpreadOf(snap, res.Placement)
	rep.Stranded = placement.UnusableFreeGPUs(snap, alloc, res)
	for _, u := range res.Unplaced {
		c.log.Warn("job not placed", "job", u.Job, "gpus", u.GPUs, "reason", u.Reason)
	}

	// 5. Diff and apply: halt -> shrink -> migrate -> start -> grow; a
	// limited cycle applies only the starts that fit in free GPUs.
	rep.Actions = diff(snap, res.Placement)
	if rep.Limited {
		rep.Actions, rep.Deferred = startsOnFreeGPUs(snap, rep.Actions, alloc.Order)
		c.deferred = len(rep.Deferred) > 0
		c.deferredStarts = nil
		for _, a := range rep.Deferred {
			if a.Kind == Start {
				if c.deferredStarts == nil {
					c.deferredStarts = map[string]bool{}
				}
				c.deferredStarts[a.Job] = true
			}
		}
	}
	errs := c.applyAll(ctx, rep.Actions)
	for i, a := range rep.Actions {
		if err := errs[i]; err != nil {
			rep.FailedActions++
			c.markDirty()
			c.log.Error("apply action", "action", a.Kind.String(), "job", a.Job, "err", err)
			continue
		}
		c.record(now, a)
		rep.Migrated += a.Moved
	}
	return rep, nil
}

// applyAll applies actions through the port kind by kind, in order (all
// halts finish before the first shrink, and so on), up to
// Config.ApplyParallelism actions of one kind at a time. It returns each
// action's error; which actions failed does not depend on timing.
func (c *Core) applyAll(ctx context.Context, actions []Action) []error {
	errs := make([]error, len(actions))
	par := max(c.cfg.ApplyParallelism, 1)
	for start := 0; start < len(actions); {
		end := start
		for end < len(actions) && actions[end].Kind == actions[start].Kind {
			end++
		}
		if par == 1 || end-start == 1 {
			for i := start; i < end; i++ {
				errs[i] = c.cfg.Port.Apply(ctx, actions[i])
			}
		} else {
			var wg sync.WaitGroup
			sem := make(chan struct{}, par)
			for i := start; i < end; i++ {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					errs[i] = c.cfg.Port.Apply(ctx, actions[i])
					<-sem
				}()
			}
			wg.Wait()
		}
		start = end
	}
	return errs
}

// startsOnFreeGPUs splits a plan into the starts that use only GPUs free
// in snap, taken in the allocator's order (order), and the rest. A start
// that needs GPUs a running job holds, even those the plan frees by
// shrinking it, is deferred whole: a job starts with the workers the
// allocator gave it or not at all.
func startsOnFreeGPUs(snap *model.Snapshot, actions []Action, order []string) (apply, deferred []Action) {
	free := make(map[string]int, len(snap.Nodes))
	for _, n := range snap.Nodes {
		free[n.Name] = n.GPUs
	}
	per := make(map[string]int, len(snap.Jobs))
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		per[j.Spec.Name] = j.Spec.PerWorker()
		for _, nw := range j.State.Placement {
			free[nw.Node] -= nw.Workers * per[j.Spec.Name]
		}
	}
	rank := make(map[string]int, len(order))
	for i, name := range order {
		rank[name] = i
	}
	var starts []int
	for i, a := range actions {
		if a.Kind == Start {
			starts = append(starts, i)
		}
	}
	slices.SortStableFunc(starts, func(a, b int) int { return cmp.Compare(rank[actions[a].Job], rank[actions[b].Job]) })
	ok := make([]bool, len(actions))
	for _, i := range starts {
		to, g := actions[i].To, max(per[actions[i].Job], 1)
		if !slices.ContainsFunc(to, func(nw model.NodeWorkers) bool { return nw.Workers*g > free[nw.Node] }) {
			for _, nw := range to {
				free[nw.Node] -= nw.Workers * g
			}
			ok[i] = true
		}
	}
	for i, a := range actions {
		if ok[i] {
			apply = append(apply, a)
		} else {
			deferred = append(deferred, a)
		}
	}
	return apply, deferred
}

// completeOrder appends jobs an allocator left out of its order, in
// snapshot order, so placers always see every job.
func completeOrder(snap *model.Snapshot, order []string) []string {
	seen := make(map[string]bool, len(order))
	out := make([]string, 0, len(snap.Jobs))
	for _, n := range order {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for i := range snap.Jobs {
		if n := snap.Jobs[i].Spec.Name; !seen[n] {
			out = append(out, n)
		}
	}
	return out
}

// record updates a job's state after its action was applied.
func (c *Core) record(now time.Time, a Action) {
	e, ok := c.jobs[a.Job]
	if !ok {
		return
	}
	st := &e.job.State
	st.Placement = a.To.Clone()
	st.PrevGPUs = st.GPUs
	st.GPUs = a.To.Workers() * e.job.Spec.PerWorker()
	st.LastChange = now
	if st.GPUs == 0 {
		st.Status = model.StatusWaiting
		st.WaitingSince = now
		st.Placement = nil
		return
	}
	if st.FirstStart.IsZero() {
		st.FirstStart = now
	} else {
		st.Restarts++
	}
	st.Status = model.StatusRunning
	st.WaitingSince = time.Time{}
}

// diff turns the change from the snapshot's placements to the new ones
// into actions, in apply order.
func diff(snap *model.Snapshot, next model.Placement) []Action {
	var buckets [Grow + 1][]Action
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		from := j.State.Placement
		to := next[j.Spec.Name]
		if from.Equal(to) || (from.Workers() == 0 && to.Workers() == 0) {
			continue
		}
		a := Action{Job: j.Spec.Name, From: from.Clone(), To: to.Clone(), Moved: moved(from, to)}
		switch f, t := from.Workers(), to.Workers(); {
		case t == 0:
			a.Kind = Halt
		case f == 0:
			a.Kind = Start
		case t < f:
			a.Kind = Shrink
		case t > f:
			a.Kind = Grow
		default:
			a.Kind = Migrate
		}
		buckets[a.Kind] = append(buckets[a.Kind], a)
	}
	var out []Action
	for _, b := range buckets {
		out = append(out, b...)
	}
	return out
}

// moved counts workers that change node: workers placed on a node beyond
// what the job had there, less the growth of the job.
func moved(from, to model.JobPlacement) int {
	if from.Workers() == 0 || to.Workers() == 0 {
		return 0
	}
	old := map[string]int{}
	for _, nw := range from {
		old[nw.Node] += nw.Workers
	}
	next := map[string]int{}
	for _, nw := range to {
		next[nw.Node] += nw.Workers
	}
	added := 0
	for node, w := range next {
		added += max(0, w-old[node])
	}
	return max(0, added-max(0, to.Workers()-from.Workers()))
}

// cordonedCapacity shrinks every cordoned node to the GPUs its workers
// use, so that jobs keep their workers there and no new ones arrive.
// fitWorkers bounds, for the allocator, the worker range of each job
// whose workers hold several GPUs by the workers of that size the nodes
// hold, never below its minimum. The algorithms count GPUs, not where
// workers fit: on 8 and 4-GPU nodes, a job of workers of 8 given more of
// them than the 8-GPU nodes hold was left unplaced whole, and waited for
// ever though fewer would run. A job whose minimum the nodes do not hold
// keeps it, and waits Unschedulable. Workers of one GPU are untouched:
// the algorithms never hand out more than the cluster's GPUs. snap's jobs
// are the cycle's copies; the jobs' specs are not changed.
func fitWorkers(snap *model.Snapshot) {
	var fit map[int]int // GPUs per worker -> workers the nodes hold
	for i := range snap.Jobs {
		s := &snap.Jobs[i].Spec
		g := s.PerWorker()
		if g <= 1 {
			continue
		}
		if fit == nil {
			fit = map[int]int{}
		}
		n, ok := fit[g]
		if !ok {
			for _, nd := range snap.Nodes {
				n += nd.GPUs / g
			}
			fit[g] = n
		}
		s.MaxWorkers = max(min(s.MaxWorkers, n), s.MinWorkers)
		s.RequestedWorkers = max(min(s.RequestedWorkers, n), s.MinWorkers)
	}
}

func cordonedCapacity(nodes []model.Node, jobs []*jobEntry) {
	if !slices.ContainsFunc(nodes, func(n model.Node) bool { return n.Cordoned }) {
		return
	}
	used := map[string]int{}
	for _, e := range jobs {
		for _, nw := range e.job.State.Placement {
			used[nw.Node] += nw.Workers * e.job.Spec.PerWorker()
		}
	}
	for i := range nodes {
		if nodes[i].Cordoned {
			nodes[i].GPUs = min(nodes[i].GPUs, used[nodes[i].Name])
		}
	}
}

// Nodes returns the nodes as added (cordoned ones with all their GPUs),
// sorted by index.
func (c *Core) Nodes() []model.Node {
	if c.byIndex == nil {
		c.byIndex = make([]model.Node, 0, len(c.nodes))
		for _, n := range c.nodes {
			c.byIndex = append(c.byIndex, n)
		}
		slices.SortFunc(c.byIndex, func(a, b model.Node) int { return cmp.Compare(a.Index, b.Index) })
	}
	return slices.Clone(c.byIndex)
}
