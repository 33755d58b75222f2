package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/estimate"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
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

// Backend is where jobs run: the simulated cluster or Kubernetes.
type Backend interface {
	scheduler.Port
	// Nodes returns the GPU type's nodes.
	Nodes() []model.Node
	// Track makes a job known with its work (model name, epochs, GPUs per
	// worker, fraction done) before it is started.
	Track(name, app string, epochs, perWorker int, progress float64) error
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
	// HoldClock, if set, stops Clock at a time until released (a simulated
	// cluster's clock.Scaled.HoldAt): cycles then run at their due times
	// and take no time on the cluster's clock, however late or slow they
	// are on a busy machine (scheduler.Loop.Hold). Nil on a real cluster.
	HoldClock func(at time.Time) (release func())
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
	// DefaultNamespace is the namespace of a job whose record names none,
	// as the API takes it (the server passes --namespace on Kubernetes,
	// else jobspec.DefaultNamespace): its per-job metrics carry it.
	DefaultNamespace string
	// MaxHistories is the most applications whose measured history the
	// store keeps for this GPU type (DefaultMaxHistories if zero): see
	// learner.save.
	MaxHistories int
}

// DefaultMaxHistories bounds the applications' histories kept per GPU
// type. Applications are free-form annotations, so without a bound their
// histories (each up to store.MaxProgressBytes) would grow with every
// name ever used; a team's recurring applications number in the tens or
// hundreds.
const DefaultMaxHistories = 1000

// Service is one GPU type's scheduler service. It wires the pieces (files
// named for them) and runs the loop that serializes their work: recovery
// (recovery.go), jobs entering and leaving the core (jobs.go), status
// writes and their conflicts (persist.go), the queue's notifications and
// the resync (notifications.go), the cluster's reports of ended jobs
// (ended.go), nodes (nodes.go), settings (settings.go), health
// (health.go) and the estimates (estimates.go).
type Service struct {
	cfg    Config
	log    *slog.Logger
	health *health
	// ended is filled by the cluster's reports from any goroutine.
	ended endedJobs

	// Owned by the loop goroutine once Run started.
	core *scheduler.Core
	loop *scheduler.Loop
	// learn holds the estimator and the applications' histories.
	learn learner
	// jobs are the live jobs the core holds.
	jobs     map[string]*tracked
	settings settings
	statuses statuses
	nodes    nodes
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
	log = log.With("gpuType", cfg.GPUType)
	h := &health{gpuType: cfg.GPUType, metrics: cfg.Metrics, wall: cfg.WallClock}
	return &Service{
		cfg: cfg, log: log, health: h,
		learn: learner{est: estimate.NewOnline(estimate.Options{StepModels: true}), store: cfg.Store, gpuType: cfg.GPUType,
			maxHistories: cfg.MaxHistories, log: log, histories: map[string]bool{}},
		jobs: map[string]*tracked{},
		settings: settings{algorithms: cfg.Algorithms, defaultAlgorithm: cfg.DefaultAlgorithm,
			defaultRateLimit: cfg.DefaultRateLimit, log: log},
		statuses: statuses{gpuType: cfg.GPUType, store: cfg.Store, health: h, metrics: cfg.Metrics, log: log,
			wall: cfg.WallClock, softPersist: cfg.SoftPersist, final: map[string]store.StatusWrite{}},
		nodes: nodes{backend: cfg.Backend, log: log},
	}, nil
}

// Health is nil while the scheduler works: it has recovered its jobs, its
// loop is not stuck in one cycle or call for longer than wedgeAfter, and
// its last store write succeeded. Otherwise it says what is wrong; the
// API's /readyz reports it.
func (s *Service) Health() error {
	// s.loop is read only once ready: start sets it before.
	return s.health.err(func() time.Duration { return s.loop.Busy() })
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
	s.health.ready.Store(true)
	s.log.Info("scheduler ready", "algorithm", algo, "jobs", jobs)
	err := <-errc
	s.health.ready.Store(false)
	cancel()
	for range len(workers) - 1 {
		<-errc
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// afterCycle records a cycle: metrics, fresh estimates for the next cycle,
// and every changed job status. Loop goroutine only.
func (s *Service) afterCycle(ctx context.Context, rep scheduler.CycleReport, err error) {
	gt := s.cfg.GPUType
	m := s.cfg.Metrics
	s.statuses.cycled(rep.Time)
	m.Reschedules.WithLabelValues(gt).Inc()
	m.LastReschedule.WithLabelValues(gt).Set(unixSeconds(s.cfg.WallClock.Now()))
	m.RescheduleDuration.WithLabelValues(gt).Observe(rep.Duration.Seconds())
	m.AllocatorDuration.WithLabelValues(gt, rep.Algorithm).Observe(rep.AllocateDuration.Seconds())
	m.PlacementDuration.WithLabelValues(gt).Observe(rep.PlaceDuration.Seconds())
	m.WorkersMigrated.WithLabelValues(gt).Add(float64(rep.Migrated))
	m.LaunchersRestarted.WithLabelValues(gt).Add(float64(len(rep.Actions) - rep.FailedActions))
	if err == nil {
		m.GPUsStranded.WithLabelValues(gt).Set(float64(rep.Stranded))
	}
	if err != nil {
		s.log.Error("scheduling cycle failed", "err", err)
	} else if len(rep.Actions) > 0 {
		s.log.Info("cycle", "jobs", rep.Jobs, "allocated", rep.Allocated, "gpus", rep.GPUs,
			"actions", len(rep.Actions), "migrated", rep.Migrated, "failed", rep.FailedActions,
			"limited", rep.Limited, "deferred", len(rep.Deferred))
		for _, a := range rep.Actions {
			s.log.Debug("action", "job", a.Job, "kind", a.Kind.String(), "from", a.From.Workers(), "to", a.To.Workers(),
				"moved", a.Moved, "at", rep.Time)
		}
	}
	s.estimate()
	s.persist(ctx, rep.Time, rep.Order)
}

// beforeCycle hands the core fresh estimates right before a cycle, from
// the running jobs' latest reports, as the simulator estimates before each
// of its cycles: a cycle then decides on what was measured up to its
// time, not up to the cycle before.
func (s *Service) beforeCycle(ctx context.Context, now time.Time) {
	s.readProgress(ctx, now)
	s.estimate()
}

// unixSeconds is t as fractional Unix seconds, as Prometheus timestamps are.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
