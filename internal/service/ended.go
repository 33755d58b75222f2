package service

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/scheduler"
)

// endedJobs are the jobs the cluster reported done that the loop has not
// removed yet, with their status (see onDone). Any goroutine.
type endedJobs struct {
	mu sync.Mutex
	m  map[string]model.Status
}

// add queues a job's end; the first report of a job counts.
func (e *endedJobs) add(name string, status model.Status) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]model.Status{}
	}
	if _, ok := e.m[name]; !ok {
		e.m[name] = status
	}
}

// take returns the queued ends and empties the queue (nil if empty).
func (e *endedJobs) take() map[string]model.Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.m) == 0 {
		return nil
	}
	m := e.m
	e.m = nil
	return m
}

// onDone is the cluster's report that a job finished by itself.
//
// Jobs the cluster reports done at once (the kube pool reports each from
// a goroutine of its own, the simulated cluster those done at the same
// time together) are removed in one turn of the loop, in the order of
// their names, with one write of their statuses and one of each
// application's history: one turn and one write per job made the
// completions wait behind a cycle each, a few a second with thousands of
// jobs waiting, while the jobs kept their GPUs.
func (s *Service) onDone(ctx context.Context, name string, status model.Status) {
	s.ended.add(name, status)
	err := s.loop.Do(ctx, func(*scheduler.Core) { s.removeEnded(ctx) })
	switch {
	case errors.Is(err, scheduler.ErrStopped) || ctx.Err() != nil:
		// Shutting down: the job's record is still live, and the next
		// start reconciles it with the cluster.
		s.log.Debug("job finished while the scheduler stopped", "job", name, "status", string(status))
	case err != nil:
		s.log.Error("record finished job", "job", name, "err", err)
	}
}

// endTimer is a Backend that knows when a job's work ended, earlier than
// the service hears of it: the simulated cluster, whose jobs end at an
// instant it computes. Their finish time is that instant (the GPUs are
// freed, and counted as held, until the service hears).
type endTimer interface {
	EndedAt(name string) (time.Time, bool)
}

// removeEnded removes the jobs onDone queued (none if an earlier turn
// took them). Loop goroutine only.
func (s *Service) removeEnded(ctx context.Context) {
	ended := s.ended.take()
	if len(ended) == 0 {
		return
	}
	now := s.cfg.Clock.Now()
	apps := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(ended)) {
		why := endedHere(ended[name])
		if e, ok := s.cfg.Backend.(endTimer); ok {
			why.ended, _ = e.EndedAt(name)
		}
		if app, ok := s.takeOut(ctx, now, name, why); ok {
			apps[app] = true
		}
	}
	for _, app := range slices.Sorted(maps.Keys(apps)) {
		s.learn.save(ctx, app)
	}
	s.statuses.writeFinal(ctx)
}
