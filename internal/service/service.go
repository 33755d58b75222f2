package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/store"
)

// DefaultResync is the wall time between two reconciliations of the store
// with the core.
const DefaultResync = 10 * time.Second

// DefaultSoftPersist is the least wall time between two writes of a job's
// status that only change what users see (see Config.SoftPersist).
const DefaultSoftPersist = 2 * time.Second

// wedgeAfter is how long one cycle or call may keep the scheduler loop
// busy before readiness reports the scheduler wedged. Cycles take
// milliseconds; applying a burst of actions to Kubernetes takes seconds.
const wedgeAfter = 2 * time.Minute

// Backend is where jobs run: the simulated cluster or Kubernetes.
type Backend interface {
	scheduler.Port
	// Nodes returns the GPU type's nodes.
	Nodes() []model.Node
	// Track makes a job known with its work (model name, epochs, fraction
	// done) before it is started.
	Track(name, app string, epochs int, progress float64) error
	// Forget drops a job that finished or was canceled and halted.
	Forget(name string)
	// Progress returns the fraction of a job's work done.
	Progress(name string) float64
	// Run reports jobs that finished by themselves until ctx ends.
	Run(ctx context.Context, onDone func(name string, status model.Status)) error
}

// NodeSource is a Backend whose nodes change while it runs (Kubernetes).
// Each receive from NodesChanged means Nodes may answer differently.
type NodeSource interface {
	NodesChanged() <-chan struct{}
}

// UnreadyNodes is a Backend that also knows the GPU type's nodes that
// are not ready (Kubernetes), which Nodes leaves out: the scheduler
// status lists them so that people see them.
type UnreadyNodes interface {
	NotReadyNodes() []model.Node
}

// Config configures a Service.
type Config struct {
	GPUType    string
	Store      store.Store
	Queue      queue.Queue
	Backend    Backend
	Algorithms *algorithm.Registry
	Placer     placement.Placer
	// DefaultAlgorithm and DefaultRateLimit apply when no setting is
	// stored (algorithm.DefaultName and scheduler.DefaultRateLimit if
	// empty or zero).
	DefaultAlgorithm string
	DefaultRateLimit time.Duration
	Tick             time.Duration
	// StartInterval is the core's least time between a cycle and the next
	// limited one, on Clock (scheduler.DefaultStartInterval if zero). It
	// exists to batch bursts of submissions, which arrive in wall time, so
	// a clock that runs S times faster than real time wants S times the
	// default: the server sets it so.
	StartInterval time.Duration
	// Clock is the scheduler's clock: job times, cycles, the rate limit.
	// It may run faster than real time (a simulated cluster).
	Clock clock.Clock
	// WallClock paces what happens in real time whatever Clock does: the
	// resync, retries of unhandled notifications and the wedge detection
	// of Health. Nil means the real clock.
	WallClock clock.WithTicker
	Metrics   *metrics.Metrics
	Logger    *slog.Logger
	// Resync is the wall time between reconciliations (DefaultResync if
	// zero).
	Resync time.Duration
	// SoftPersist is the least wall time between two writes of a job's
	// status that change only what is shown: queue position, estimated
	// start, estimate, progress (DefaultSoftPersist if zero; negative:
	// every change at once).
	SoftPersist time.Duration
	// ApplyParallelism is passed to the core (scheduler.Config): how many
	// actions of one kind a cycle applies at once. The Backend must be
	// safe for concurrent use when it is above 1.
	ApplyParallelism int
	// MaxHistories is the most applications whose measured history the
	// store keeps for this GPU type (DefaultMaxHistories if zero): see
	// saveHistory.
	MaxHistories int
}

// DefaultMaxHistories bounds the applications' histories kept per GPU
// type. Applications are free-form annotations, so without a bound their
// histories (each up to store.MaxProgressBytes) would grow with every
// name ever used; a team's recurring applications number in the tens or
// hundreds.
const DefaultMaxHistories = 1000

// Service is one GPU type's scheduler service.
type Service struct {
	cfg Config
	log *slog.Logger
	// ready: the service has recovered its state and is consuming
	// notifications (Health's first condition).
	ready atomic.Bool
	// storeErr is the last failed store write (nil after a success);
	// Health reports it.
	storeErr atomic.Pointer[storeFailure]

	// Owned by the loop goroutine once Run started.
	core      *scheduler.Core
	loop      *scheduler.Loop
	collector *collector.Collector
	// jobs are the live jobs the core holds.
	jobs map[string]*tracked
	// final are terminal statuses of jobs this service finished that
	// are not in the store yet; they are retried at every persist, and a
	// job listed here is never admitted again.
	final     map[string]store.StatusWrite
	settings  store.Settings
	cycles    int64
	lastCycle time.Time
	// status is the scheduler status last written (zero before the first).
	status store.SchedulerStatus
	// histories are the applications whose history the store keeps for
	// this GPU type: those listed at start and those saved since.
	// historiesFull is set once a new one was not kept (logged once).
	histories     map[string]bool
	historiesFull bool

	// ended are the jobs the cluster reported done and the loop has not
	// finished yet, with their status (see onDone). Any goroutine.
	endedMu sync.Mutex
	ended   map[string]model.Status
}

// tracked is what the service keeps of a live job besides the core.
type tracked struct {
	// app is the job's application (see application): jobs of one share
	// what they measured.
	app string
	// revision is the StatusRevision of the stored record, as last read or
	// written: the next status write is conditional on it.
	revision int64
	// saved is the status last written (Updated zeroed); written says
	// whether there is one, so an unchanged status is not written again.
	saved   store.JobStatus
	written bool
	// allocations is the job's allocation history as last read or
	// written; the next status write appends to it.
	allocations []store.Allocation
	// nextSoft is the wall time from which a change of only the shown
	// fields is written (see due).
	nextSoft time.Time
	// progress is the job's reports as last read from the store (nil if
	// it never reported), at progressRevision.
	progress         *progress.State
	progressRevision int64
}

type storeFailure struct {
	since time.Time
	err   error
}

// New checks the configuration.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.GPUType == "":
		return nil, errors.New("scheduler service: empty GPU type")
	case cfg.Store == nil || cfg.Queue == nil || cfg.Backend == nil:
		return nil, fmt.Errorf("scheduler service %s: store, queue and cluster are required", cfg.GPUType)
	case cfg.Algorithms == nil || cfg.Placer == nil || cfg.Clock == nil || cfg.Metrics == nil:
		return nil, fmt.Errorf("scheduler service %s: algorithms, placer, clock and metrics are required", cfg.GPUType)
	}
	if cfg.DefaultAlgorithm == "" {
		cfg.DefaultAlgorithm = algorithm.DefaultName
	}
	if _, err := cfg.Algorithms.NewFromMap(cfg.DefaultAlgorithm, nil); err != nil {
		return nil, fmt.Errorf("scheduler service %s: default algorithm: %w", cfg.GPUType, err)
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.SoftPersist == 0 {
		cfg.SoftPersist = DefaultSoftPersist
	}
	if cfg.WallClock == nil {
		cfg.WallClock = clock.RealClock{}
	}
	if cfg.MaxHistories <= 0 {
		cfg.MaxHistories = DefaultMaxHistories
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{
		cfg: cfg, log: log.With("gpuType", cfg.GPUType),
		collector: collector.New(),
		jobs:      map[string]*tracked{},
		final:     map[string]store.StatusWrite{},
		histories: map[string]bool{},
		ended:     map[string]model.Status{},
	}, nil
}

// Health is nil while the scheduler works: it has recovered its jobs, its
// loop is not stuck in one cycle or call for longer than wedgeAfter, and
// its last store write succeeded. Otherwise it says what is wrong; the
// API's /readyz reports it.
func (s *Service) Health() error {
	gt := s.cfg.GPUType
	if !s.ready.Load() {
		return fmt.Errorf("scheduler %s: not running (recovering its jobs from the store, or stopped)", gt)
	}
	if busy := s.loop.Busy(); busy > wedgeAfter {
		return fmt.Errorf("scheduler %s: busy for %s in one cycle or call (more than %s): it may be wedged",
			gt, busy.Round(time.Second), wedgeAfter)
	}
	if f := s.storeErr.Load(); f != nil {
		return fmt.Errorf("scheduler %s: store writes failing since %s: %v", gt, f.since.UTC().Format(time.RFC3339), f.err)
	}
	return nil
}

// storeWrote records the outcome of a store write for Health.
func (s *Service) storeWrote(err error) {
	if err == nil {
		s.storeErr.Store(nil)
		return
	}
	s.cfg.Metrics.StoreWriteErrors.WithLabelValues(s.cfg.GPUType).Inc()
	if s.storeErr.Load() == nil {
		s.storeErr.Store(&storeFailure{since: s.cfg.WallClock.Now(), err: err})
	}
}

// Run recovers the GPU type's state from the store and schedules until ctx
// ends. It returns the first error that stops it.
func (s *Service) Run(ctx context.Context) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	algo, jobs := s.core.Allocator().Name(), s.core.Len()
	// The counters exist from the start (at 0), and the last cycle is the
	// start until the first, so that alerts see them.
	s.cfg.Metrics.Zero(s.cfg.GPUType)
	s.cfg.Metrics.LastReschedule.WithLabelValues(s.cfg.GPUType).Set(unixSeconds(s.cfg.WallClock.Now()))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := []func(context.Context) error{
		s.loop.Run,
		func(ctx context.Context) error {
			return s.cfg.Backend.Run(ctx, func(name string, status model.Status) { s.onDone(ctx, name, status) })
		},
		s.consume,
		s.resyncEvery,
	}
	if ns, ok := s.cfg.Backend.(NodeSource); ok {
		workers = append(workers, func(ctx context.Context) error { return s.watchNodes(ctx, ns) })
	}
	errc := make(chan error, len(workers))
	for _, w := range workers {
		go func() { errc <- w(ctx) }()
	}
	s.ready.Store(true)
	s.log.Info("scheduler ready", "algorithm", algo, "jobs", jobs)
	err := <-errc
	s.ready.Store(false)
	cancel()
	for range len(workers) - 1 {
		<-errc
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// start builds the core from stored settings, nodes and live jobs.
func (s *Service) start(ctx context.Context) error {
	rec, err := s.cfg.Store.GetScheduler(ctx, s.cfg.GPUType)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case errors.Is(err, store.ErrDamaged):
		s.log.Error("stored scheduler settings unreadable; running on the defaults until they are set again", "err", err)
		rec = store.Scheduler{}
	case err != nil:
		return fmt.Errorf("scheduler %s: load settings: %w", s.cfg.GPUType, err)
	}
	s.settings = rec.Settings
	alloc := s.allocator(rec.Settings)
	core, err := scheduler.NewCore(scheduler.Config{
		GPUType: s.cfg.GPUType, Allocator: alloc, Placer: s.cfg.Placer, Port: s.cfg.Backend,
		RateLimit: s.rateLimit(rec.Settings), StartInterval: s.cfg.StartInterval, Tick: s.cfg.Tick, Logger: s.log, Stopwatch: clock.RealClock{},
		ApplyParallelism: s.cfg.ApplyParallelism,
	})
	if err != nil {
		return fmt.Errorf("scheduler %s: %w", s.cfg.GPUType, err)
	}
	s.core = core
	now := s.cfg.Clock.Now()
	for _, n := range s.cfg.Backend.Nodes() {
		if err := core.AddNode(now, n); err != nil {
			return fmt.Errorf("scheduler %s: %w", s.cfg.GPUType, err)
		}
	}
	jobs, err := s.cfg.Store.ListJobs(ctx, store.ListOptions{GPUType: s.cfg.GPUType, Live: true})
	if err != nil {
		return fmt.Errorf("scheduler %s: recover jobs: %w", s.cfg.GPUType, err)
	}
	// The loop does not run yet: this goroutine owns the core, and the
	// list is as fresh as any read.
	for _, j := range jobs {
		s.reconcile(ctx, now, j)
	}
	s.gpusPerNode()
	s.loadHistories(ctx)
	s.log.Info("recovered jobs from the store", "live", len(jobs), "restored", core.Len())
	s.loop = scheduler.NewLoop(core, s.cfg.Clock, s.cfg.WallClock)
	s.loop.OnCycle = s.afterCycle
	return nil
}

// allocator builds the stored algorithm, or the default when the stored
// one cannot be built (an algorithm removed since, say). New checked that
// the default builds.
func (s *Service) allocator(set store.Settings) algorithm.Allocator {
	name := set.Algorithm
	if name == "" {
		name = s.cfg.DefaultAlgorithm
	}
	a, err := s.cfg.Algorithms.NewFromMap(name, set.Params)
	if err == nil {
		return a
	}
	s.log.Error("stored algorithm unusable; using the default", "algorithm", name, "err", err)
	a, _ = s.cfg.Algorithms.NewFromMap(s.cfg.DefaultAlgorithm, nil)
	return a
}

func (s *Service) rateLimit(set store.Settings) time.Duration {
	if set.RateLimit != 0 {
		return set.RateLimit // negative: no rate limit
	}
	if s.cfg.DefaultRateLimit != 0 {
		return s.cfg.DefaultRateLimit
	}
	return scheduler.DefaultRateLimit
}

// reconcile makes the core agree with a stored job: admit a live job it
// does not hold, cancel one whose deletion was requested, apply a
// priority change, drop one that ended elsewhere, set aside a record that
// cannot be restored. j must be fresh: read on the loop goroutine (or
// before the loop starts) after every write this service made, so that a
// job this service finished is never admitted again from an older copy.
func (s *Service) reconcile(ctx context.Context, now time.Time, j store.Job) {
	name := j.Name
	if _, pending := s.final[name]; pending {
		return // finished here; its terminal status is on its way to the store
	}
	t, held := s.jobs[name]
	switch {
	case j.Unreadable != "":
		if held {
			s.drop(ctx, now, name)
		}
		s.setAside(ctx, now, name, "the stored record cannot be decoded: "+j.Unreadable)
	case j.Status.State.Status.Done():
		if held {
			s.log.Warn("job ended elsewhere; dropping it", "job", name, "status", string(j.Status.State.Status))
			s.drop(ctx, now, name)
		}
	case j.DeleteRequested:
		if held {
			s.finish(ctx, now, name, model.StatusCanceled)
		} else {
			s.saveTerminal(ctx, now, j, model.StatusCanceled)
		}
	case held:
		if cur, _ := s.core.Job(name); cur.Spec.Priority != j.Spec.Priority {
			if err := s.core.SetPriority(now, name, j.Spec.Priority); err != nil {
				s.log.Warn("set priority", "job", name, "err", err)
			}
		}
		if j.StatusRevision > t.revision {
			// Another writer changed the status: write ours over it at
			// the next persist.
			t.revision, t.written = j.StatusRevision, false
		}
		s.observeProgress(t, j)
	default:
		s.admit(ctx, now, j)
		if t, ok := s.jobs[name]; ok {
			s.observeProgress(t, j)
		}
	}
}

// admit brings a live job into the core: a new one waits in queue 0; one
// the scheduler had seen before resumes with its saved state. A record
// that cannot be admitted is set aside.
func (s *Service) admit(ctx context.Context, now time.Time, j store.Job) {
	name := j.Name
	if j.Spec.GPUType != s.cfg.GPUType {
		s.log.Warn("job of another GPU type; ignoring it", "job", name, "jobGPUType", j.Spec.GPUType)
		return
	}
	if err := j.Spec.Validate(); err != nil {
		s.setAside(ctx, now, name, "its spec is invalid: "+err.Error())
		return
	}
	if err := s.cfg.Backend.Track(name, j.Model, j.Spec.Epochs, j.Status.Progress); err != nil {
		s.setAside(ctx, now, name, "it cannot run on this cluster: "+err.Error())
		return
	}
	var err error
	if st := j.Status.State.Status; st == "" || st == model.StatusSubmitted {
		err = s.core.Submit(now, j.Spec)
	} else {
		err = s.restore(ctx, now, j)
	}
	if err != nil {
		s.cfg.Backend.Forget(name)
		s.setAside(ctx, now, name, "it cannot be restored: "+err.Error())
		return
	}
	s.jobs[name] = &tracked{app: application(j), revision: j.StatusRevision, allocations: j.Status.Allocations}
}

// restore brings back a job the scheduler had seen before a restart, with
// its queue, attained service and time counters. A job that held GPUs is
// started again on the same nodes (the cluster pays its restart cost);
// if that fails, it waits for the next cycle.
func (s *Service) restore(ctx context.Context, now time.Time, j store.Job) error {
	st := j.Status.State
	est := j.Status.Est
	if len(est.Speedup) == 0 && est.RemainingSeconds == 0 {
		est.RemainingSeconds = -1
	}
	if len(st.Placement) > 0 {
		a := scheduler.Action{Kind: scheduler.Start, Job: j.Name, To: st.Placement}
		if err := s.cfg.Backend.Apply(ctx, a); err != nil {
			s.log.Warn("cannot resume job on its last placement; it waits", "job", j.Name, "err", err)
			st.Placement, st.GPUs = nil, 0
		}
	}
	if st.GPUs == 0 && st.Status == model.StatusRunning {
		st.Status = model.StatusWaiting
		st.WaitingSince = now
	}
	return s.core.Restore(model.Job{Spec: j.Spec, State: st, Est: est})
}

// setAside marks a record that cannot be restored as Failed with why, so
// that one bad record never stops the others. A failed write is retried
// at the next resync, which finds the record live again.
func (s *Service) setAside(ctx context.Context, now time.Time, name, why string) {
	err := s.cfg.Store.SetAside(ctx, name, why, now)
	s.storeWrote(err)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("set aside a job record that cannot be restored; retrying at the next resync", "job", name, "reason", why, "err", err)
		return
	}
	s.cfg.Metrics.JobsSetAside.WithLabelValues(s.cfg.GPUType).Inc()
	s.log.Error("job record set aside as Failed: it cannot be restored", "job", name, "reason", why)
}

// unixSeconds is t as fractional Unix seconds, as Prometheus timestamps are.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
