package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/store"
)

// kubeApplyParallelism is how many job objects (or pods) a cycle's
// actions of one kind change at once on Kubernetes.
const kubeApplyParallelism = 16

// KubeOptions configure the schedulers of ClusterKubernetes.
type KubeOptions struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG,
	// ~/.kube/config, else the in-cluster service account.
	Kubeconfig string
	// Namespace holds the jobs whose manifest names none.
	Namespace string
	// JobNamespaces are the namespaces where jobs may run, and the only
	// ones where Voda watches and changes pods and job objects (Namespace
	// alone if empty).
	JobNamespaces []string
	// LeaseNamespace holds the schedulers' leases (Namespace if empty).
	LeaseNamespace string
	// ProgressURL is Voda's API as jobs' pods reach it; when set, every
	// job's pods get what they need to report their progress
	// (docs/progress.md). ProgressAudience is the audience of their
	// tokens (kube.DefaultProgressAudience if empty).
	ProgressURL, ProgressAudience string
	// LogInterval is how often the log of a job with a
	// vodascheduler/progress-log pattern is read (kube.DefaultLogInterval
	// by the flag's default).
	LogInterval time.Duration
	// LeaderElect elects one scheduler per GPU type with a Lease, so
	// replicas can stand by; the durations pace the election.
	LeaderElect                               bool
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Identity is this replica's name in leases (HOSTNAME_PID if empty).
	Identity string
}

var errNoGPUTypes = errors.New("no node is labelled vodascheduler/accelerator=<gpu type>; label the GPU nodes or pass --gpu-types")

// connectKube builds and starts the Kubernetes client: the kubeconfig
// flag, else $KUBECONFIG or ~/.kube/config, else the in-cluster account.
func connectKube(ctx context.Context, o KubeOptions, st store.Store, in progress.Sink, log *slog.Logger) (*kube.Client, error) {
	cfg, err := restConfig(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	// kube does not import the store: it reads only what a start needs.
	jobs := func(ctx context.Context, name string) (kube.Job, error) {
		j, err := st.GetJob(ctx, name)
		return kube.Job{Kind: j.Kind, Manifest: j.Manifest, Status: j.Status.State.Status, ProgressLog: j.ProgressLog}, err
	}
	// Progress read from logs goes the way of the jobs' own reports.
	logProgress := func(ctx context.Context, job string, r kube.LogReport) error {
		_, err := in.Ingest(ctx, job, progress.Report{Generation: r.Generation, Workers: r.Workers, Nodes: r.Nodes,
			Epoch: r.Epoch, TotalEpochs: r.TotalEpochs})
		return err
	}
	client, err := kube.NewClient(kube.Options{Config: cfg, Namespace: o.Namespace, JobNamespaces: o.JobNamespaces, Jobs: jobs, Logger: log,
		Progress:    kube.Progress{URL: o.ProgressURL, Audience: o.ProgressAudience},
		LogProgress: logProgress, LogInterval: o.LogInterval})
	if err != nil {
		return nil, err
	}
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("kubernetes: %w (is the API server reachable and are Voda's RBAC rules applied?)", err)
	}
	return client, nil
}

// restConfig loads the client configuration of the kubeconfig flag, else
// $KUBECONFIG or ~/.kube/config, else the in-cluster account.
func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return cfg, nil
}

// startKube starts one scheduler per GPU type on Kubernetes.
func (s *server) startKube(ctx context.Context) error {
	in := &progress.Ingester{Store: s.store, Clock: s.clock, Logger: s.log}
	client, err := connectKube(ctx, s.cfg.Kube, s.store, in, s.log)
	if err != nil {
		return err
	}
	if len(s.gpuTypes) == 0 {
		s.gpuTypes = client.GPUTypes()
	}
	if len(s.gpuTypes) == 0 {
		return errNoGPUTypes
	}
	s.applyParallelism = kubeApplyParallelism
	for _, t := range s.gpuTypes {
		s.metrics.StandBy(t)
		s.goRun(ctx, "scheduler "+t, func(ctx context.Context) error { return s.lead(ctx, client, t) })
	}
	return nil
}

// lead runs gpuType's scheduler under its Lease, unless leader election
// is off. Each leadership term builds a fresh service on a fresh cluster
// view, so state is rebuilt from the store and the cluster on every
// takeover.
func (s *server) lead(ctx context.Context, client *kube.Client, gpuType string) error {
	term := func(ctx context.Context) error {
		svc, err := s.newService(gpuType, client.Pool(gpuType))
		if err != nil {
			return err
		}
		s.running.set(gpuType, svc)
		defer s.running.set(gpuType, nil)
		return svc.Run(ctx)
	}
	o := s.cfg.Kube
	if !o.LeaderElect {
		return term(ctx)
	}
	id := o.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	return kube.RunLeader(ctx, kube.LeaderOptions{
		Client: client.Clientset(), Namespace: cmp.Or(o.LeaseNamespace, o.Namespace), Lease: kube.LeaseName(gpuType), Identity: id,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Logger: s.log.With("gpuType", gpuType),
	}, term)
}
