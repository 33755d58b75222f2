package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/internal/service"
	"github.com/vodascheduler/voda/internal/store"
)

// kubeApplyParallelism is how many job objects (or pods) a cycle's
// actions of one kind change at once on Kubernetes.
const kubeApplyParallelism = 16

// kubeOptions are the flags of --cluster kubernetes.
type kubeOptions struct {
	kubeconfig    string
	namespace     string
	leaseNS       string
	leaderElect   bool
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	identity      string
}

// connectKube builds and starts the Kubernetes client: the kubeconfig
// flag, else $KUBECONFIG or ~/.kube/config, else the in-cluster account.
func connectKube(ctx context.Context, o kubeOptions, st store.Store, log *slog.Logger) (*kube.Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	// kube does not import the store: it reads only what a start needs.
	jobs := func(ctx context.Context, name string) (kube.Job, error) {
		j, err := st.GetJob(ctx, name)
		return kube.Job{Kind: j.Kind, Manifest: j.Manifest, Status: j.Status.State.Status}, err
	}
	client, err := kube.NewClient(kube.Options{Config: cfg, Namespace: o.namespace, Jobs: jobs, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("kubernetes: %w (is the API server reachable and are Voda's RBAC rules applied?)", err)
	}
	return client, nil
}

// kubeSchedulers runs one scheduler service per GPU type on Kubernetes,
// each under its own Lease unless leader election is off.
type kubeSchedulers struct {
	mu      sync.Mutex
	current map[string]*service.Service // GPU type -> service of this replica's term
}

// Ready is nil when every GPU type either runs here and is healthy
// (recovered, not wedged, writing to the store), or is led by another
// replica.
func (k *kubeSchedulers) Ready() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, t := range slices.Sorted(maps.Keys(k.current)) {
		if err := k.current[t].Health(); err != nil {
			return err
		}
	}
	return nil
}

func (k *kubeSchedulers) set(gpuType string, s *service.Service) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s == nil {
		delete(k.current, gpuType)
		return
	}
	k.current[gpuType] = s
}

// run leads gpuType's scheduler: each leadership term builds a fresh
// service on a fresh pool, so state is rebuilt from the store and the
// cluster on every takeover.
func (k *kubeSchedulers) run(ctx context.Context, o kubeOptions, client *kube.Client, gpuType string,
	newService func(pool *kube.Pool) (*service.Service, error), log *slog.Logger) error {
	lead := func(ctx context.Context) error {
		svc, err := newService(client.Pool(gpuType))
		if err != nil {
			return err
		}
		k.set(gpuType, svc)
		defer k.set(gpuType, nil)
		return svc.Run(ctx)
	}
	if !o.leaderElect {
		return lead(ctx)
	}
	id := o.identity
	if id == "" {
		host, _ := os.Hostname()
		id = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	return kube.RunLeader(ctx, kube.LeaderOptions{
		Client: client.Clientset(), Namespace: cmp.Or(o.leaseNS, o.namespace), Lease: kube.LeaseName(gpuType), Identity: id,
		LeaseDuration: o.leaseDuration, RenewDeadline: o.renewDeadline, RetryPeriod: o.retryPeriod,
		Logger: log.With("gpuType", gpuType),
	}, lead)
}

var errNoGPUTypes = errors.New("no node is labelled vodascheduler/accelerator=<gpu type>; label the GPU nodes or pass --gpu-types")
