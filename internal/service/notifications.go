package service

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/store"
)

// What tells the service to look at the store again: the API's
// notifications on the GPU type's queue, and the periodic resync that
// catches any notification lost.

// consume handles the API's notifications until ctx ends. A message is
// acknowledged only after its effect is in the core and the store.
func (s *Service) consume(ctx context.Context) error {
	deliveries, err := s.cfg.Queue.Consume(ctx, queue.SchedulerQueue(s.cfg.GPUType))
	if err != nil {
		return err
	}
	for d := range deliveries {
		if err := s.handle(ctx, d.Body()); err != nil {
			if ctx.Err() != nil {
				break
			}
			s.log.Warn("notification not handled; it will be redelivered", "err", err)
			if err := d.Nack(true); err != nil {
				s.log.Warn("nack", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-s.cfg.WallClock.After(time.Second):
			}
			continue
		}
		if err := d.Ack(); err != nil {
			s.log.Warn("ack", "err", err)
		}
	}
	return ctx.Err()
}

// errBadMessage marks messages that can never be handled.
var errBadMessage = errors.New("bad message")

func (s *Service) handle(ctx context.Context, body []byte) error {
	msg, err := queue.DecodeMessage(body)
	if err != nil {
		s.log.Error("dropping undecodable notification", "err", err)
		return nil
	}
	switch msg.Verb {
	case queue.VerbSettings:
		return s.reloadSettings(ctx)
	case queue.VerbJob:
		var ferr error
		err := s.loop.Do(ctx, func(*scheduler.Core) { ferr = s.look(ctx, s.cfg.Clock.Now(), msg.Job) })
		if err != nil {
			return err
		}
		return ferr
	}
	return errBadMessage
}

// look reads a job afresh and reconciles the core with it. Loop goroutine
// only: reading on the loop is what makes the copy newer than anything
// this service wrote.
func (s *Service) look(ctx context.Context, now time.Time, name string) error {
	j, err := s.cfg.Store.GetJob(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		if _, held := s.jobs[name]; held {
			s.log.Warn("job vanished from the store; dropping it", "job", name)
			s.remove(ctx, now, name, endedElsewhere)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if j.Unreadable == "" && j.Spec.GPUType != s.cfg.GPUType {
		s.log.Warn("notification for another GPU type's job", "job", name, "jobGPUType", j.Spec.GPUType)
		return nil
	}
	s.reconcile(ctx, now, j)
	return nil
}

// reloadSettings applies the stored algorithm and rate limit.
func (s *Service) reloadSettings(ctx context.Context) error {
	rec, err := s.cfg.Store.GetScheduler(ctx, s.cfg.GPUType)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrDamaged) {
		return nil // keep what runs; start logged a damaged record
	}
	if err != nil {
		return err
	}
	return s.loop.Do(ctx, func(c *scheduler.Core) { s.settings.apply(c, rec.Settings) })
}

// resyncEvery reconciles the store with the core every cfg.Resync of wall
// time, so a lost notification delays a change but never drops it.
func (s *Service) resyncEvery(ctx context.Context) error {
	t := s.cfg.WallClock.NewTicker(s.cfg.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
		if err := s.resync(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("resync", "err", err)
		}
	}
}

// resync compares the store's live jobs with the core. The list is read
// off the loop (it may be large), so it may be older than what the loop
// did meanwhile: every job it says needs a change is read again on the
// loop before anything is done about it.
func (s *Service) resync(ctx context.Context) error {
	if err := s.reloadSettings(ctx); err != nil {
		return err
	}
	jobs, err := s.cfg.Store.ListJobs(ctx, store.ListOptions{GPUType: s.cfg.GPUType, Live: true})
	if err != nil {
		return err
	}
	return s.loop.Do(ctx, func(c *scheduler.Core) {
		now := s.cfg.Clock.Now()
		listed := make(map[string]bool, len(jobs))
		for _, j := range jobs {
			listed[j.Name] = true
			if !s.needsLook(j) {
				// Reports change only a record's progress, which the
				// list carries as fresh as a look would.
				if t, held := s.jobs[j.Name]; held {
					s.learn.observe(t, j)
				}
				continue
			}
			if err := s.look(ctx, now, j.Name); err != nil {
				s.log.Warn("resync job", "job", j.Name, "err", err)
			}
		}
		// Jobs the core holds that the live list lacks ended or vanished
		// elsewhere, or were admitted after the list was read.
		for _, name := range slices.Sorted(maps.Keys(s.jobs)) {
			if listed[name] {
				continue
			}
			if err := s.look(ctx, now, name); err != nil {
				s.log.Warn("resync job", "job", name, "err", err)
			}
		}
		s.estimate()
		s.persist(ctx, now, nil)
	})
}

// needsLook reports whether a listed record may ask for a change: a job
// to admit, delete, re-prioritise, remove or set aside.
func (s *Service) needsLook(j store.Job) bool {
	if s.statuses.pending(j.Name) {
		return false
	}
	if j.Unreadable != "" {
		return true
	}
	if _, held := s.jobs[j.Name]; !held {
		return !j.Status.State.Status.Done()
	}
	cur, _ := s.core.Job(j.Name)
	return j.DeleteRequested || j.Status.State.Status.Done() || cur.Spec.Priority != j.Spec.Priority
}
