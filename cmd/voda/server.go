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

For the production layout, point every process at MongoDB and RabbitMQ and
run the parts apart:
  voda server --components api       --store mongodb://... --queue amqp://... --gpu-types v100,a100
  voda server --components scheduler --store mongodb://... --queue amqp://... --sim-nodes v100=4x8

Clients (voda create, voda get jobs, ...) find the server with --server or
VODA_SERVER.`,
		Example: `  # Everything on one machine, simulated time 60 times faster than real time
  voda server --speed 60

  # Two GPU types, state in ./state
  voda server --sim-nodes nvidia-tesla-v100=4x8,nvidia-gtx-1080ti=2x4 --data-dir ./state`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServer(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", api.DefaultServerAddr, "HOST:PORT the API listens on")
	f.StringVar(&o.dataDir, "data-dir", "voda-data", "directory of the embedded store (used when --store is empty)")
	f.StringVar(&o.storeURI, "store", "", "store: empty for the embedded file store, or a mongodb:// URI")
	f.StringVar(&o.queueURL, "queue", "", "queue: empty or mem:// for in-process, or an amqp:// URL (RabbitMQ)")
	f.StringVar(&o.components, "components", "all", "parts to run: all, or a list of api,scheduler")
	f.StringVar(&o.cluster, "cluster", "sim", "cluster the schedulers drive: sim (a simulated cluster)")
	f.StringVar(&o.simNodes, "sim-nodes", "nvidia-tesla-v100=4x8", "simulated nodes per GPU type: TYPE=NODESxGPUS[,TYPE=NODESxGPUS...]")
	f.StringSliceVar(&o.gpuTypes, "gpu-types", nil, "GPU types the API accepts (default: those of --sim-nodes)")
	f.Float64Var(&o.speed, "speed", 1, "how many times faster than real time simulated time runs")
	f.StringVar(&o.algorithm, "algorithm", service.DefaultAlgorithm, "algorithm of GPU types with none set at run time (see voda algorithms)")
	f.StringVar(&o.placer, "placer", placement.DefaultName, "placement policy (see voda placers)")
	f.DurationVar(&o.rateLimit, "rate-limit", scheduler.DefaultRateLimit, "least time between two scheduling cycles, unless set at run time")
	f.DurationVar(&o.tick, "tick", scheduler.DefaultTick, "period of cycles when no event asks for one")
	f.DurationVar(&o.restartCost, "restart-cost", livecluster.DefaultRestartCost, "simulated time a job makes no progress after each new placement")
	f.DurationVar(&o.resync, "resync", service.DefaultResync, "wall time between reconciliations of the store with the schedulers")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
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
	if o.cluster != "sim" {
		return fmt.Errorf("--cluster: %q is not supported yet; only sim (the Kubernetes cluster comes with the kube integration)", o.cluster)
	}
	if !(o.speed > 0) {
		return fmt.Errorf("--speed: %v must be positive", o.speed)
	}
	groups, err := parseSimNodes(o.simNodes)
	if err != nil {
		return err
	}
	gpuTypes := o.gpuTypes
	if len(gpuTypes) == 0 {
		for _, g := range groups {
			gpuTypes = append(gpuTypes, g.gpuType)
		}
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
	var wg sync.WaitGroup
	errc := make(chan error, len(groups)+1)
	var services []*service.Service
	if schedOn {
		for _, g := range groups {
			cl, err := livecluster.New(livecluster.Options{
				GPUType: g.gpuType, Nodes: g.nodes, GPUsPerNode: g.gpus,
				RestartCost: o.restartCost, Clock: clk, Logger: log,
			})
			if err != nil {
				return err
			}
			svc, err := service.New(service.Config{
				GPUType: g.gpuType, Store: st, Queue: q, Cluster: cl, Algorithms: algos, Placer: placer,
				DefaultAlgorithm: o.algorithm, DefaultRateLimit: o.rateLimit, Tick: o.tick,
				Clock: clk, Metrics: m, Logger: log, Resync: o.resync,
			})
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
			Models: livecluster.Models(), Clock: clk, Metrics: m, Gatherer: reg, Logger: log,
			Ready: func() error {
				for _, s := range services {
					if !s.Ready() {
						return errors.New("schedulers still recovering")
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
		hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
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
			"dataDir", o.dataDir, "speed", o.speed)
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
