package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/store"
)

// finish removes a job from the core, halts it on the cluster if it still
// holds GPUs there, and records its terminal status. Loop goroutine only.
func (s *Service) finish(ctx context.Context, now time.Time, name string, status model.Status) {
	if app, ok := s.end(ctx, now, name, status); ok {
		s.saveHistory(ctx, app)
		s.writeFinal(ctx, now)
	}
}

// end is finish without its writes: the job's terminal status waits in
// s.final, and what its application measured in the collector. It returns
// the job's application, and whether the service held the job.
func (s *Service) end(ctx context.Context, now time.Time, name string, status model.Status) (app string, ok bool) {
	t, held := s.jobs[name]
	if !held {
		return "", false
	}
	app = t.app
	job, ok := s.release(ctx, now, name, status)
	if !ok {
		return "", false
	}
	progress := s.cfg.Backend.Progress(name)
	if status == model.StatusCompleted {
		progress = 1
	}
	switch status {
	case model.StatusCompleted:
		s.cfg.Metrics.JobsCompleted.WithLabelValues(s.cfg.GPUType).Inc()
	case model.StatusFailed:
		s.cfg.Metrics.JobsFailed.WithLabelValues(s.cfg.GPUType).Inc()
	}
	st := job.State
	st.GPUs, st.Placement = 0, nil
	s.final[name] = store.StatusWrite{
		Status: store.JobStatus{State: st, Est: job.Est, Progress: progress, FinishTime: now, Updated: now,
			Allocations: store.AppendAllocation(t.allocations, now, nil)},
		Revision: t.revision,
	}
	s.cfg.Backend.Forget(name)
	s.log.Info("job finished", "job", name, "status", string(status))
	return app, true
}

// drop removes a job that ended elsewhere (its record is terminal, gone
// or unreadable) from the core and the cluster without writing anything.
func (s *Service) drop(ctx context.Context, now time.Time, name string) {
	app := ""
	if t := s.jobs[name]; t != nil {
		app = t.app
	}
	if _, ok := s.release(ctx, now, name, model.StatusCanceled); ok {
		s.cfg.Backend.Forget(name)
		s.saveHistory(ctx, app)
	}
}

// release takes a job out of the core, halting its workers, and forgets
// what the service kept of it; what it measured joins its application's
// history in the collector, which the caller saves (saveHistory).
func (s *Service) release(ctx context.Context, now time.Time, name string, status model.Status) (model.Job, bool) {
	job, err := s.core.Finish(now, name, status)
	if err != nil {
		s.log.Warn("finish job", "job", name, "err", err)
		return model.Job{}, false
	}
	if len(job.State.Placement) > 0 {
		halt := scheduler.Action{Kind: scheduler.Halt, Job: name, From: job.State.Placement}
		if err := s.cfg.Backend.Apply(ctx, halt); err != nil {
			s.log.Warn("halt finished job", "job", name, "err", err)
		}
	}
	s.collector.Forget(name)
	m := s.cfg.Metrics
	for _, g := range []*prometheus.GaugeVec{m.JobProgress, m.JobRemainingSeconds, m.JobThroughput, m.JobWaitingSeconds} {
		g.DeleteLabelValues(s.cfg.GPUType, name)
	}
	delete(s.jobs, name)
	return job, true
}

// saveTerminal records a terminal status for a job the core does not hold.
func (s *Service) saveTerminal(ctx context.Context, now time.Time, j store.Job, status model.Status) {
	st := j.Status
	st.State.Status = status
	st.State.GPUs, st.State.Placement = 0, nil
	st.QueuePosition, st.EstimatedStart = 0, time.Time{}
	st.Reason, st.Message = "", ""
	st.FinishTime, st.Updated = now, now
	st.Allocations = store.AppendAllocation(st.Allocations, now, nil)
	s.final[j.Name] = store.StatusWrite{Status: st, Revision: j.StatusRevision}
	s.writeFinal(ctx, now)
}

// writeFinal writes the pending terminal statuses. Those the store did not
// take stay pending: retried at the next persist, and never admitted again
// meanwhile.
func (s *Service) writeFinal(ctx context.Context, now time.Time) {
	if len(s.final) == 0 {
		return
	}
	res, err := s.cfg.Store.SaveStatus(ctx, s.final)
	s.storeWrote(err)
	if err != nil {
		s.log.Error("save finished jobs' statuses; retrying at the next cycle", "jobs", len(s.final), "err", err)
		return
	}
	s.settleFinal(ctx, res)
}

// settleFinal clears the terminal writes the store took or no longer
// needs, and rebases on a newer revision those another writer got to
// first while the job was still live.
func (s *Service) settleFinal(ctx context.Context, res store.SaveResult) {
	conflicts := map[string]bool{}
	for _, name := range res.Conflicts {
		conflicts[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(s.final)) {
		if !conflicts[name] {
			delete(s.final, name) // written, or missing: nothing left to do
			continue
		}
		fresh, err := s.cfg.Store.GetJob(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			delete(s.final, name)
		case err != nil:
			s.log.Warn("read back a job whose terminal status was refused", "job", name, "err", err)
		case fresh.Unreadable != "" || fresh.Status.State.Status.Done():
			// Ended already; an unreadable record is set aside by the
			// next resync.
			delete(s.final, name)
		default:
			w := s.final[name]
			w.Revision = fresh.StatusRevision
			s.final[name] = w
		}
	}
}

// onDone is the cluster's report that a job finished by itself.
//
// Jobs the cluster reports done at once (the kube pool reports each from
// a goroutine of its own, the simulated cluster those done at the same
// time together) are finished in one turn of the loop, in the order of
// their names, with one write of their statuses and one of each
// application's history: one turn and one write per job made the
// completions wait behind a cycle each, a few a second with thousands of
// jobs waiting, while the jobs kept their GPUs.
func (s *Service) onDone(ctx context.Context, name string, status model.Status) {
	s.endedMu.Lock()
	if _, ok := s.ended[name]; !ok {
		s.ended[name] = status
	}
	s.endedMu.Unlock()
	err := s.loop.Do(ctx, func(*scheduler.Core) { s.finishEnded(ctx) })
	switch {
	case errors.Is(err, scheduler.ErrStopped) || ctx.Err() != nil:
		// Shutting down: the job's record is still live, and the next
		// start reconciles it with the cluster.
		s.log.Debug("job finished while the scheduler stopped", "job", name, "status", string(status))
	case err != nil:
		s.log.Error("record finished job", "job", name, "err", err)
	}
}

// finishEnded finishes the jobs onDone queued (none if an earlier turn
// took them). Loop goroutine only.
func (s *Service) finishEnded(ctx context.Context) {
	s.endedMu.Lock()
	ended := s.ended
	if len(ended) == 0 {
		s.endedMu.Unlock()
		return
	}
	s.ended = map[string]model.Status{}
	s.endedMu.Unlock()
	now := s.cfg.Clock.Now()
	apps := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(ended)) {
		if app, ok := s.end(ctx, now, name, ended[name]); ok {
			apps[app] = true
		}
	}
	for _, app := range slices.Sorted(maps.Keys(apps)) {
		s.saveHistory(ctx, app)
	}
	s.writeFinal(ctx, now)
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
			s.drop(ctx, now, name)
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
					s.observeProgress(t, j)
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
// to admit, delete, re-prioritise, drop or set aside.
func (s *Service) needsLook(j store.Job) bool {
	if _, pending := s.final[j.Name]; pending {
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

// afterCycle records a cycle: metrics, fresh estimates for the next cycle,
// and every changed job status. Loop goroutine only.
func (s *Service) afterCycle(ctx context.Context, rep scheduler.CycleReport, err error) {
	gt := s.cfg.GPUType
	m := s.cfg.Metrics
	s.cycles++
	s.lastCycle = rep.Time
	m.Reschedules.WithLabelValues(gt).Inc()
	m.LastReschedule.WithLabelValues(gt).Set(unixSeconds(s.cfg.WallClock.Now()))
	m.RescheduleDuration.WithLabelValues(gt).Observe(rep.Duration.Seconds())
	m.AllocatorDuration.WithLabelValues(gt, rep.Algorithm).Observe(rep.AllocateDuration.Seconds())
	m.PlacementDuration.WithLabelValues(gt).Observe(rep.PlaceDuration.Seconds())
	m.WorkersMigrated.WithLabelValues(gt).Add(float64(rep.Migrated))
	m.LaunchersRestarted.WithLabelValues(gt).Add(float64(len(rep.Actions) - rep.FailedActions))
	if err != nil {
		s.log.Error("scheduling cycle failed", "err", err)
	} else if len(rep.Actions) > 0 {
		s.log.Info("cycle", "jobs", rep.Jobs, "allocated", rep.Allocated, "gpus", rep.GPUs,
			"actions", len(rep.Actions), "migrated", rep.Migrated, "failed", rep.FailedActions,
			"limited", rep.Limited, "deferred", len(rep.Deferred))
	}
	s.estimate()
	s.persist(ctx, rep.Time, rep.Order)
}

// capacity returns the GPUs of all the GPU type's nodes, cordoned ones
// included: no job can ever hold more.
func (s *Service) capacity() int {
	total := 0
	for _, n := range s.core.Nodes() {
		total += n.GPUs
	}
	return total
}

// persist writes every job status that changed since it was last saved,
// with queue positions, expected starts and why a job cannot start, the
// pending terminal statuses, and the scheduler's status. order is the last
// allocation's order (nil: submit order).
func (s *Service) persist(ctx context.Context, now time.Time, order []string) {
	snap := s.core.Snapshot(now)
	fc := scheduler.Forecasts(snap, order)
	capacity := s.capacity()
	wallNow := s.cfg.WallClock.Now()
	writes := make(map[string]store.StatusWrite, len(s.final))
	maps.Copy(writes, s.final)
	st := store.SchedulerStatus{Now: now, LastCycle: s.lastCycle, Cycles: s.cycles, Nodes: len(snap.Nodes), GPUs: snap.TotalGPUs(),
		NodeStates: s.nodeStates()}
	cross := 0
	m, gt := s.cfg.Metrics, s.cfg.GPUType
	for _, j := range snap.Jobs {
		name := j.Spec.Name
		if j.State.GPUs > 0 || j.State.WaitingSince.IsZero() {
			m.JobWaitingSeconds.DeleteLabelValues(gt, name)
		} else {
			m.JobWaitingSeconds.WithLabelValues(gt, name).Set(max(now.Sub(j.State.WaitingSince).Seconds(), 0))
		}
		t := s.jobs[name]
		js := store.JobStatus{State: j.State, Est: j.Est, Progress: s.progressOf(name, j.Spec.Epochs),
			Allocations: store.AppendAllocation(t.allocations, now, j.State.Placement)}
		if f, ok := fc[name]; ok {
			js.QueuePosition, js.EstimatedStart = f.Position, f.Start
			// A start the rate limit holds happens at the next full cycle.
			if next := s.core.NextFull(); s.core.StartDeferred(name) && next.After(now) {
				js.EstimatedStart = next
			}
		}
		if j.State.GPUs > 0 {
			st.Running++
			st.GPUsInUse += j.State.GPUs
			if len(j.State.Placement) > 1 {
				cross++
			}
		} else {
			st.Waiting++
			if j.Spec.MinWorkers > capacity {
				js.Reason = store.ReasonUnschedulable
				js.Message = fmt.Sprintf("needs at least %d GPUs (its minimum workers); the %s nodes have %d in all: it starts only if nodes are added",
					j.Spec.MinWorkers, s.cfg.GPUType, capacity)
				js.EstimatedStart = time.Time{}
			}
		}
		if !s.due(t, js, wallNow) {
			continue
		}
		js.Updated = now
		writes[name] = store.StatusWrite{Status: js, Revision: t.revision}
	}
	if len(writes) > 0 {
		res, err := s.cfg.Store.SaveStatus(ctx, writes)
		s.storeWrote(err)
		if err != nil {
			s.log.Error("save job statuses; retrying at the next cycle or resync", "jobs", len(writes), "err", err)
		} else {
			s.settle(ctx, now, writes, res)
		}
	}
	s.putStatus(ctx, st)
	m.JobsReady.WithLabelValues(gt).Set(float64(len(snap.Jobs)))
	m.JobsWaiting.WithLabelValues(gt).Set(float64(st.Waiting))
	m.JobsRunning.WithLabelValues(gt).Set(float64(st.Running))
	m.JobsCrossNode.WithLabelValues(gt).Set(float64(cross))
	m.GPUs.WithLabelValues(gt).Set(float64(st.GPUs))
	m.GPUsInUse.WithLabelValues(gt).Set(float64(st.GPUsInUse))
}

// putStatus writes the scheduler's status and remembers it.
func (s *Service) putStatus(ctx context.Context, st store.SchedulerStatus) {
	err := s.cfg.Store.PutStatus(ctx, s.cfg.GPUType, st)
	s.storeWrote(err)
	if err != nil {
		s.log.Error("save scheduler status", "err", err)
		return
	}
	s.status = st
}

// nodeStates are the GPU type's nodes as the status shows them, sorted by
// name: the core's (ready) nodes and, when the backend knows them, those
// that are not ready.
func (s *Service) nodeStates() []store.NodeState {
	var out []store.NodeState
	seen := map[string]bool{}
	for _, n := range s.core.Nodes() {
		out = append(out, store.NodeState{Name: n.Name, GPUs: n.GPUs, Cordoned: n.Cordoned})
		seen[n.Name] = true
	}
	if u, ok := s.cfg.Backend.(UnreadyNodes); ok {
		for _, n := range u.NotReadyNodes() {
			if !seen[n.Name] {
				out = append(out, store.NodeState{Name: n.Name, GPUs: n.GPUs, Cordoned: n.Cordoned, NotReady: true})
			}
		}
	}
	slices.SortFunc(out, func(a, b store.NodeState) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// saveNodes writes the scheduler status again with the nodes as they are
// now, so that a node change shows before the next cycle; not before
// the first status was written. Loop goroutine only.
func (s *Service) saveNodes(ctx context.Context) {
	if s.status.Now.IsZero() {
		return
	}
	nodes := s.nodeStates()
	if slices.Equal(nodes, s.status.NodeStates) {
		return
	}
	st := s.status
	st.NodeStates = nodes
	s.putStatus(ctx, st)
}

// due reports whether a job's status must be written now. A change of
// its state (status, GPUs, placement, queue, attained service, counters)
// or of its reason is written at once: recovery depends on it. A change
// of only what is shown (queue position, estimated start, estimate,
// progress) waits until SoftPersist of wall time has passed since the
// job's last write: with thousands of waiting jobs, every cycle shifts
// every position and estimate, and writing them all each cycle made the
// store the bottleneck of a burst.
func (s *Service) due(t *tracked, js store.JobStatus, wallNow time.Time) bool {
	switch {
	case !t.written:
		return true
	case reflect.DeepEqual(t.saved, js):
		return false
	case !reflect.DeepEqual(t.saved.State, js.State) || t.saved.Reason != js.Reason || t.saved.Message != js.Message:
		return true
	}
	return !wallNow.Before(t.nextSoft)
}

// settle records which status writes the store took. A live job whose
// record vanished is dropped; one whose write conflicted is read again and
// reconciled: dropped if it ended elsewhere, else written again over the
// newer revision at the next persist.
func (s *Service) settle(ctx context.Context, now time.Time, writes map[string]store.StatusWrite, res store.SaveResult) {
	final := store.SaveResult{}
	refused := map[string]bool{}
	for _, name := range res.Missing {
		refused[name] = true
		if _, ok := s.final[name]; ok {
			final.Missing = append(final.Missing, name)
			continue
		}
		s.log.Warn("job vanished from the store; dropping it", "job", name)
		s.drop(ctx, now, name)
	}
	for _, name := range res.Conflicts {
		refused[name] = true
		if _, ok := s.final[name]; ok {
			final.Conflicts = append(final.Conflicts, name)
			continue
		}
		if err := s.look(ctx, now, name); err != nil {
			s.log.Warn("read back a job whose status was refused", "job", name, "err", err)
		}
	}
	for name, w := range writes {
		if refused[name] {
			continue
		}
		if _, ok := s.final[name]; ok {
			continue
		}
		if t, ok := s.jobs[name]; ok {
			w.Status.Updated = time.Time{}
			t.saved, t.written, t.revision = w.Status, true, w.Revision+1
			t.allocations = w.Status.Allocations
			t.nextSoft = s.cfg.WallClock.Now().Add(s.cfg.SoftPersist)
		}
	}
	if len(s.final) > 0 {
		s.settleFinal(ctx, final)
	}
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
		nodes := s.cfg.Backend.Nodes()
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
			s.gpusPerNode()
			s.saveNodes(ctx)
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
		if err := s.cfg.Backend.Apply(ctx, a); err != nil {
			s.log.Warn("apply the loss of a node", "job", name, "node", node, "err", err)
		}
	}
}
