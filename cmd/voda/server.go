package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	k8sclock "k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/retention"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/server"
	"github.com/vodascheduler/voda/internal/service"
	"github.com/vodascheduler/voda/internal/sim"
	"github.com/vodascheduler/voda/internal/sim/livecluster"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
)

// serverOptions are the flags of voda server: most go straight into the
// server's Config, the rest are parsed into it.
type serverOptions struct {
	cfg         server.Config
	components  string
	simNodes    string
	restartCost time.Duration
	// profiles is the directory of measured profiles (--profiles).
	profiles  string
	logLevel  string
	logFormat string
	// storeFile and queueFile name files holding the store's and the
	// queue's URL (see secretURL).
	storeFile, queueFile string
	// jobMetrics is --per-job-metrics, the opposite of cfg.NoJobMetrics.
	jobMetrics bool
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
A URL with a password is better given as a file (--store-file,
--queue-file: e.g. a mounted Kubernetes Secret) or in the environment
(VODA_STORE, VODA_QUEUE) than as a flag, which anyone on the machine can
read with ps. A flag wins over its file, a file over the environment;
giving both a flag and its file is an error. Logs and errors show URLs
without their passwords.

Clients (voda create, voda get jobs, ...) find the server with --server or
VODA_SERVER.

Without authentication anyone who reaches the API may do anything, so the
server refuses to listen anywhere but on loopback unless given
--insecure-allow-anonymous. With --token-auth-file, callers send a bearer
token; members of --users-group act on jobs, members of --admins-group also
change the schedulers. With --authentication kubernetes, the cluster decides:
a TokenReview says who a token is (users and ServiceAccounts alike), and a
SubjectAccessReview whether RBAC lets them do the same to the job's kind
(mpijobs, pytorchjobs) in its namespace, or change the schedulers
(schedulers.vodascheduler.io; see deploy/roles.yaml). --tls-cert-file and
--tls-private-key-file serve HTTPS. See docs/security.md.`,
		Example: `  # Everything on one machine, simulated time 60 times faster than real time
  voda server --speed 60

  # Two GPU types, state in ./state
  voda server --sim-nodes nvidia-tesla-v100=4x8,nvidia-gtx-1080ti=2x4 --data-dir ./state

  # On Kubernetes, with the kubeconfig of $KUBECONFIG
  voda server --cluster kubernetes --store mongodb://mongo:27017 --queue amqp://rabbitmq:5672

  # The same, serving every address, for the cluster's users and ServiceAccounts
  voda server --cluster kubernetes --addr :55587 --authentication kubernetes \
    --tls-cert-file tls.crt --tls-private-key-file tls.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServer(cmd.Context(), o) },
	}
	addServerFlags(cmd, o)
	addKubeFlags(cmd, &o.cfg.Kube)
	addAuthFlags(cmd, &o.cfg.Auth)
	return cmd
}

// addAuthFlags adds the flags of authentication, authorization and TLS,
// named as kube-apiserver names them (see docs/security.md).
func addAuthFlags(cmd *cobra.Command, a *server.AuthOptions) {
	f := cmd.Flags()
	f.StringVar(&a.Mode, "authentication", "",
		"how the API knows its callers: "+server.AuthNone+" (allowed only on a loopback --addr), "+server.AuthTokenFile+
			" (--token-auth-file), or "+server.AuthKubernetes+" (bearer tokens checked with TokenReviews, actions with SubjectAccessReviews against the cluster of --kubeconfig) (default "+
			server.AuthTokenFile+" when --token-auth-file is given, else "+server.AuthNone+")")
	f.DurationVar(&a.CacheTTL, "authentication-cache-ttl", server.DefaultAuthCacheTTL,
		"how long --authentication "+server.AuthKubernetes+" reuses a TokenReview's or SubjectAccessReview's answer")
	f.StringVar(&a.TokenFile, "token-auth-file", "",
		`bearer tokens the API accepts: kube-apiserver's static token file, lines of token,user,uid,"group1,group2"; each token at least `+strconv.Itoa(auth.MinTokenLength)+` characters (make them random: openssl rand -hex 32)`)
	f.StringVar(&a.UsersGroup, "users-group", auth.DefaultUsersGroup, "group of the user role: submit, see, delete and re-prioritise jobs (with --token-auth-file)")
	f.StringVar(&a.AdminsGroup, "admins-group", auth.DefaultAdminsGroup, "group of the admin role: the user role, change a scheduler's algorithm and rate limit, and set teams' quotas (with --token-auth-file)")
	f.BoolVar(&a.AllowAnonymous, "insecure-allow-anonymous", false,
		"serve the API without authentication on an address other than loopback: anyone who reaches it may delete any job and change the algorithm")
	f.StringVar(&a.TLSCertFile, "tls-cert-file", "", "PEM certificate (chain) the API serves HTTPS with (with --tls-private-key-file)")
	f.StringVar(&a.TLSKeyFile, "tls-private-key-file", "", "PEM private key of --tls-cert-file")
}

func addServerFlags(cmd *cobra.Command, o *serverOptions) {
	f, c := cmd.Flags(), &o.cfg
	f.StringVar(&c.Addr, "addr", api.DefaultServerAddr, "HOST:PORT the API listens on")
	f.StringVar(&c.ProbeAddr, "probe-addr", "",
		"HOST:PORT of a listener serving only GET /healthz and /readyz, over plain HTTP and without a token, with an accept queue and a --max-connections of its own, so that no flood of --addr fails the probes of a kubelet or load balancer (empty: the probes are on --addr only, as always)")
	f.StringVar(&c.DataDir, "data-dir", "voda-data", "directory of the embedded store (used when --store is empty)")
	// The store's and queue's URLs may hold passwords, which a flag shows
	// to anyone who can list processes: a file or an environment variable
	// keeps them out of sight (see secretURL).
	f.StringVar(&c.StoreURI, "store", "", "store: empty for the embedded file store, or a mongodb:// URI (default $"+envStore+"; prefer --store-file or $"+envStore+" when it holds a password: flags show in ps)")
	f.StringVar(&o.storeFile, "store-file", "", "file whose content (trimmed) is the --store URI, e.g. a mounted Kubernetes Secret")
	f.StringVar(&c.QueueURL, "queue", "", "queue: empty or mem:// for in-process, or an amqp:// URL (RabbitMQ) (default $"+envQueue+"; prefer --queue-file or $"+envQueue+" when it holds a password: flags show in ps)")
	f.StringVar(&o.queueFile, "queue-file", "", "file whose content (trimmed) is the --queue URL, e.g. a mounted Kubernetes Secret")
	f.StringVar(&o.components, "components", "all", "parts to run: all, or a list of api,scheduler")
	f.StringVar(&c.Cluster, "cluster", server.ClusterSim, "cluster the schedulers drive: sim (a simulated cluster) or kubernetes")
	f.StringVar(&o.simNodes, "sim-nodes", "nvidia-tesla-v100=4x8", "simulated nodes per GPU type: TYPE=NODESxGPUS[+NODESxGPUS...][,TYPE=...]; nodes of one type may differ in size (v100=2x8+4x4: two nodes of 8 GPUs, four of 4)")
	f.StringSliceVar(&c.GPUTypes, "gpu-types", nil, "GPU types the API accepts and the schedulers run (default: those of --sim-nodes, or of the Kubernetes nodes' vodascheduler/accelerator labels)")
	f.Float64Var(&c.Speed, "speed", 1, "how many times faster than real time simulated time runs (on a simulated cluster; the clock stands still while the scheduler catches up, see docs/server.md)")
	f.BoolVar(&c.NoSimReports, "no-sim-reports", false, "simulated jobs do not report their progress; processes beside the simulated cluster report it over HTTP instead (docs/progress.md)")
	f.StringVar(&c.Algorithm, "algorithm", algorithm.DefaultName, "algorithm of GPU types with none set at run time (see voda algorithms)")
	f.StringVar(&c.Placer, "placer", placement.DefaultName, "placement policy (see voda placers)")
	f.DurationVar(&c.RateLimit, "rate-limit", scheduler.DefaultRateLimit, "least time between two cycles that change running jobs (shrink, halt, move, grow), unless set at run time; a job that fits in free GPUs starts at once")
	f.DurationVar(&c.Tick, "tick", scheduler.DefaultTick, "period of cycles when no event asks for one")
	f.StringVar(&c.QuotasFile, "quotas-file", "",
		"YAML or JSON list of teams' quotas, each {gpuType, team, guarantee, limit, weight}, written at start for each GPU type whose stored settings hold no quotas yet: it seeds them, the API owns them afterwards (docs/server.md)")
	f.StringVar(&o.profiles, "profiles", "",
		"directory of measured application profiles (the Pollux artifact's traces/, as voda simulate --profiles reads them): jobs naming one of its applications in vodascheduler/sim-model run on its measured step times and declare its adaptive batch bounds (docs/simulator.md#replaying-against-a-server)")
	f.DurationVar(&o.restartCost, "restart-cost", livecluster.DefaultRestartCost, "simulated time a job makes no progress after each new placement")
	f.DurationVar(&c.Resync, "resync", service.DefaultResync, "wall time between reconciliations of the store with the schedulers")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.IntVar(&c.MaxConnections, "max-connections", api.DefaultMaxConnections,
		"most client connections the API keeps open (and, apart, --probe-addr); a connection arriving at the limit takes the slot of: a connection with no complete request after --first-request-grace, oldest first; else an idle keep-alive, longest idle first; else a connection, not yet served or else the longest busy, of the client (IP address, IPv6 /64) holding the most, if the arriving one's client holds fewer; otherwise it is closed at once. One client's silent or slow connections thus never keep out a client holding fewer (-1: no limit)")
	f.DurationVar(&c.FirstRequestGrace, "first-request-grace", api.DefaultFirstRequestGrace,
		"how long a new connection may take to send its first request (TLS handshake included) before, at --max-connections, it is the first to be closed; longer, it still has the 10 s the server gives a request's headers")
	f.IntVar(&c.MaxEventStreams, "max-event-streams", api.DefaultMaxStreams,
		"most event streams (GET /api/v1/events, the dashboard's live feed) open at once; more are answered 503")
	f.DurationVar(&c.FinishedRetention, "finished-retention", server.DefaultFinishedRetention,
		"how long finished jobs (Completed, Failed, Canceled) are kept, on the schedulers' clock (scaled by --speed), before their records are removed from the store; 0 keeps them whatever their age (docs/server.md#retention)")
	f.IntVar(&c.MaxFinishedJobs, "max-finished-jobs", server.DefaultMaxFinishedJobs,
		"most finished jobs kept in the store: the oldest beyond are removed; 0 keeps any number")
	f.DurationVar(&c.RetentionInterval, "retention-interval", retention.DefaultInterval,
		"wall time between two passes of retention (--finished-retention, --max-finished-jobs), which processes running schedulers make, the first at start")
	f.IntVar(&c.MaxEventStreamsPerUser, "max-event-streams-per-user", api.DefaultMaxStreamsPerCaller,
		"most event streams one caller may hold open at once (a user; without authentication, a client address or IPv6 /64), so that one caller cannot take all of --max-event-streams; more are answered 429")
	f.IntVar(&c.MaxWorkers, "max-workers", jobspec.DefaultMaxWorkers,
		"most GPUs one job may ask for as its minimum, maximum or requested count: workers of one GPU, or workers x G for workers of G GPUs, which is also the most processes a progress report may count; a manifest asking more is rejected at submission rather than left waiting for GPUs no cluster has")
	f.BoolVar(&c.MultiGPUWorkers, "multi-gpu-workers", true,
		"accept jobs whose worker pods hold several GPUs (nvidia.com/gpu: G on the container that trains; docs/job-spec.md): they are allocated and placed in whole workers of G GPUs; --multi-gpu-workers=false refuses such manifests (400)")
	f.StringVar(&c.PodSecurity, "pod-security", jobspec.DefaultPodSecurity,
		"Kubernetes Pod Security Standards level every pod template of a submitted job must meet, since Voda creates the job with its own rights: privileged (no check), baseline (no privileged containers, host namespaces, hostPath volumes, host ports or added capabilities) or restricted (baseline, and non-root, no privilege escalation, capabilities dropped, seccomp RuntimeDefault); nodeName and Voda's own vodascheduler/ keys are refused at every level")
	f.BoolVar(&o.jobMetrics, "per-job-metrics", true,
		"export per-job series on /metrics (voda_job_progress, voda_job_remaining_seconds, voda_job_throughput_epochs_per_hour, voda_job_waiting_seconds), labelled with each live job's namespace and name; --per-job-metrics=false leaves them out, so that whoever may scrape /metrics (any caller with a token, or the voda-metrics-reader role) learns no job's name (docs/security.md)")
	f.BoolVar(&c.AllowServiceAccount, "allow-service-account", false,
		"let jobs' pod templates set serviceAccountName (or serviceAccount) and automountServiceAccountToken: true, so that their pods act with that account's rights; without it such manifests are rejected")
}

// addKubeFlags adds the flags of --cluster kubernetes.
func addKubeFlags(cmd *cobra.Command, k *server.KubeOptions) {
	f := cmd.Flags()
	f.StringVar(&k.ProgressURL, "progress-url", "",
		"Voda's API as jobs' pods reach it (e.g. http://voda.voda-system.svc:55587): every job's pods then get "+kube.EnvProgressURL+", "+kube.EnvJobName+
			" and a projected token ("+kube.EnvTokenFile+") to report their progress with (docs/progress.md); empty: jobs are not measured (--cluster kubernetes)")
	f.DurationVar(&k.LogInterval, "progress-log-interval", kube.DefaultLogInterval,
		"how often Voda reads the launcher log of a job that names a vodascheduler/progress-log pattern (jobs that cannot report themselves; docs/progress.md), between 1s and 1h")
	f.StringVar(&k.ProgressAudience, "progress-audience", kube.DefaultProgressAudience,
		"audience of the pods' tokens for reporting progress: tokens for Voda are no use against kube-apiserver, and the reverse")
	f.StringVar(&k.Kubeconfig, "kubeconfig", "", "kubeconfig file (--cluster kubernetes, --authentication kubernetes; default $KUBECONFIG, ~/.kube/config, else the in-cluster service account)")
	f.StringVar(&k.Namespace, "namespace", kube.DefaultNamespace, "namespace of jobs whose manifest names none (--cluster kubernetes)")
	f.StringSliceVar(&k.JobNamespaces, "job-namespaces", nil, "namespaces where jobs may run; Voda watches and changes pods and job objects there only, so its RBAC can be namespaced (default: --namespace)")
	f.StringVar(&k.LeaseNamespace, "lease-namespace", "", "namespace of the schedulers' leases (default: --namespace)")
	f.BoolVar(&k.LeaderElect, "leader-elect", true, "elect one scheduler per GPU type with a Lease, so replicas can stand by (--cluster kubernetes)")
	f.DurationVar(&k.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long standby replicas wait before taking over a lease that is not renewed")
	f.DurationVar(&k.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it steps down")
	f.DurationVar(&k.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often replicas try to acquire or renew the lease")
	f.StringVar(&k.Identity, "identity", "", "this replica's name in leases (default HOSTNAME_PID)")
}

// runServer maps the flags to the server's Config. Only a simulated
// cluster gets the simulator: its clusters and performance models.
func runServer(ctx context.Context, o *serverOptions) error {
	log, err := newLogger(o.logLevel, o.logFormat)
	if err != nil {
		return err
	}
	cfg := o.cfg
	cfg.Logger = log
	cfg.NoJobMetrics = !o.jobMetrics
	if cfg.StoreURI, err = secretURL("store", cfg.StoreURI, o.storeFile, envStore, os.Getenv); err != nil {
		return err
	}
	if cfg.QueueURL, err = secretURL("queue", cfg.QueueURL, o.queueFile, envQueue, os.Getenv); err != nil {
		return err
	}
	if cfg.API, cfg.Schedulers, err = parseComponents(o.components); err != nil {
		return err
	}
	if cfg.Cluster == server.ClusterSim {
		if cfg.SimNodes, err = parseSimNodes(o.simNodes); err != nil {
			return err
		}
		models, err := perfmodel.Load(o.profiles)
		if err != nil {
			return fmt.Errorf("--profiles: %w", err)
		}
		cfg.SimPool = simPool(o.restartCost, models)
		cfg.Models = models.Names()
	}
	return server.Run(ctx, cfg)
}

// The environment variables of the store's and the queue's URLs.
const (
	envStore = "VODA_STORE"
	envQueue = "VODA_QUEUE"
)

// secretURL resolves the URL of --NAME, which may hold a password: the
// flag's value, else the content of --NAME-file (trimmed: a Secret's
// file often ends in a newline), else the environment variable env.
// Giving both the flag and the file is an error. No error quotes a URL.
func secretURL(name, flagValue, file, env string, getenv func(string) string) (string, error) {
	switch {
	case flagValue != "" && file != "":
		return "", fmt.Errorf("--%s and --%s-file: give one, not both", name, name)
	case flagValue != "":
		return flagValue, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--%s-file: %w", name, err)
		}
		u := strings.TrimSpace(string(b))
		if u == "" {
			return "", fmt.Errorf("--%s-file: %s is empty", name, file)
		}
		return u, nil
	}
	return strings.TrimSpace(getenv(env)), nil
}

// simPool builds the simulated clusters of voda server.
func simPool(restartCost time.Duration, models *perfmodel.Set) server.SimPoolFunc {
	return func(g server.SimGroup, clk k8sclock.Clock, log *slog.Logger) (service.Backend, error) {
		more := make([]livecluster.NodeSize, len(g.More))
		for i, m := range g.More {
			more[i] = livecluster.NodeSize{Nodes: m.Nodes, GPUs: m.GPUs}
		}
		cl, err := livecluster.New(livecluster.Options{
			GPUType: g.GPUType, Nodes: g.Nodes, GPUsPerNode: g.GPUsPerNode, More: more,
			RestartCost: restartCost, Models: models, Clock: clk, Logger: log,
		})
		if err != nil {
			return nil, err
		}
		return cl, nil
	}
}

// The simulated cluster's limits: the simulator's (sim.MaxNodes,
// sim.MaxGPUsPerNode), so that a typo cannot build a million nodes.
const (
	maxSimNodes       = sim.MaxNodes
	maxSimGPUsPerNode = sim.MaxGPUsPerNode
)

// parseSimNodes reads --sim-nodes: TYPE=NODESxGPUS[+NODESxGPUS...], comma
// separated.
func parseSimNodes(s string) ([]server.SimGroup, error) {
	var out []server.SimGroup
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		t, shapes, ok := strings.Cut(part, "=")
		if !ok || t == "" {
			return nil, fmt.Errorf("--sim-nodes: %q: want TYPE=NODESxGPUS[+NODESxGPUS...] with both at least 1, e.g. nvidia-tesla-v100=4x8 or nvidia-tesla-v100=2x8+4x4", part)
		}
		if seen[t] {
			return nil, fmt.Errorf("--sim-nodes: GPU type %s given twice", t)
		}
		seen[t] = true
		// Nodes of one type may differ in size: 2x8+4x4.
		g := server.SimGroup{GPUType: t}
		nodes := 0
		for i, shape := range strings.Split(shapes, "+") {
			ns, gs, ok := strings.Cut(shape, "x")
			n, err1 := strconv.Atoi(ns)
			gpus, err2 := strconv.Atoi(gs)
			if !ok || err1 != nil || err2 != nil || n < 1 || gpus < 1 {
				return nil, fmt.Errorf("--sim-nodes: %q: %q: want NODESxGPUS with both at least 1, e.g. nvidia-tesla-v100=4x8 or nvidia-tesla-v100=2x8+4x4", part, shape)
			}
			if n > maxSimNodes || gpus > maxSimGPUsPerNode || nodes+n > maxSimNodes {
				return nil, fmt.Errorf("--sim-nodes: %q: at most %d nodes of a GPU type and %d GPUs a node", part, maxSimNodes, maxSimGPUsPerNode)
			}
			nodes += n
			if i == 0 {
				g.Nodes, g.GPUsPerNode = n, gpus
			} else {
				g.More = append(g.More, server.NodeSize{Nodes: n, GPUs: gpus})
			}
		}
		out = append(out, g)
	}
	return out, nil // server.Run rejects an empty list
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
