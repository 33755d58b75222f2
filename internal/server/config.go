package server

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/internal/service"
)

// The clusters a server's schedulers can drive (Config.Cluster).
const (
	ClusterSim        = "sim"
	ClusterKubernetes = "kubernetes"
)

// Defaults of the retention rule (`voda server --finished-retention`,
// `--max-finished-jobs`; docs/server.md#retention says why).
const (
	DefaultFinishedRetention = 30 * 24 * time.Hour
	DefaultMaxFinishedJobs   = 100000
)

// SimGroup is one GPU type of a simulated cluster.
type SimGroup struct {
	GPUType            string
	Nodes, GPUsPerNode int
	// More are nodes of other sizes of the same GPU type.
	More []NodeSize
}

// NodeSize is a count of simulated nodes of one size.
type NodeSize struct{ Nodes, GPUs int }

// SimPoolFunc builds the simulated cluster of one GPU type on the
// server's clock.
type SimPoolFunc func(g SimGroup, clk clock.Clock, log *slog.Logger) (service.Backend, error)

// Config configures a server. Its errors name the `voda server` flag of
// the field at fault.
type Config struct {
	// Addr is the HOST:PORT the API listens on; with port 0 the system
	// picks one, which Listening learns.
	Addr string
	// Listening, if set, is called with the API's address once it accepts
	// connections.
	Listening func(addr string)
	// ProbeAddr, if set, is the HOST:PORT of a listener of its own for
	// the health probes (api.Server.ProbeHandler), which ProbeListening
	// learns as Listening does.
	ProbeAddr      string
	ProbeListening func(addr string)
	// DataDir is the embedded store's directory, used when StoreURI is
	// empty; StoreURI may also be a mongodb:// URI.
	DataDir, StoreURI string
	// QueueURL is empty or mem:// for the in-process queue, or an amqp://
	// URL (RabbitMQ).
	QueueURL string
	// API and Schedulers are the parts this process runs; at least one.
	API, Schedulers bool
	// Cluster is what the schedulers drive: ClusterSim or ClusterKubernetes.
	Cluster string
	// SimNodes are the simulated cluster's GPU types (ClusterSim), each
	// built by SimPool when Schedulers run.
	SimNodes []SimGroup
	SimPool  SimPoolFunc
	// Models are the performance models jobs may name; empty for a real
	// cluster, which ignores the setting.
	Models []string
	// GPUTypes are the GPU types the API accepts and the schedulers run;
	// empty means those of SimNodes, or of the Kubernetes nodes.
	GPUTypes []string
	// Speed is how many times faster than real time the clock runs; 1 on
	// Kubernetes.
	Speed float64
	// NoSimReports stops the simulated cluster's jobs from reporting
	// their progress, leaving it to processes that report over HTTP (a
	// real trainer run beside the simulated cluster).
	NoSimReports bool
	// Algorithm and RateLimit apply to GPU types with none set at run
	// time; Placer places every GPU type's workers.
	Algorithm, Placer string
	RateLimit         time.Duration
	// Tick is the period of cycles when no event asks for one; Resync the
	// wall time between reconciliations of the store with the schedulers.
	Tick, Resync time.Duration
	// MaxConnections bounds the client connections of each listener (-1:
	// no limit); MaxWorkers the workers one job may ask for.
	MaxConnections, MaxWorkers int
	// MultiGPUWorkers accepts jobs whose workers hold several GPUs
	// (api.Config.MultiGPUWorkers).
	MultiGPUWorkers bool
	// FirstRequestGrace is how long a new connection may go without a
	// complete request before, at the cap, it goes first (0:
	// api.DefaultFirstRequestGrace).
	FirstRequestGrace time.Duration
	// MaxEventStreams bounds the API's open event streams (0:
	// api.DefaultMaxStreams).
	MaxEventStreams int
	// MaxEventStreamsPerUser bounds the event streams of one caller (0:
	// api.DefaultMaxStreamsPerCaller).
	MaxEventStreamsPerUser int
	Kube                   KubeOptions
	// Auth says who may call the API and whether it serves TLS.
	Auth AuthOptions
	// Logger is slog.Default() if nil.
	Logger *slog.Logger

	// FinishedRetention and MaxFinishedJobs are the retention rule for
	// finished jobs (internal/retention): removed once finished longer
	// ago, and the oldest beyond the count; 0 sets no limit of that kind,
	// and both 0 keep every job. A process that runs schedulers applies
	// the rule every RetentionInterval of wall time (0:
	// retention.DefaultInterval).
	FinishedRetention time.Duration
	MaxFinishedJobs   int
	RetentionInterval time.Duration

	// NoJobMetrics leaves out of /metrics every series that names a job
	// (`voda server --per-job-metrics=false`; docs/security.md): whoever
	// may scrape it then learns no job's name or namespace.
	NoJobMetrics bool

	// QuotasFile, if set, is a YAML or JSON list of teams' quotas
	// (ParseQuotas) written at start into each GPU type's settings that
	// hold no quotas yet (`voda server --quotas-file`): it seeds them,
	// and the API owns them afterwards.
	QuotasFile string

	// PodSecurity and AllowServiceAccount are api.Config's: the Pod
	// Security Standards level of jobs' pod templates, and whether they
	// may use a service account.
	PodSecurity         string
	AllowServiceAccount bool
}

// validate reports the first setting Run cannot start with.
func (c *Config) validate() error {
	switch {
	case !c.API && !c.Schedulers:
		return errors.New("--components: nothing to run")
	case !(c.Speed > 0):
		return fmt.Errorf("--speed: %v must be positive", c.Speed)
	case c.MaxConnections == 0 || c.MaxConnections < -1:
		return fmt.Errorf("--max-connections: %d must be positive, or -1 for no limit", c.MaxConnections)
	case c.FirstRequestGrace < 0:
		return fmt.Errorf("--first-request-grace: %v must be positive", c.FirstRequestGrace)
	case c.ProbeAddr != "" && !c.API:
		return errors.New("--probe-addr: the probes are the API's; run it (--components all or api)")
	case c.MaxEventStreams < 0:
		return fmt.Errorf("--max-event-streams: %d must be positive", c.MaxEventStreams)
	case c.FinishedRetention < 0:
		return fmt.Errorf("--finished-retention: %v must be positive, or 0 to keep finished jobs whatever their age", c.FinishedRetention)
	case c.MaxFinishedJobs < 0:
		return fmt.Errorf("--max-finished-jobs: %d must be positive, or 0 to keep any number", c.MaxFinishedJobs)
	case c.RetentionInterval < 0:
		return fmt.Errorf("--retention-interval: %v must be positive", c.RetentionInterval)
	case c.MaxEventStreamsPerUser < 0:
		return fmt.Errorf("--max-event-streams-per-user: %d must be positive", c.MaxEventStreamsPerUser)
	case c.MaxWorkers < 1:
		return fmt.Errorf("--max-workers: %d must be at least 1", c.MaxWorkers)
	case jobspec.CheckPodSecurity(c.PodSecurity) != nil:
		return fmt.Errorf("--pod-security: %w", jobspec.CheckPodSecurity(c.PodSecurity))
	}
	if c.API {
		if err := c.Auth.validate(c.Addr); err != nil {
			return err
		}
	}
	switch c.Cluster {
	case ClusterSim:
		if len(c.SimNodes) == 0 {
			return errors.New("--sim-nodes: at least one GPU type is needed")
		}
		if c.Schedulers && c.SimPool == nil {
			return errors.New("server: schedulers on a simulated cluster need Config.SimPool")
		}
	case ClusterKubernetes:
		if c.Speed != 1 {
			return fmt.Errorf("--speed: %v: a real cluster runs in real time (1)", c.Speed)
		}
		if ns := c.Kube.JobNamespaces; len(ns) > 0 && !slices.Contains(ns, c.Kube.Namespace) {
			return fmt.Errorf("--job-namespaces: %s must include --namespace %s, where jobs naming no namespace run", strings.Join(ns, ","), c.Kube.Namespace)
		}
		if !c.Schedulers && len(c.GPUTypes) == 0 {
			return errors.New("--gpu-types: an API without schedulers on Kubernetes needs the GPU types it accepts")
		}
		if d := c.Kube.LogInterval; d != 0 && (d < time.Second || d > time.Hour) {
			return fmt.Errorf("--progress-log-interval: %v must be between 1s and 1h", d)
		}
	default:
		return fmt.Errorf("--cluster: %q is not sim or kubernetes", c.Cluster)
	}
	if _, err := algorithm.Builtin().NewFromMap(c.Algorithm, nil); err != nil {
		return fmt.Errorf("--algorithm: %w", err)
	}
	return nil
}

// gpuTypes returns the GPU types known before any cluster is asked.
func (c *Config) gpuTypes() []string {
	if len(c.GPUTypes) > 0 || c.Cluster != ClusterSim {
		return c.GPUTypes
	}
	var types []string
	for _, g := range c.SimNodes {
		types = append(types, g.GPUType)
	}
	return types
}

// jobNamespaces returns the namespaces jobs may name: on Kubernetes those
// the schedulers watch (--job-namespaces, else --namespace); on a
// simulated cluster any.
func (c *Config) jobNamespaces() []string {
	switch {
	case c.Cluster != ClusterKubernetes:
		return nil
	case len(c.Kube.JobNamespaces) > 0:
		return c.Kube.JobNamespaces
	}
	return []string{cmp.Or(c.Kube.Namespace, kube.DefaultNamespace)}
}

// defaultNamespace is the namespace of a manifest that names none: on
// Kubernetes --namespace, where such jobs run; elsewhere the API's
// default.
func (c *Config) defaultNamespace() string {
	if c.Cluster != ClusterKubernetes {
		return ""
	}
	return cmp.Or(c.Kube.Namespace, kube.DefaultNamespace)
}
