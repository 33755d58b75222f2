package kube

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderOptions configure RunLeader. Zero durations take client-go's
// usual values: a 15 s lease renewed within 10 s, retried every 2 s.
type LeaderOptions struct {
	Client    kubernetes.Interface
	Namespace string
	// Lease is the Lease object's name, one per GPU type.
	Lease string
	// Identity names this replica (host name and process, say).
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	Logger        *slog.Logger
}

// LeaseName is the Lease of a GPU type's scheduler.
func LeaseName(gpuType string) string { return "voda-scheduler-" + gpuType }

// RunLeader campaigns for the lease and, each time this replica wins it,
// runs lead with a context that ends when leadership is lost. When lead
// returns (an error, say), the lease is released so another replica can
// take over, and this one campaigns again. RunLeader returns when ctx
// ends, after lead has returned.
func RunLeader(ctx context.Context, opts LeaderOptions, lead func(ctx context.Context) error) error {
	if opts.Client == nil || opts.Lease == "" || opts.Identity == "" {
		return fmt.Errorf("leader election: client, lease and identity are required")
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = 15 * time.Second
	}
	if opts.RenewDeadline == 0 {
		opts.RenewDeadline = 10 * time.Second
	}
	if opts.RetryPeriod == 0 {
		opts.RetryPeriod = 2 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("lease", opts.Namespace+"/"+opts.Lease, "identity", opts.Identity)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: opts.Namespace, Name: opts.Lease},
		Client:     opts.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: opts.Identity},
	}
	for ctx.Err() == nil {
		term, cancel := context.WithCancel(ctx)
		leading := make(chan context.Context, 1)
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   opts.LeaseDuration,
			RenewDeadline:   opts.RenewDeadline,
			RetryPeriod:     opts.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            opts.Lease,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) { leading <- lctx },
				OnStoppedLeading: func() { log.Info("stopped leading") },
				OnNewLeader: func(id string) {
					if id != opts.Identity {
						log.Info("standing by", "leader", id)
					}
				},
			},
		})
		if err != nil {
			cancel()
			return fmt.Errorf("leader election: %w", err)
		}
		runDone := make(chan struct{})
		go func() { le.Run(term); close(runDone) }()
		select {
		case lctx := <-leading:
			log.Info("became leader")
			if err := lead(lctx); err != nil && lctx.Err() == nil {
				log.Error("leader stopped; releasing the lease", "err", err)
			}
			cancel()
			<-runDone
		case <-runDone:
			// Never led: ctx ended while campaigning.
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(opts.RetryPeriod):
		}
	}
	return nil
}
