package service

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/store"
)

// start recovers the GPU type's state from the store: it builds the core
// from the stored settings and the cluster's nodes, reconciles it with
// every live job (admitting, restoring, cancelling or setting each
// aside), loads the applications' histories, and makes the loop.
func (s *Service) start(ctx context.Context) error {
	rec, err := s.cfg.Store.GetScheduler(ctx, s.cfg.GPUType)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case errors.Is(err, store.ErrDamaged):
		s.log.Error("stored scheduler settings unreadable; running on the defaults until they are set again", "err", err)
		rec = store.Scheduler{}
	case err != nil:
		return fmt.Errorf("scheduler %s: load settings: %w", s.cfg.GPUType, err)
	}
	s.settings.current = rec.Settings
	alloc := s.settings.allocator(rec.Settings)
	core, err := scheduler.NewCore(scheduler.Config{
		GPUType: s.cfg.GPUType, Allocator: alloc, Placer: s.cfg.Placer, Port: s.cfg.Backend,
		RateLimit: s.settings.rateLimit(rec.Settings), StartInterval: s.cfg.StartInterval, Tick: s.cfg.Tick, Logger: s.log, Stopwatch: clock.RealClock{},
		ApplyParallelism: s.cfg.ApplyParallelism,
	})
	if err != nil {
		return fmt.Errorf("scheduler %s: %w", s.cfg.GPUType, err)
	}
	s.core = core
	now := s.cfg.Clock.Now()
	for _, n := range s.cfg.Backend.Nodes() {
		if err := core.AddNode(now, n); err != nil {
			return fmt.Errorf("scheduler %s: %w", s.cfg.GPUType, err)
		}
	}
	jobs, err := s.cfg.Store.ListJobs(ctx, store.ListOptions{GPUType: s.cfg.GPUType, Live: true})
	if err != nil {
		return fmt.Errorf("scheduler %s: recover jobs: %w", s.cfg.GPUType, err)
	}
	// The loop does not run yet: this goroutine owns the core, and the
	// list is as fresh as any read.
	for _, j := range jobs {
		s.reconcile(ctx, now, j)
	}
	s.gpusPerNode()
	s.learn.load(ctx)
	s.log.Info("recovered jobs from the store", "live", len(jobs), "restored", core.Len())
	s.loop = scheduler.NewLoop(core, s.cfg.Clock, s.cfg.WallClock)
	s.loop.BeforeCycle = s.beforeCycle
	s.loop.OnCycle = s.afterCycle
	s.loop.Hold = s.cfg.HoldClock
	return nil
}
