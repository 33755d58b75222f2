package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/eventhub"
	"github.com/vodascheduler/voda/internal/jobname"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/internal/ui"
)

// MaxRateLimitSeconds bounds PUT .../ratelimit: a day between cycles is
// already no scheduling at all.
const MaxRateLimitSeconds = 86400

// Config configures a Server.
type Config struct {
	Store store.Store
	Queue queue.Queue
	// GPUTypes are the GPU types jobs may ask for, each with a scheduler.
	GPUTypes   []string
	Algorithms *algorithm.Registry
	// DefaultAlgorithm and DefaultRateLimit are what schedulers use when
	// no setting is stored: the values the schedulers were given, which
	// the API shows and cannot know otherwise. Both are required.
	DefaultAlgorithm string
	DefaultRateLimit time.Duration
	// Models, if not empty, are the performance models jobs may name in
	// the vodascheduler/sim-model annotation.
	Models []string
	// Clock stamps submissions (a job's submitTime) and measures ages; the
	// scheduler's clock when they share a process, which a simulated
	// cluster runs faster than real time.
	Clock clock.PassiveClock
	// ClockRate is how many seconds Clock advances per real second: 1
	// (the default, for 0) except on a simulated cluster run faster. The
	// event stream's snapshot tells clients, which advance the times they
	// show between events.
	ClockRate float64
	// NameClock stamps job names (NAME-YYYYMMDD-hhmmss, in UTC): the wall
	// clock when nil, whatever Clock says, so that names tell people when
	// they submitted.
	NameClock clock.PassiveClock
	// MaxWorkers is the most workers one job may ask for; 0 means
	// jobspec.DefaultMaxWorkers.
	MaxWorkers int
	// MultiGPUWorkers accepts manifests whose workers hold several GPUs
	// each (jobspec.Options.MultiGPUWorkers); without it such a manifest
	// is refused. voda server sets it unless --multi-gpu-workers=false.
	MultiGPUWorkers bool

	Metrics  *metrics.Metrics
	Gatherer prometheus.Gatherer
	Logger   *slog.Logger
	// Ready, if set, adds a readiness condition (schedulers recovered).
	Ready func() error
	// OpenAPI is the API description served at RouteOpenAPI.
	OpenAPI []byte
	// ListenAddr is the HOST:PORT the server listens on: on a loopback
	// address, requests must name a loopback address in their Host header
	// (see checkBrowser).
	ListenAddr string

	// PodSecurity is the Pod Security Standards level every pod template
	// of a job must meet (jobspec.PodSecurityLevels; empty means
	// baseline); AllowServiceAccount lets templates name a service
	// account or mount its token.
	PodSecurity         string
	AllowServiceAccount bool
	// Namespaces, when not empty, are the only namespaces a manifest may
	// name: on Kubernetes, those where the schedulers run jobs.
	Namespaces []string
	// DefaultNamespace is the namespace of a manifest that names none
	// (jobspec.DefaultNamespace when empty): on Kubernetes, the
	// scheduler's --namespace.
	DefaultNamespace string
	// Authenticator and Authorizer, both set or both nil, guard every
	// route but the health probes (see auth.go). Both nil is the
	// anonymous mode: anyone who reaches the API may do anything.
	Authenticator auth.Authenticator
	Authorizer    auth.Authorizer
	// ReportAuthenticator and ReportAuthorizer, when set, stand in for
	// Authenticator and Authorizer on the progress route: on Kubernetes,
	// tokens of the job's own pods (docs/progress.md) rather than people's.
	ReportAuthenticator auth.Authenticator
	ReportAuthorizer    auth.Authorizer
	// ReportInterval is the time between progress reports Voda asks jobs
	// for (progress.DefaultInterval seconds if zero).
	ReportInterval time.Duration
	// Streams bound the event streams of GET /api/v1/events.
	Streams StreamLimits
}

// Server serves the REST API. It keeps no job state of its own, so any
// number of replicas can run against the same store and queue.
type Server struct {
	cfg  Config
	log  *slog.Logger
	spec jobspec.Options
	mux  *http.ServeMux
	// loopback is whether ListenAddr is a loopback address.
	loopback bool
	// reports keeps progress reports; busy logs those refused as busy.
	reports *progress.Ingester
	busy    *busyLog
	// hub feeds the event streams.
	hub *eventhub.Hub
	// names hands out the names to try for new jobs.
	names jobname.Namer
	// settingsMu serialises the changes of the schedulers' settings
	// (updateSettings).
	settingsMu sync.Mutex
}

// New checks the configuration and builds the routes.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Queue == nil || cfg.Algorithms == nil || cfg.Metrics == nil {
		return nil, errors.New("api: store, queue, algorithms and metrics are required")
	}
	if len(cfg.GPUTypes) == 0 {
		return nil, errors.New("api: at least one GPU type is required")
	}
	if cfg.DefaultAlgorithm == "" || cfg.DefaultRateLimit == 0 {
		return nil, errors.New("api: the schedulers' default algorithm and rate limit are required")
	}
	if err := jobspec.CheckPodSecurity(cfg.PodSecurity); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if (cfg.Authenticator == nil) != (cfg.Authorizer == nil) {
		return nil, errors.New("api: an authenticator and an authorizer go together; give both or neither")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.ClockRate <= 0 {
		cfg.ClockRate = 1
	}
	if cfg.NameClock == nil {
		cfg.NameClock = clock.RealClock{}
	}
	if cfg.Gatherer == nil {
		cfg.Gatherer = prometheus.DefaultGatherer
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.GPUTypes = slices.Sorted(slices.Values(cfg.GPUTypes))
	s := &Server{
		cfg: cfg, log: log,
		spec: jobspec.Options{GPUTypes: cfg.GPUTypes, Models: cfg.Models, MaxWorkers: cfg.MaxWorkers,
			MultiGPUWorkers: cfg.MultiGPUWorkers, PodSecurity: cfg.PodSecurity, AllowServiceAccount: cfg.AllowServiceAccount,
			Namespaces: cfg.Namespaces, DefaultNamespace: cfg.DefaultNamespace},
		mux:      http.NewServeMux(),
		loopback: auth.IsLoopbackAddr(cfg.ListenAddr),
	}
	hub, err := eventhub.New(eventhub.Config{Store: cfg.Store, Render: views{s}, Clock: cfg.Clock,
		GPUTypes: cfg.GPUTypes, Limits: cfg.Streams, Metrics: cfg.Metrics, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	s.hub = hub
	s.reports = &progress.Ingester{Store: cfg.Store, Clock: cfg.Clock, Interval: cfg.ReportInterval, Logger: log,
		Conflicts: cfg.Metrics.ProgressConflicts}
	s.busy = &busyLog{log: log, every: busyLogEvery}
	s.routes()
	return s, nil
}

// Handler returns the HTTP handler with request metrics and panic
// recovery. A body declared larger than any route accepts is refused with
// 413 before it is read, so a client that asked to continue gets no
// "100 Continue" and sends nothing. What a web page may have made a
// browser send is refused next (checkBrowser).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p)
				if !rec.wrote {
					s.writeError(rec, r, newError(http.StatusInternalServerError, ReasonInternalError, "", "internal error; see the server log"))
				}
			}
			s.observe(r, rec.code, start)
		}()
		var err error
		if r, err = s.admit(r); err != nil { // r: the caller's, and the pattern for observe
			s.writeError(rec, r, err)
			return
		}
		s.mux.ServeHTTP(rec, r)
	})
}

// admit refuses what no route may see: a declared body over maxBody, what
// checkBrowser refuses, and a caller authorize refuses. It returns r with
// the caller in its context.
func (s *Server) admit(r *http.Request) (*http.Request, error) {
	if r.ContentLength > maxBody {
		return r, tooLarge()
	}
	if err := s.checkBrowser(r); err != nil {
		return r, err
	}
	return s.authorize(r)
}

// observe records a request's route, status and duration.
func (s *Server) observe(r *http.Request, code int, start time.Time) {
	route := r.Pattern
	if route == "" {
		route = "unmatched"
	}
	s.cfg.Metrics.HTTPRequests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	s.cfg.Metrics.HTTPDuration.WithLabelValues(route).Observe(time.Since(start).Seconds())
}

type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (flushes and
// deadlines of the event stream).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("POST "+RouteJobs, s.handle(s.createJob))
	m.HandleFunc("GET "+RouteJobs, s.handle(s.listJobs))
	m.HandleFunc("GET "+RouteJob, s.handle(s.getJob))
	m.HandleFunc("DELETE "+RouteJob, s.handle(s.deleteJob))
	m.HandleFunc("PUT "+RouteJobPriority, s.handle(s.setPriority))
	m.HandleFunc("POST "+RouteJobProgress, s.handle(s.reportProgress))
	m.HandleFunc("GET "+RouteSchedulers, s.handle(s.listSchedulers))
	m.HandleFunc("GET "+RouteScheduler, s.handle(s.getScheduler))
	m.HandleFunc("PUT "+RouteAlgorithm, s.handle(s.setAlgorithm))
	m.HandleFunc("PUT "+RouteRateLimit, s.handle(s.setRateLimit))
	m.HandleFunc("GET "+RouteTeams, s.handle(s.listTeams))
	m.HandleFunc("PUT "+RouteTeam, s.handle(s.setQuota))
	m.HandleFunc("DELETE "+RouteTeam, s.handle(s.deleteQuota))
	m.HandleFunc("GET "+RouteAlgorithms, s.listAlgorithms)
	m.HandleFunc("GET "+RouteNodes, s.handle(s.listNodes))
	m.HandleFunc("GET "+RouteEvents, s.handle(s.streamEvents))
	m.HandleFunc("GET "+RouteOpenAPI, s.openAPI)
	m.HandleFunc("POST "+RouteLegacyJobs, s.handle(s.legacyCreate))
	m.HandleFunc("DELETE "+RouteLegacyJobs, s.handle(s.legacyDelete))
	m.HandleFunc("GET "+RouteLegacyJobs, s.handle(s.legacyList))
	m.HandleFunc("PUT "+RouteLegacyAlgo, s.handle(s.legacyAlgorithm))
	m.HandleFunc("PUT "+RouteLegacyLimit, s.handle(s.legacyRateLimit))
	m.Handle("GET "+RouteMetrics, promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{}))
	m.HandleFunc("GET "+RouteHealthz, healthz)
	m.HandleFunc("GET "+RouteReadyz, s.readyz)
	m.Handle("GET "+ui.Prefix, ui.Handler())
	m.Handle("GET "+strings.TrimSuffix(ui.Prefix, "/"), http.RedirectHandler(ui.Prefix, http.StatusMovedPermanently))
	m.HandleFunc("/", s.handle(s.noRoute))
}

// probeMethods are the methods noRoute tries on a path to list in Allow.
var probeMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

// noRoute answers what no route took: 405 with an Allow header when the
// path has routes for other methods, 404 when it has none.
func (s *Server) noRoute(_ http.ResponseWriter, r *http.Request) error {
	allowed := s.allowedMethods(r)
	if len(allowed) == 0 {
		return newError(http.StatusNotFound, ReasonNotFound, "", fmt.Sprintf("no route %s %s; see %s", r.Method, r.URL.Path, RouteOpenAPI))
	}
	allow := strings.Join(allowed, ", ")
	return newError(http.StatusMethodNotAllowed, ReasonMethodNotAllowed, "",
		fmt.Sprintf("%s %s: method not allowed; allowed: %s", r.Method, r.URL.Path, allow)).with("Allow", allow)
}

// allowedMethods are the methods a route other than the catch-all takes
// for r's path.
func (s *Server) allowedMethods(r *http.Request) []string {
	var out []string
	for _, m := range probeMethods {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			out = append(out, m)
		}
	}
	return out
}

func healthz(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok\n") }

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.cfg.Store.ListSchedulers(ctx); err != nil {
		writeText(w, http.StatusServiceUnavailable, fmt.Sprintf("store not reachable: %v\n", err))
		return
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			writeText(w, http.StatusServiceUnavailable, err.Error()+"\n")
			return
		}
	}
	writeText(w, http.StatusOK, "ok\n")
}

func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(s.cfg.OpenAPI)
}

// knownGPUType reports whether a GPU type has a scheduler.
func (s *Server) knownGPUType(t string) bool {
	_, ok := slices.BinarySearch(s.cfg.GPUTypes, t)
	return ok
}

// notify tells a GPU type's scheduler to look at the store. A failure is
// logged, not returned: the change is stored and the scheduler's periodic
// resync will find it.
func (s *Server) notify(ctx context.Context, gpuType string, msg queue.Message) {
	if err := s.cfg.Queue.Publish(ctx, queue.SchedulerQueue(gpuType), msg.Encode()); err != nil {
		s.log.Warn("notify scheduler; it will catch up at its next resync", "gpuType", gpuType, "verb", msg.Verb, "job", msg.Job, "err", err)
	}
}

// algorithms returns each GPU type's stored settings.
func (s *Server) settings(ctx context.Context) (map[string]store.Scheduler, error) {
	recs, err := s.cfg.Store.ListSchedulers(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]store.Scheduler, len(recs))
	for _, r := range recs {
		out[r.GPUType] = r
	}
	return out, nil
}

func (s *Server) algorithmOf(rec store.Scheduler) string {
	if rec.Settings.Algorithm == "" {
		return s.cfg.DefaultAlgorithm
	}
	if e, ok := s.cfg.Algorithms.Lookup(rec.Settings.Algorithm); ok {
		return e.Name
	}
	return rec.Settings.Algorithm
}
