package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	k8sclock "k8s.io/utils/clock"

	"github.com/vodascheduler/voda/docs"
	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/clock"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/retention"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/service"
	"github.com/vodascheduler/voda/internal/store"
)

// server is one Run's parts.
type server struct {
	cfg      Config
	log      *slog.Logger
	store    store.Store
	queue    queue.Queue
	clock    *clock.Scaled
	algos    *algorithm.Registry
	placer   placement.Placer
	registry *prometheus.Registry
	metrics  *metrics.Metrics
	gpuTypes []string
	// applyParallelism is how many objects a cycle's actions of one kind
	// change at once.
	applyParallelism int
	running          schedulers
	wg               sync.WaitGroup
	errc             chan error // the first part that failed
}

// Run runs a server until ctx ends (then it returns nil) or one of its
// parts fails (then it returns that failure), and stops every part
// before it returns.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = scheduler.DefaultRateLimit // what the schedulers make of 0; the API shows it
	}
	placer, err := placement.Builtin().New(cfg.Placer, nil)
	if err != nil {
		return fmt.Errorf("--placer: %w", err)
	}
	quotas, err := readQuotas(cfg.QuotasFile, cfg.gpuTypes())
	if err != nil {
		return err
	}
	log := cmp.Or(cfg.Logger, slog.Default())
	st, err := store.Open(ctx, cfg.StoreURI, cfg.DataDir, store.WithLogger(log))
	if err != nil {
		return err
	}
	defer closeStore(st, log)
	if err := seedQuotas(ctx, st, quotas, log); err != nil {
		return err
	}
	q, err := queue.Open(ctx, cfg.QueueURL, log)
	if err != nil {
		return err
	}
	defer q.Close()
	clk, err := serverClock(ctx, st, cfg.Speed)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	m := metrics.NewWithOptions(reg, metrics.Options{NoJobSeries: cfg.NoJobMetrics})
	s := &server{cfg: cfg, log: log, store: st, queue: q, clock: clk, algos: algorithm.Builtin(), placer: placer,
		registry: reg, metrics: m, gpuTypes: cfg.gpuTypes(), applyParallelism: 1,
		running: schedulers{current: map[string]*service.Service{}, metrics: m}, errc: make(chan error, 1)}
	ctx, cancel := context.WithCancel(ctx)
	err = s.start(ctx)
	if err == nil {
		err = s.wait(ctx)
	}
	cancel()
	s.wg.Wait()
	return err
}

func closeStore(st store.Store, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := st.Close(ctx); err != nil {
		log.Error("close store", "err", err)
	}
}

// serverClock returns the clock the schedulers and the API share: the wall
// clock scaled by speed, started no earlier than the latest time a
// scheduler recorded, so time never runs backwards across a restart even
// when the previous run went faster than real time.
func serverClock(ctx context.Context, st store.Store, speed float64) (*clock.Scaled, error) {
	recs, err := st.ListSchedulers(ctx)
	if err != nil {
		return nil, fmt.Errorf("read scheduler clocks: %w", err)
	}
	origin := time.Now()
	for _, r := range recs {
		if r.Status.Now.After(origin) {
			origin = r.Status.Now
		}
	}
	return clock.NewScaled(k8sclock.RealClock{}, origin, speed), nil
}

// start starts the schedulers and retention, then the API, whose
// readiness covers them.
func (s *server) start(ctx context.Context) error {
	if s.cfg.Schedulers {
		start := s.startSim
		if s.cfg.Cluster == ClusterKubernetes {
			start = s.startKube
		}
		if err := start(ctx); err != nil {
			return err
		}
		if err := s.startRetention(ctx); err != nil {
			return err
		}
	}
	if s.cfg.API {
		return s.startAPI(ctx)
	}
	return nil
}

// wait returns when ctx ends (nil) or a part fails (its error).
func (s *server) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		s.log.Info("shutting down")
		return nil
	case err := <-s.errc:
		s.log.Error("stopping", "err", err)
		return err
	}
}

// goRun runs a part until ctx ends; if it fails first, the server stops.
func (s *server) goRun(ctx context.Context, name string, run func(context.Context) error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := run(ctx); err != nil {
			select {
			case s.errc <- fmt.Errorf("%s: %w", name, err):
			default: // another part failed first
			}
		}
	}()
}

func (s *server) newService(gpuType string, backend service.Backend) (*service.Service, error) {
	return service.New(service.Config{
		ApplyParallelism: s.applyParallelism,
		GPUType:          gpuType, Store: s.store, Queue: s.queue, Backend: backend, Algorithms: s.algos, Placer: s.placer,
		DefaultAlgorithm: s.cfg.Algorithm, DefaultRateLimit: s.cfg.RateLimit, Tick: s.cfg.Tick,
		StartInterval: startInterval(s.cfg.Speed),
		Clock:         s.clock, HoldClock: s.holdClock(), Metrics: s.metrics, Logger: s.log, Resync: s.cfg.Resync,
		DefaultNamespace: cmp.Or(s.cfg.defaultNamespace(), jobspec.DefaultNamespace), // as the API's namespaceOf
	})
}

// holds says whether the clock may be held (clock.Scaled.HoldAt): on a
// simulated cluster, whose jobs progress by that clock, when this process
// runs the API as well as the schedulers, so that everything that reads
// the clock reads the same one. With the components apart (--components),
// each process has a clock of its own, and holding the schedulers' would
// set it behind the API's, which stamps submissions and reports; there the
// clocks run free, as on Kubernetes, where time is the real one.
func (s *server) holds() bool {
	return s.cfg.Cluster == ClusterSim && s.cfg.API && s.cfg.Schedulers
}

// holdClock is what stops the schedulers' clock while they decide, when
// it may be held.
func (s *server) holdClock() func(time.Time) (release func()) {
	if !s.holds() {
		return nil
	}
	return s.clock.HoldAt
}

// simClock is the clock a simulated cluster runs on: the server's, which
// it holds at its jobs' ends and report rounds when the clock may be held
// (livecluster finds HoldAt on it), and otherwise the same clock without
// HoldAt.
func (s *server) simClock() k8sclock.Clock { return s.simClockFor(s.clock) }

func (s *server) simClockFor(c *clock.Scaled) k8sclock.Clock {
	if s.holds() {
		return c
	}
	return unheld{c}
}

// unheld hides a clock's HoldAt.
type unheld struct{ k8sclock.Clock }

// startInterval is the schedulers' least time between a cycle and a
// limited one, on their clock: 250 ms of wall time whatever --speed, since
// what it paces (bursts of submissions, the cost of cycles) happens in
// wall time. At --speed 500 a 250 ms interval of the cluster's clock would
// be half a millisecond, and a burst would make one cycle per submission.
func startInterval(speed float64) time.Duration {
	if speed <= 0 {
		speed = 1
	}
	return time.Duration(float64(scheduler.DefaultStartInterval) * speed)
}

// startSim starts one scheduler per GPU type of the simulated cluster.
func (s *server) startSim(ctx context.Context) error {
	for _, g := range s.cfg.SimNodes {
		cl, err := s.cfg.SimPool(g, s.simClock(), s.log)
		if err != nil {
			return err
		}
		svc, err := s.newService(g.GPUType, cl)
		if err != nil {
			return err
		}
		s.running.set(g.GPUType, svc)
		s.goRun(ctx, "scheduler "+g.GPUType, svc.Run)
		if r, ok := cl.(simReporter); ok && !s.cfg.NoSimReports {
			// Simulated jobs report their progress through the API's own
			// ingestion, as real jobs' pods do over HTTP.
			in := &progress.Ingester{Store: s.store, Clock: s.clock, Logger: s.log}
			s.goRun(ctx, "progress reports "+g.GPUType, func(ctx context.Context) error {
				return r.RunReports(ctx, in)
			})
		}
	}
	return nil
}

// startRetention removes finished jobs by the rule of the flags, if any.
// It runs beside the schedulers, whose processes are few (one, or a
// leader and a standby per GPU type) where the API's may be many; every
// replica that runs schedulers runs it, which the store makes harmless
// (see internal/retention), so that it goes on while any one does.
func (s *server) startRetention(ctx context.Context) error {
	if s.cfg.FinishedRetention == 0 && s.cfg.MaxFinishedJobs == 0 {
		return nil
	}
	r, err := retention.New(retention.Config{Store: s.store, MaxAge: s.cfg.FinishedRetention, MaxCount: s.cfg.MaxFinishedJobs,
		Interval: s.cfg.RetentionInterval, Clock: s.clock, Metrics: s.metrics, Logger: s.log})
	if err != nil {
		return err
	}
	s.goRun(ctx, "retention", r.Run)
	return nil
}

// simReporter is a simulated cluster whose jobs report their progress.
type simReporter interface {
	RunReports(ctx context.Context, in progress.Sink) error
}

// startAPI serves the REST API on Addr, and the probes on ProbeAddr if
// set, until ctx ends.
func (s *server) startAPI(ctx context.Context) error {
	sec, err := s.cfg.Auth.load(s.cfg.Addr, s.cfg.Kube.Kubeconfig, s.cfg.Kube.ProgressAudience, s.log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	var probeLn net.Listener
	if s.cfg.ProbeAddr != "" {
		if probeLn, err = net.Listen("tcp", s.cfg.ProbeAddr); err != nil {
			_ = ln.Close()
			return fmt.Errorf("--probe-addr: %w", err)
		}
	}
	srv, err := api.New(api.Config{
		Authenticator: sec.authn, Authorizer: sec.authz, ReportAuthenticator: sec.reportAuthn, ReportAuthorizer: sec.reportAuthz,
		Store: s.store, Queue: s.queue, GPUTypes: s.gpuTypes, Algorithms: s.algos,
		DefaultAlgorithm: s.cfg.Algorithm, DefaultRateLimit: s.cfg.RateLimit,
		Models: s.cfg.Models, Clock: s.clock, ClockRate: s.cfg.Speed, NameClock: k8sclock.RealClock{}, MaxWorkers: s.cfg.MaxWorkers, MultiGPUWorkers: s.cfg.MultiGPUWorkers,
		Metrics: s.metrics, Gatherer: s.registry, Logger: s.log, Ready: s.running.Ready, OpenAPI: docs.OpenAPI,
		ListenAddr:  ln.Addr().String(),
		PodSecurity: s.cfg.PodSecurity, AllowServiceAccount: s.cfg.AllowServiceAccount, Namespaces: s.cfg.jobNamespaces(),
		DefaultNamespace: s.cfg.defaultNamespace(),
		Streams:          api.StreamLimits{MaxStreams: s.cfg.MaxEventStreams, MaxPerCaller: s.cfg.MaxEventStreamsPerUser},
	})
	if err != nil {
		_ = ln.Close()
		if probeLn != nil {
			_ = probeLn.Close()
		}
		return err
	}
	scheme := "http"
	if sec.tls != nil {
		ln, scheme = tls.NewListener(ln, sec.tls), "https"
	}
	// Each listener has a cap of its own: a flood of the API's port
	// leaves the probes' free.
	lim := api.Limits{MaxConnections: s.cfg.MaxConnections, FirstRequestGrace: s.cfg.FirstRequestGrace}
	hs := api.NewHTTPServer(srv.Handler(), lim)
	hs.RegisterOnShutdown(srv.CloseStreams) // Shutdown waits for handlers; streams never end by themselves
	s.serveHTTP(ctx, "api", hs, ln)
	s.log.Info("voda server listening", "addr", scheme+"://"+ln.Addr().String(), "gpuTypes", s.gpuTypes,
		"cluster", s.cfg.Cluster, "dataDir", s.cfg.DataDir, "speed", s.cfg.Speed)
	if probeLn != nil {
		// Plain HTTP whatever the API serves: kubelets probe without
		// verifying a certificate anyway, and the probes carry no token.
		s.serveHTTP(ctx, "probes", api.NewHTTPServer(srv.ProbeHandler(), lim), probeLn)
		s.log.Info("probes listening", "addr", "http://"+probeLn.Addr().String())
	}
	if s.cfg.Listening != nil {
		s.cfg.Listening(ln.Addr().String())
	}
	if probeLn != nil && s.cfg.ProbeListening != nil {
		s.cfg.ProbeListening(probeLn.Addr().String())
	}
	return nil
}

// serveHTTP serves hs on ln until ctx ends, then shuts it down.
func (s *server) serveHTTP(ctx context.Context, name string, hs *http.Server, ln net.Listener) {
	s.goRun(ctx, name, func(context.Context) error {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx) // the listener is closed either way
	}()
}

// schedulers are the scheduler services running in this process, by GPU
// type; on Kubernetes a GPU type led by another replica has none. Each
// start and end of one is a leadership term on metrics.
type schedulers struct {
	mu      sync.Mutex
	current map[string]*service.Service
	metrics *metrics.Metrics
}

// Ready is nil when every GPU type either runs here and is healthy
// (recovered, not wedged, writing to the store), or is led by another
// replica.
func (r *schedulers) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range slices.Sorted(maps.Keys(r.current)) {
		if err := r.current[t].Health(); err != nil {
			return err
		}
	}
	return nil
}

func (r *schedulers) set(gpuType string, s *service.Service) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.metrics.Lead(gpuType, s != nil)
	if s == nil {
		delete(r.current, gpuType)
		return
	}
	r.current[gpuType] = s
}
