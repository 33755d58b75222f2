package service

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/store"
)

// finish removes a job from the core, halts it on the cluster if it still
// holds GPUs there, and records its terminal status. Loop goroutine only.
func (s *Service) finish(ctx context.Context, now time.Time, name string, status model.Status) {
	job, err := s.core.Finish(now, name, status)
	if err != nil {
		s.log.Warn("finish job", "job", name, "err", err)
		return
	}
	progress := s.cfg.Cluster.Progress(name)
	if status == model.StatusCompleted {
		progress = 1
	}
	if len(job.State.Placement) > 0 {
		halt := scheduler.Action{Kind: scheduler.Halt, Job: name, From: job.State.Placement}
		if err := s.cfg.Cluster.Apply(ctx, halt); err != nil {
			s.log.Warn("halt finished job", "job", name, "err", err)
		}
	}
	s.cfg.Cluster.Forget(name)
	s.collector.Forget(name)
	delete(s.apps, name)
	delete(s.saved, name)
	switch status {
	case model.StatusCompleted:
		s.cfg.Metrics.JobsCompleted.WithLabelValues(s.cfg.GPUType).Inc()
	case model.StatusFailed:
		s.cfg.Metrics.JobsFailed.WithLabelValues(s.cfg.GPUType).Inc()
	}
	st := job.State
	st.GPUs, st.Placement = 0, nil
	s.save(ctx, name, store.JobStatus{State: st, Est: job.Est, Progress: progress, FinishTime: now, Updated: now})
	s.log.Info("job finished", "job", name, "status", string(status))
}

// saveTerminal records a terminal status for a job the core does not hold.
func (s *Service) saveTerminal(ctx context.Context, now time.Time, j store.Job, status model.Status) {
	st := j.Status
	st.State.Status = status
	st.State.GPUs, st.State.Placement = 0, nil
	st.QueuePosition, st.EstimatedStart = 0, time.Time{}
	st.FinishTime, st.Updated = now, now
	s.save(ctx, j.Name, st)
}

func (s *Service) save(ctx context.Context, name string, st store.JobStatus) {
	if _, err := s.cfg.Store.SaveStatus(ctx, map[string]store.JobStatus{name: st}); err != nil {
		s.log.Error("save job status", "job", name, "err", err)
	}
}

// onDone is the cluster's report that a job finished by itself.
func (s *Service) onDone(name string, status model.Status) {
	ctx := context.Background()
	err := s.loop.Do(ctx, func(*scheduler.Core) {
		if _, held := s.core.Job(name); held {
			s.finish(ctx, s.cfg.Clock.Now(), name, status)
		}
	})
	if err != nil {
		s.log.Error("record finished job", "job", name, "err", err)
	}
}

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
			case <-time.After(time.Second):
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
		j, err := s.cfg.Store.GetJob(ctx, msg.Job)
		if errors.Is(err, store.ErrNotFound) {
			s.log.Warn("notification for a job not in the store", "job", msg.Job)
			return nil
		}
		if err != nil {
			return err
		}
		if j.Spec.GPUType != s.cfg.GPUType {
			s.log.Warn("notification for another GPU type's job", "job", msg.Job, "jobGPUType", j.Spec.GPUType)
			return nil
		}
		return s.loop.Do(ctx, func(*scheduler.Core) { s.reconcile(ctx, s.cfg.Clock.Now(), j) })
	}
	return errBadMessage
}

// reloadSettings applies the stored algorithm and rate limit.
func (s *Service) reloadSettings(ctx context.Context) error {
	rec, err := s.cfg.Store.GetScheduler(ctx, s.cfg.GPUType)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.loop.Do(ctx, func(c *scheduler.Core) {
		if reflect.DeepEqual(rec.Settings, s.settings) {
			return
		}
		s.settings = rec.Settings
		a := s.allocator(rec.Settings)
		c.SetAllocator(a)
		c.SetRateLimit(s.rateLimit(rec.Settings))
		s.log.Info("settings changed", "algorithm", a.Name(), "rateLimit", c.RateLimit())
	})
}

// resyncEvery reconciles the store with the core every cfg.Resync of wall
// time, so a lost notification delays a change but never drops it.
func (s *Service) resyncEvery(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if err := s.resync(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("resync", "err", err)
		}
	}
}

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
		for _, j := range jobs {
			s.reconcile(ctx, now, j)
		}
		s.persist(ctx, now, nil)
	})
}

// afterCycle records a cycle: metrics, fresh estimates for the next cycle,
// and every changed job status. Loop goroutine only.
func (s *Service) afterCycle(rep scheduler.CycleReport, err error) {
	ctx := context.Background()
	gt := s.cfg.GPUType
	m := s.cfg.Metrics
	s.cycles++
	s.lastCycle = rep.Time
	m.Reschedules.WithLabelValues(gt).Inc()
	m.RescheduleDuration.WithLabelValues(gt).Observe(rep.Duration.Seconds())
	m.AllocatorDuration.WithLabelValues(gt, rep.Algorithm).Observe(rep.AllocateDuration.Seconds())
	m.PlacementDuration.WithLabelValues(gt).Observe(rep.PlaceDuration.Seconds())
	m.WorkersMigrated.WithLabelValues(gt).Add(float64(rep.Migrated))
	m.LaunchersRestarted.WithLabelValues(gt).Add(float64(len(rep.Actions) - rep.FailedActions))
	if err != nil {
		s.log.Error("scheduling cycle failed", "err", err)
	} else if len(rep.Actions) > 0 {
		s.log.Info("cycle", "jobs", rep.Jobs, "allocated", rep.Allocated, "gpus", rep.GPUs,
			"actions", len(rep.Actions), "migrated", rep.Migrated, "failed", rep.FailedActions)
	}
	s.estimate()
	s.persist(ctx, rep.Time, rep.Order)
}

// estimate feeds the collector what the cluster measured and gives every
// job its new estimate.
func (s *Service) estimate() {
	est, ok := s.cfg.Cluster.(Estimator)
	if !ok {
		return
	}
	s.collector.ObserveAll(est.Observations())
	for _, j := range s.core.Snapshot(s.cfg.Clock.Now()).Jobs {
		rem, ok := est.Remaining(j.Spec.Name)
		if !ok {
			continue
		}
		e := s.collector.Estimate(j.Spec.Name, s.apps[j.Spec.Name], rem, j.Spec.MaxWorkers)
		if err := s.core.SetEstimates(j.Spec.Name, e); err != nil {
			s.log.Warn("set estimates", "job", j.Spec.Name, "err", err)
		}
	}
}

// persist writes every job status that changed since it was last saved,
// with queue positions and expected starts, and the scheduler's status.
// order is the last allocation's order (nil: submit order).
func (s *Service) persist(ctx context.Context, now time.Time, order []string) {
	snap := s.core.Snapshot(now)
	fc := scheduler.Forecasts(snap, order)
	changed := map[string]store.JobStatus{}
	st := store.SchedulerStatus{Now: now, LastCycle: s.lastCycle, Cycles: s.cycles, Nodes: len(snap.Nodes), GPUs: snap.TotalGPUs()}
	cross := 0
	for _, j := range snap.Jobs {
		js := store.JobStatus{State: j.State, Est: j.Est, Progress: s.cfg.Cluster.Progress(j.Spec.Name)}
		if f, ok := fc[j.Spec.Name]; ok {
			js.QueuePosition, js.EstimatedStart = f.Position, f.Start
		}
		if j.State.GPUs > 0 {
			st.Running++
			st.GPUsInUse += j.State.GPUs
			if len(j.State.Placement) > 1 {
				cross++
			}
		} else {
			st.Waiting++
		}
		if old, ok := s.saved[j.Spec.Name]; ok && reflect.DeepEqual(old, js) {
			continue
		}
		changed[j.Spec.Name] = js
	}
	if len(changed) > 0 {
		for name, js := range changed {
			js.Updated = now
			changed[name] = js
		}
		missing, err := s.cfg.Store.SaveStatus(ctx, changed)
		if err != nil {
			s.log.Error("save job statuses; retrying at the next cycle or resync", "jobs", len(changed), "err", err)
		} else {
			for name, js := range changed {
				js.Updated = time.Time{}
				s.saved[name] = js
			}
			for _, name := range missing {
				s.log.Warn("job vanished from the store", "job", name)
			}
		}
	}
	if err := s.cfg.Store.PutStatus(ctx, s.cfg.GPUType, st); err != nil {
		s.log.Error("save scheduler status", "err", err)
	}
	gt := s.cfg.GPUType
	m := s.cfg.Metrics
	m.JobsReady.WithLabelValues(gt).Set(float64(len(snap.Jobs)))
	m.JobsWaiting.WithLabelValues(gt).Set(float64(st.Waiting))
	m.JobsRunning.WithLabelValues(gt).Set(float64(st.Running))
	m.JobsCrossNode.WithLabelValues(gt).Set(float64(cross))
	m.GPUs.WithLabelValues(gt).Set(float64(st.GPUs))
	m.GPUsInUse.WithLabelValues(gt).Set(float64(st.GPUsInUse))
}

// watchNodes brings the core's nodes in line with the cluster's each time
// they change: new and changed nodes (capacity, cordon) are added, gone
// and unready ones removed, and the next cycle re-places what they held.
func (s *Service) watchNodes(ctx context.Context, src NodeSource) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-src.NodesChanged():
		}
		nodes := s.cfg.Cluster.Nodes()
		err := s.loop.Do(ctx, func(c *scheduler.Core) {
			now := s.cfg.Clock.Now()
			cur := map[string]model.Node{}
			for _, n := range nodes {
				cur[n.Name] = n
			}
			for _, old := range c.Nodes() {
				n, ok := cur[old.Name]
				if !ok {
					s.removeNode(ctx, c, now, old.Name)
					continue
				}
				delete(cur, old.Name)
				if n.GPUs != old.GPUs || n.Cordoned != old.Cordoned {
					s.log.Info("node changed", "node", n.Name, "gpus", n.GPUs, "cordoned", n.Cordoned)
					if err := c.AddNode(now, n); err != nil {
						s.log.Warn("update node", "node", n.Name, "err", err)
					}
				}
			}
			for _, n := range nodes {
				if _, added := cur[n.Name]; !added {
					continue
				}
				s.log.Info("node joined", "node", n.Name, "gpus", n.GPUs, "cordoned", n.Cordoned)
				if err := c.AddNode(now, n); err != nil {
					s.log.Warn("add node", "node", n.Name, "err", err)
				}
			}
		})
		if err != nil {
			return err
		}
	}
}

// removeNode takes a node out of the core and tells the cluster at once
// which jobs lost workers there: a job left with none is halted, the
// others shrink to what they keep. The next cycle re-places them.
func (s *Service) removeNode(ctx context.Context, c *scheduler.Core, now time.Time, node string) {
	before := map[string]model.JobPlacement{}
	for _, j := range c.Snapshot(now).Jobs {
		for _, nw := range j.State.Placement {
			if nw.Node == node {
				before[j.Spec.Name] = j.State.Placement
				break
			}
		}
	}
	s.log.Info("node left", "node", node, "jobsThere", len(before))
	if err := c.RemoveNode(now, node); err != nil {
		s.log.Warn("remove node", "node", node, "err", err)
		return
	}
	names := make([]string, 0, len(before))
	for name := range before {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		j, _ := c.Job(name)
		a := scheduler.Action{Kind: scheduler.Shrink, Job: name, From: before[name], To: j.State.Placement}
		if len(a.To) == 0 {
			a.Kind = scheduler.Halt
		}
		if err := s.cfg.Cluster.Apply(ctx, a); err != nil {
			s.log.Warn("apply the loss of a node", "job", name, "node", node, "err", err)
		}
	}
}
