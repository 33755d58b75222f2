package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	k8sclock "k8s.io/utils/clock"

	"github.com/vodascheduler/voda/docs"
	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/service"
	"github.com/vodascheduler/voda/internal/sim/livecluster"
	"github.com/vodascheduler/voda/internal/store"
)

type serverOptions struct {
	addr        string
	dataDir     string
	storeURI    string
	queueURL    string
	components  string
	cluster     string
	simNodes    string
	gpuTypes    []string
	speed       float64
	algorithm   string
	placer      string
	rateLimit   time.Duration
	tick        time.Duration
	restartCost time.Duration
	resync      time.Duration
	logLevel    string
	logFormat   string
	kube        kubeOptions
	// maxConns and maxWorkers bound the API (--components api or all).
	maxConns   int
	maxWorkers int
}

func newServerCommand() *cobra.Command {
	o := &serverOptions{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run Voda: REST API, per-GPU-type schedulers and a simulated GPU cluster",
		Long: `Run Voda's server. By default one process runs everything on embedded parts:
the REST API (and /metrics, /healthz, /readyz), one scheduler per GPU type,
a simulated GPU cluster on which jobs progress by a performance model, a
file-backed store under --data-dir and an in-process queue. Nothing else is
needed: no Kubernetes, no database, no broker.

State survives restarts: a restarted server resumes every job with its
status, priority queue, attained service, time counters and allocation.

On Kubernetes (--cluster kubernetes) the schedulers drive the nodes labelled
vodascheduler/accelerator=<gpu type>: they create MPIJobs (mpi-operator,
kubeflow.org/v2beta1) and elastic PyTorchJobs (training-operator) with the
worker count they decide, resize them, place each worker pod on the node the
placer chose (a scheduling gate holds it until then), and delete them to
halt. One scheduler per GPU type leads through a Lease, so replicas stand by
and take over. The permissions it needs are in deploy/rbac.yaml.

For the production layout, point every process at MongoDB and RabbitMQ and
run the parts apart:
  voda server --components api       --store mongodb://... --queue amqp://... --gpu-types v100,a100
  voda server --components scheduler --store mongodb://... --queue amqp://... --sim-nodes v100=4x8

Clients (voda create, voda get jobs, ...) find the server with --server or
VODA_SERVER.`,
		Example: `  # Everything on one machine, simulated time 60 times faster than real time
  voda server --speed 60

  # Two GPU types, state in ./state
  voda server --sim-nodes nvidia-tesla-v100=4x8,nvidia-gtx-1080ti=2x4 --data-dir ./state

  # On Kubernetes, with the kubeconfig of $KUBECONFIG
  voda server --cluster kubernetes --store mongodb://mongo:27017 --queue amqp://rabbitmq:5672`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServer(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", api.DefaultServerAddr, "HOST:PORT the API listens on")
	f.StringVar(&o.dataDir, "data-dir", "voda-data", "directory of the embedded store (used when --store is empty)")
	f.StringVar(&o.storeURI, "store", "", "store: empty for the embedded file store, or a mongodb:// URI")
	f.StringVar(&o.queueURL, "queue", "", "queue: empty or mem:// for in-process, or an amqp:// URL (RabbitMQ)")
	f.StringVar(&o.components, "components", "all", "parts to run: all, or a list of api,scheduler")
	f.StringVar(&o.cluster, "cluster", "sim", "cluster the schedulers drive: sim (a simulated cluster) or kubernetes")
	f.StringVar(&o.simNodes, "sim-nodes", "nvidia-tesla-v100=4x8", "simulated nodes per GPU type: TYPE=NODESxGPUS[,TYPE=NODESxGPUS...]")
	f.StringSliceVar(&o.gpuTypes, "gpu-types", nil, "GPU types the API accepts and the schedulers run (default: those of --sim-nodes, or of the Kubernetes nodes' vodascheduler/accelerator labels)")
	f.Float64Var(&o.speed, "speed", 1, "how many times faster than real time simulated time runs")
	f.StringVar(&o.algorithm, "algorithm", algorithm.DefaultName, "algorithm of GPU types with none set at run time (see voda algorithms)")
	f.StringVar(&o.placer, "placer", placement.DefaultName, "placement policy (see voda placers)")
	f.DurationVar(&o.rateLimit, "rate-limit", scheduler.DefaultRateLimit, "least time between two scheduling cycles, unless set at run time")
	f.DurationVar(&o.tick, "tick", scheduler.DefaultTick, "period of cycles when no event asks for one")
	f.DurationVar(&o.restartCost, "restart-cost", livecluster.DefaultRestartCost, "simulated time a job makes no progress after each new placement")
	f.DurationVar(&o.resync, "resync", service.DefaultResync, "wall time between reconciliations of the store with the schedulers")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.kube.kubeconfig, "kubeconfig", "", "kubeconfig file (--cluster kubernetes; default $KUBECONFIG, ~/.kube/config, else the in-cluster service account)")
	f.StringVar(&o.kube.namespace, "namespace", kube.DefaultNamespace, "namespace of jobs whose manifest names none (--cluster kubernetes)")
	f.StringVar(&o.kube.leaseNS, "lease-namespace", "", "namespace of the schedulers' leases (default: --namespace)")
	f.BoolVar(&o.kube.leaderElect, "leader-elect", true, "elect one scheduler per GPU type with a Lease, so replicas can stand by (--cluster kubernetes)")
	f.DurationVar(&o.kube.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long standby replicas wait before taking over a lease that is not renewed")
	f.DurationVar(&o.kube.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it steps down")
	f.DurationVar(&o.kube.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often replicas try to acquire or renew the lease")
	f.StringVar(&o.kube.identity, "identity", "", "this replica's name in leases (default HOSTNAME_PID)")
	f.IntVar(&o.maxConns, "max-connections", api.DefaultMaxConnections,
		"most client connections the API keeps open; at the limit a new client closes the connection idle longest, or is refused when all are busy (-1: no limit)")
	f.IntVar(&o.maxWorkers, "max-workers", jobspec.DefaultMaxWorkers,
		"most workers (GPUs) one job may ask for as its minimum, maximum or requested count; a manifest asking more is rejected at submission rather than left waiting for GPUs no cluster has")
	return cmd
}

// simGroup is one GPU type of the simulated cluster.
type simGroup struct {
	gpuType     string
	nodes, gpus int
}

func parseSimNodes(s string) ([]simGroup, error) {
	var out []simGroup
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		t, shape, ok := strings.Cut(part, "=")
		ns, gs, ok2 := strings.Cut(shape, "x")
		n, err1 := strconv.Atoi(ns)
		g, err2 := strconv.Atoi(gs)
		if !ok || !ok2 || t == "" || err1 != nil || err2 != nil || n < 1 || g < 1 {
			return nil, fmt.Errorf("--sim-nodes: %q: want TYPE=NODESxGPUS with both at least 1, e.g. nvidia-tesla-v100=4x8", part)
		}
		if seen[t] {
			return nil, fmt.Errorf("--sim-nodes: GPU type %s given twice", t)
		}
		seen[t] = true
		out = append(out, simGroup{t, n, g})
	}
	if len(out) == 0 {
		return nil, errors.New("--sim-nodes: at least one GPU type is needed")
	}
	return out, nil
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", format)
}

func parseComponents(s string) (apiOn, schedOn bool, err error) {
	for _, c := range strings.Split(s, ",") {
		switch strings.TrimSpace(c) {
		case "all":
			apiOn, schedOn = true, true
		case "api":
			apiOn = true
		case "scheduler":
			schedOn = true
		default:
			return false, false, fmt.Errorf("--components: %q is not all, api or scheduler", c)
		}
	}
	return apiOn, schedOn, nil
}

func runServer(ctx context.Context, o *serverOptions) error {
	log, err := newLogger(o.logLevel, o.logFormat)
	if err != nil {
		return err
	}
	apiOn, schedOn, err := parseComponents(o.components)
	if err != nil {
		return err
	}
	if !(o.speed > 0) {
		return fmt.Errorf("--speed: %v must be positive", o.speed)
	}
	if o.maxConns == 0 || o.maxConns < -1 {
		return fmt.Errorf("--max-connections: %d must be positive, or -1 for no limit", o.maxConns)
	}
	if o.maxWorkers < 1 {
		return fmt.Errorf("--max-workers: %d must be at least 1", o.maxWorkers)
	}
	if o.rateLimit == 0 {
		o.rateLimit = scheduler.DefaultRateLimit // what the schedulers make of 0; the API shows it
	}
	var groups []simGroup
	gpuTypes := o.gpuTypes
	switch o.cluster {
	case "sim":
		if groups, err = parseSimNodes(o.simNodes); err != nil {
			return err
		}
		if len(gpuTypes) == 0 {
			for _, g := range groups {
				gpuTypes = append(gpuTypes, g.gpuType)
			}
		}
	case "kubernetes":
		if o.speed != 1 {
			return fmt.Errorf("--speed: %v: a real cluster runs in real time (1)", o.speed)
		}
	default:
		return fmt.Errorf("--cluster: %q is not sim or kubernetes", o.cluster)
	}
	algos := algorithm.Builtin()
	if _, err := algos.NewFromMap(o.algorithm, nil); err != nil {
		return fmt.Errorf("--algorithm: %w", err)
	}
	placer, err := placement.Builtin().New(o.placer, nil)
	if err != nil {
		return fmt.Errorf("--placer: %w", err)
	}

	st, err := store.Open(ctx, o.storeURI, o.dataDir)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := st.Close(cctx); err != nil {
			log.Error("close store", "err", err)
		}
	}()
	q, err := queue.Open(ctx, o.queueURL, log)
	if err != nil {
		return err
	}
	defer q.Close()

	clk, err := serverClock(ctx, st, o.speed)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var kc *kube.Client
	if o.cluster == "kubernetes" && !schedOn && len(gpuTypes) == 0 {
		return errors.New("--gpu-types: an API without schedulers on Kubernetes needs the GPU types it accepts")
	}
	if o.cluster == "kubernetes" && schedOn {
		if kc, err = connectKube(ctx, o.kube, st, log); err != nil {
			return err
		}
		if len(gpuTypes) == 0 {
			gpuTypes = kc.GPUTypes()
		}
		if len(gpuTypes) == 0 {
			return errNoGPUTypes
		}
	}
	var wg sync.WaitGroup
	errc := make(chan error, len(gpuTypes)+1)
	var services []*service.Service
	ks := &kubeSchedulers{current: map[string]*service.Service{}}
	newService := func(gpuType string, backend service.Backend) (*service.Service, error) {
		par := 1
		if kc != nil {
			par = kubeApplyParallelism
		}
		return service.New(service.Config{
			ApplyParallelism: par,
			GPUType:          gpuType, Store: st, Queue: q, Backend: backend, Algorithms: algos, Placer: placer,
			DefaultAlgorithm: o.algorithm, DefaultRateLimit: o.rateLimit, Tick: o.tick,
			Clock: clk, Metrics: m, Logger: log, Resync: o.resync,
		})
	}
	if schedOn && kc != nil {
		for _, t := range gpuTypes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				build := func(pool *kube.Pool) (*service.Service, error) { return newService(t, pool) }
				if err := ks.run(ctx, o.kube, kc, t, build, log); err != nil {
					errc <- fmt.Errorf("scheduler %s: %w", t, err)
				}
			}()
		}
	}
	if schedOn && kc == nil {
		for _, g := range groups {
			cl, err := livecluster.New(livecluster.Options{
				GPUType: g.gpuType, Nodes: g.nodes, GPUsPerNode: g.gpus,
				RestartCost: o.restartCost, Clock: clk, Logger: log,
			})
			if err != nil {
				return err
			}
			svc, err := newService(g.gpuType, cl)
			if err != nil {
				return err
			}
			services = append(services, svc)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := svc.Run(ctx); err != nil {
					errc <- fmt.Errorf("scheduler %s: %w", g.gpuType, err)
				}
			}()
		}
	}
	if apiOn {
		srv, err := api.New(api.Config{
			Store: st, Queue: q, GPUTypes: gpuTypes, Algorithms: algos,
			DefaultAlgorithm: o.algorithm, DefaultRateLimit: o.rateLimit,
			Models: livecluster.Models(), Clock: clk, NameClock: k8sclock.RealClock{}, MaxWorkers: o.maxWorkers,
			Metrics: m, Gatherer: reg, Logger: log,
			Ready: func() error {
				if err := ks.Ready(); err != nil {
					return err
				}
				for _, s := range services {
					if err := s.Health(); err != nil {
						return err
					}
				}
				return nil
			},
			OpenAPI: docs.OpenAPI,
		})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", o.addr)
		if err != nil {
			return fmt.Errorf("--addr: %w", err)
		}
		hs := api.NewHTTPServer(srv.Handler(), api.Limits{MaxConnections: o.maxConns})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("api: %w", err)
			}
		}()
		go func() {
			<-ctx.Done()
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer scancel()
			_ = hs.Shutdown(sctx) // the listener is closed either way
		}()
		log.Info("voda server listening", "addr", "http://"+ln.Addr().String(), "gpuTypes", gpuTypes,
			"cluster", o.cluster, "dataDir", o.dataDir, "speed", o.speed)
	} else if !schedOn {
		return errors.New("--components: nothing to run")
	}

	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-errc:
		log.Error("stopping", "err", err)
	}
	cancel()
	wg.Wait()
	return err
}

// serverClock returns the clock the schedulers and the API share: the wall
// clock scaled by speed, started no earlier than the latest time a
// scheduler recorded, so time never runs backwards across a restart even
// when the previous run went faster than real time.
func serverClock(ctx context.Context, st store.Store, speed float64) (*livecluster.ScaledClock, error) {
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
	return livecluster.NewScaledClock(k8sclock.RealClock{}, origin, speed), nil
}
