package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/store"
)

// DefaultAlgorithm is the algorithm of a GPU type with no stored setting,
// as in the original.
const DefaultAlgorithm = "ElasticFIFO"

// DefaultResync is the wall time between two reconciliations of the store
// with the core.
const DefaultResync = 10 * time.Second

// Cluster is where jobs run: the simulated cluster or Kubernetes.
type Cluster interface {
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

// NodeSource is a Cluster whose nodes change while it runs (Kubernetes).
// Each receive from NodesChanged means Nodes may answer differently.
type NodeSource interface {
	NodesChanged() <-chan struct{}
}

// Estimator is a Cluster that measures jobs for the collector.
type Estimator interface {
	Observations() []collector.Observation
	Remaining(name string) (work float64, ok bool)
}

// Config configures a Service.
type Config struct {
	GPUType    string
	Store      store.Store
	Queue      queue.Queue
	Cluster    Cluster
	Algorithms *algorithm.Registry
	Placer     placement.Placer
	// DefaultAlgorithm and DefaultRateLimit apply when no setting is
	// stored.
	DefaultAlgorithm string
	DefaultRateLimit time.Duration
	Tick             time.Duration
	Clock            clock.Clock
	Metrics          *metrics.Metrics
	Logger           *slog.Logger
	// Resync is the wall time between reconciliations (DefaultResync if
	// zero).
	Resync time.Duration
	// ApplyParallelism is passed to the core (scheduler.Config): how many
	// actions of one kind a cycle applies at once. The Cluster must be
	// safe for concurrent use when it is above 1.
	ApplyParallelism int
}

// Service is one GPU type's scheduler service.
type Service struct {
	cfg   Config
	log   *slog.Logger
	ready atomic.Bool

	// Owned by the loop goroutine once Run started.
	core      *scheduler.Core
	loop      *scheduler.Loop
	collector *collector.Collector
	apps      map[string]string // job -> performance model
	saved     map[string]store.JobStatus
	settings  store.Settings
	cycles    int64
	lastCycle time.Time
}

// New checks the configuration.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.GPUType == "":
		return nil, errors.New("scheduler service: empty GPU type")
	case cfg.Store == nil || cfg.Queue == nil || cfg.Cluster == nil:
		return nil, fmt.Errorf("scheduler service %s: store, queue and cluster are required", cfg.GPUType)
	case cfg.Algorithms == nil || cfg.Placer == nil || cfg.Clock == nil || cfg.Metrics == nil:
		return nil, fmt.Errorf("scheduler service %s: algorithms, placer, clock and metrics are required", cfg.GPUType)
	}
	if cfg.DefaultAlgorithm == "" {
		cfg.DefaultAlgorithm = DefaultAlgorithm
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{
		cfg: cfg, log: log.With("gpuType", cfg.GPUType),
		collector: collector.New(),
		apps:      map[string]string{},
		saved:     map[string]store.JobStatus{},
	}, nil
}

// Ready reports whether the service has recovered its state and is
// consuming notifications.
func (s *Service) Ready() bool { return s.ready.Load() }

// Run recovers the GPU type's state from the store and schedules until ctx
// ends. It returns the first error that stops it.
func (s *Service) Run(ctx context.Context) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := []func(context.Context) error{
		s.loop.Run,
		func(ctx context.Context) error { return s.cfg.Cluster.Run(ctx, s.onDone) },
		s.consume,
		s.resyncEvery,
	}
	if ns, ok := s.cfg.Cluster.(NodeSource); ok {
		workers = append(workers, func(ctx context.Context) error { return s.watchNodes(ctx, ns) })
	}
	errc := make(chan error, len(workers))
	for _, w := range workers {
		go func() { errc <- w(ctx) }()
	}
	s.ready.Store(true)
	s.log.Info("scheduler ready", "algorithm", s.core.Allocator().Name(), "jobs", s.core.Len())
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
	case err != nil:
		return fmt.Errorf("scheduler %s: load settings: %w", s.cfg.GPUType, err)
	}
	s.settings = rec.Settings
	alloc := s.allocator(rec.Settings)
	core, err := scheduler.NewCore(scheduler.Config{
		GPUType: s.cfg.GPUType, Allocator: alloc, Placer: s.cfg.Placer, Port: s.cfg.Cluster,
		RateLimit: s.rateLimit(rec.Settings), Tick: s.cfg.Tick, Logger: s.log, Stopwatch: clock.RealClock{},
		ApplyParallelism: s.cfg.ApplyParallelism,
	})
	if err != nil {
		return fmt.Errorf("scheduler %s: %w", s.cfg.GPUType, err)
	}
	s.core = core
	now := s.cfg.Clock.Now()
	for _, n := range s.cfg.Cluster.Nodes() {
		if err := core.AddNode(now, n); err != nil {
			return fmt.Errorf("scheduler %s: %w", s.cfg.GPUType, err)
		}
	}
	jobs, err := s.cfg.Store.ListJobs(ctx, store.ListOptions{GPUType: s.cfg.GPUType, Live: true})
	if err != nil {
		return fmt.Errorf("scheduler %s: recover jobs: %w", s.cfg.GPUType, err)
	}
	restored := 0
	for _, j := range jobs {
		if s.reconcile(ctx, now, j) {
			restored++
		}
	}
	s.log.Info("recovered jobs from the store", "live", len(jobs), "restored", restored)
	s.loop = scheduler.NewLoop(core, s.cfg.Clock)
	s.loop.OnCycle = s.afterCycle
	s.loop.OnEventError = func(ev scheduler.Event, err error) {
		s.log.Warn("event rejected", "job", ev.Job, "err", err)
	}
	return nil
}

// allocator builds the stored algorithm, or the default when the stored
// one cannot be built (an algorithm removed since, say).
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
	a, err = s.cfg.Algorithms.NewFromMap(s.cfg.DefaultAlgorithm, nil)
	if err != nil {
		panic(fmt.Sprintf("default algorithm %s: %v", s.cfg.DefaultAlgorithm, err)) // a wiring bug, not input
	}
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
// does not hold, cancel one whose deletion was requested, apply a priority
// change. It runs on the loop goroutine (or before the loop starts) and
// reports whether the job is live in the core afterwards.
func (s *Service) reconcile(ctx context.Context, now time.Time, j store.Job) bool {
	name := j.Name
	cur, held := s.core.Job(name)
	switch {
	case j.Status.State.Status.Done():
		if held {
			s.finish(ctx, now, name, j.Status.State.Status)
		}
		return false
	case j.DeleteRequested:
		if held {
			s.finish(ctx, now, name, model.StatusCanceled)
		} else {
			s.saveTerminal(ctx, now, j, model.StatusCanceled)
		}
		return false
	case held:
		if cur.Spec.Priority != j.Spec.Priority {
			if err := s.core.SetPriority(now, name, j.Spec.Priority); err != nil {
				s.log.Warn("set priority", "job", name, "err", err)
			}
		}
		return true
	}
	if err := s.cfg.Cluster.Track(name, j.Model, j.Spec.Epochs, j.Status.Progress); err != nil {
		s.log.Error("job cannot run on this cluster; marking it failed", "job", name, "err", err)
		s.saveTerminal(ctx, now, j, model.StatusFailed)
		return false
	}
	s.apps[name] = j.Model
	var err error
	if st := j.Status.State.Status; st == "" || st == model.StatusSubmitted {
		err = s.core.Submit(now, j.Spec)
	} else {
		err = s.restore(ctx, now, j)
	}
	if err != nil {
		s.log.Error("admit job", "job", name, "err", err)
		s.cfg.Cluster.Forget(name)
		delete(s.apps, name)
		return false
	}
	return true
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
		if err := s.cfg.Cluster.Apply(ctx, a); err != nil {
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
