package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/store"
)

// statuses writes what the store keeps of this scheduler: the terminal
// statuses of the jobs it finished, records set aside, and its own
// status; and keeps what those writes need between cycles. The live
// jobs' statuses are written by Service.persist, through save. Loop
// goroutine only (before Run's loop starts, its goroutine).
type statuses struct {
	gpuType string
	store   store.Store
	health  *health
	metrics *metrics.Metrics
	log     *slog.Logger
	wall    clock.Clock
	// softPersist is Config.SoftPersist (see due).
	softPersist time.Duration

	// final are terminal statuses of jobs this service finished that
	// are not in the store yet; they are retried at every persist, and a
	// job listed here is never admitted again.
	final map[string]store.StatusWrite
	// cycles and lastCycle count the core's cycles, for the scheduler
	// status.
	cycles    int64
	lastCycle time.Time
	// last is the scheduler status last written (zero before the first).
	last store.SchedulerStatus
}

// pending reports whether a job's terminal status waits to be written.
func (w *statuses) pending(name string) bool {
	_, ok := w.final[name]
	return ok
}

// ended counts a job that ended here with status and queues its terminal
// status, with progress, the fraction of its work the cluster saw done,
// and finish, when it ended (now, or earlier when the cluster knows).
func (w *statuses) ended(now, finish time.Time, name string, t *tracked, job model.Job, status model.Status, progress float64) {
	if status == model.StatusCompleted {
		progress = 1
	}
	switch status {
	case model.StatusCompleted:
		w.metrics.JobsCompleted.WithLabelValues(w.gpuType).Inc()
	case model.StatusFailed:
		w.metrics.JobsFailed.WithLabelValues(w.gpuType).Inc()
	}
	st := job.State
	st.GPUs, st.Placement = 0, nil
	w.final[name] = store.StatusWrite{
		Status: store.JobStatus{State: st, Est: job.Est, Progress: progress, FinishTime: finish, Updated: now,
			Allocations: store.AppendAllocation(t.allocations, now, nil)},
		Revision: t.revision,
	}
	w.log.Info("job finished", "job", name, "status", string(status))
}

// terminal records a terminal status for a job the core does not hold.
func (w *statuses) terminal(ctx context.Context, now time.Time, j store.Job, status model.Status) {
	st := j.Status
	st.State.Status = status
	st.State.GPUs, st.State.Placement = 0, nil
	st.QueuePosition, st.EstimatedStart = 0, time.Time{}
	st.Reason, st.Message = "", ""
	st.FinishTime, st.Updated = now, now
	st.Allocations = store.AppendAllocation(st.Allocations, now, nil)
	w.final[j.Name] = store.StatusWrite{Status: st, Revision: j.StatusRevision}
	w.writeFinal(ctx)
}

// writeFinal writes the pending terminal statuses. Those the store did not
// take stay pending: retried at the next persist, and never admitted again
// meanwhile.
func (w *statuses) writeFinal(ctx context.Context) {
	if len(w.final) == 0 {
		return
	}
	res, err := w.store.SaveStatus(ctx, w.final)
	w.health.storeWrote(err)
	if err != nil {
		w.log.Error("save finished jobs' statuses; retrying at the next cycle", "jobs", len(w.final), "err", err)
		return
	}
	w.settleFinal(ctx, res)
}

// settleFinal clears the terminal writes the store took or no longer
// needs, and rebases on a newer revision those another writer got to
// first while the job was still live.
func (w *statuses) settleFinal(ctx context.Context, res store.SaveResult) {
	conflicts := map[string]bool{}
	for _, name := range res.Conflicts {
		conflicts[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(w.final)) {
		if !conflicts[name] {
			delete(w.final, name) // written, or missing: nothing left to do
			continue
		}
		fresh, err := w.store.GetJob(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			delete(w.final, name)
		case err != nil:
			w.log.Warn("read back a job whose terminal status was refused", "job", name, "err", err)
		case fresh.Unreadable != "" || fresh.Status.State.Status.Done():
			// Ended already; an unreadable record is set aside by the
			// next resync.
			delete(w.final, name)
		default:
			f := w.final[name]
			f.Revision = fresh.StatusRevision
			w.final[name] = f
		}
	}
}

// setAside marks a record that cannot be restored as Failed with why, so
// that one bad record never stops the others. A failed write is retried
// at the next resync, which finds the record live again.
func (w *statuses) setAside(ctx context.Context, now time.Time, name, why string) {
	err := w.store.SetAside(ctx, name, why, now)
	w.health.storeWrote(err)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		w.log.Error("set aside a job record that cannot be restored; retrying at the next resync", "job", name, "reason", why, "err", err)
		return
	}
	w.metrics.JobsSetAside.WithLabelValues(w.gpuType).Inc()
	w.log.Error("job record set aside as Failed: it cannot be restored", "job", name, "reason", why)
}

// save writes the live jobs' statuses of writes along with the pending
// terminal ones; ok is false if the store failed (everything is retried
// at the next persist).
func (w *statuses) save(ctx context.Context, writes map[string]store.StatusWrite) (res store.SaveResult, ok bool) {
	maps.Copy(writes, w.final)
	if len(writes) == 0 {
		return store.SaveResult{}, false
	}
	res, err := w.store.SaveStatus(ctx, writes)
	w.health.storeWrote(err)
	if err != nil {
		w.log.Error("save job statuses; retrying at the next cycle or resync", "jobs", len(writes), "err", err)
		return store.SaveResult{}, false
	}
	return res, true
}

// saved records a live job's status write the store took.
func (w *statuses) saved(t *tracked, sw store.StatusWrite) {
	sw.Status.Updated = time.Time{}
	t.saved, t.written, t.revision = sw.Status, true, sw.Revision+1
	t.allocations = sw.Status.Allocations
	t.nextSoft = w.wall.Now().Add(w.softPersist)
}

// cycled counts a cycle of the core, run at t.
func (w *statuses) cycled(t time.Time) {
	w.cycles++
	w.lastCycle = t
}

// putStatus writes the scheduler's status and remembers it.
func (w *statuses) putStatus(ctx context.Context, st store.SchedulerStatus) {
	err := w.store.PutStatus(ctx, w.gpuType, st)
	w.health.storeWrote(err)
	if err != nil {
		w.log.Error("save scheduler status", "err", err)
		return
	}
	w.last = st
}

// putNodes writes the scheduler status again with nodes as they are now,
// so that a node change shows before the next cycle; not before the first
// status was written.
func (w *statuses) putNodes(ctx context.Context, nodes []store.NodeState) {
	if w.last.Now.IsZero() || slices.Equal(nodes, w.last.NodeStates) {
		return
	}
	st := w.last
	st.NodeStates = nodes
	w.putStatus(ctx, st)
}

// due reports whether a job's status must be written now. A change of
// its state (status, GPUs, placement, queue, attained service, counters)
// or of its reason is written at once: recovery depends on it. A change
// of only what is shown (queue position, estimated start, estimate,
// progress) waits until SoftPersist of wall time has passed since the
// job's last write: with thousands of waiting jobs, every cycle shifts
// every position and estimate, and writing them all each cycle made the
// store the bottleneck of a burst. The batch size a running job is
// advised for its workers (model.Estimates.BatchAt), and the throughput
// model its reports' batch sizes are chosen with (Fit), are written at
// once too: the job's next report is answered with them, and on a simulated
// cluster at --speed 200 two seconds of wall time are 400 s of training
// at a batch size the scheduler no longer chose. Running jobs are bounded
// by the GPUs, so this costs no burst of writes.
func due(t *tracked, js store.JobStatus, wallNow time.Time) bool {
	switch {
	case !t.written:
		return true
	case reflect.DeepEqual(t.saved, js):
		return false
	case !reflect.DeepEqual(t.saved.State, js.State) || t.saved.Reason != js.Reason || t.saved.Message != js.Message:
		return true
	case js.State.GPUs > 0 && (t.saved.Est.BatchAt(js.State.GPUs) != js.Est.BatchAt(js.State.GPUs) || !sameFit(t.saved.Fit, js.Fit)):
		return true
	}
	return !wallNow.Before(t.nextSoft)
}

func sameFit(a, b *goodput.Params) bool {
	return a == b || a != nil && b != nil && *a == *b
}

// persist writes every job status that changed since it was last saved,
// with queue positions, expected starts and why a job cannot start, the
// pending terminal statuses, and the scheduler's status. order is the last
// allocation's order (nil: submit order).
func (s *Service) persist(ctx context.Context, now time.Time, order []string) {
	snap := s.core.Snapshot(now)
	fc := scheduler.Forecasts(snap, order)
	nodes := s.core.Nodes()
	capacity := s.capacity()
	wallNow := s.cfg.WallClock.Now()
	writes := make(map[string]store.StatusWrite, len(s.statuses.final))
	st := store.SchedulerStatus{Now: now, LastCycle: s.statuses.lastCycle, Cycles: s.statuses.cycles, Nodes: len(snap.Nodes), GPUs: snap.TotalGPUs(),
		NodeStates: s.nodes.states(s.core)}
	cross := 0
	teams := map[string]*store.TeamState{}
	m, gt := s.cfg.Metrics, s.cfg.GPUType
	for _, j := range snap.Jobs {
		name := j.Spec.Name
		t := s.jobs[name]
		if j.State.GPUs > 0 || j.State.WaitingSince.IsZero() {
			m.DeleteJob(t.series, m.JobWaitingSeconds)
		} else {
			m.SetJob(m.JobWaitingSeconds, t.series, max(now.Sub(j.State.WaitingSince).Seconds(), 0))
		}
		js := store.JobStatus{State: j.State, Est: j.Est, Fit: t.fit, Progress: s.progressOf(name, j.Spec.Epochs),
			Allocations: store.AppendAllocation(t.allocations, now, j.State.Placement)}
		if f, ok := fc[name]; ok {
			js.QueuePosition, js.EstimatedStart = f.Position, f.Start
			// A start the rate limit holds happens at the next full cycle.
			if next := s.core.NextFull(); s.core.StartDeferred(name) && next.After(now) {
				js.EstimatedStart = next
			}
		}
		ts := teams[j.Spec.Team]
		if ts == nil {
			ts = &store.TeamState{Team: j.Spec.Team}
			teams[j.Spec.Team] = ts
		}
		ts.GPUs += j.State.GPUs
		if j.State.GPUs > 0 {
			ts.Running++
		} else {
			ts.Waiting++
		}
		if j.State.GPUs > 0 {
			st.Running++
			st.GPUsInUse += j.State.GPUs
			if len(j.State.Placement) > 1 {
				cross++
			}
		} else {
			st.Waiting++
			msg := unschedulable(&j.Spec, s.cfg.GPUType, capacity, nodes)
			if msg == "" {
				msg = overLimit(&j.Spec, s.settings.current.Quotas)
			}
			if msg != "" {
				js.Reason = store.ReasonUnschedulable
				js.Message = msg
				js.EstimatedStart = time.Time{}
			}
		}
		if !due(t, js, wallNow) {
			continue
		}
		js.Updated = now
		writes[name] = store.StatusWrite{Status: js, Revision: t.revision}
	}
	st.Teams = teamStates(teams, s.core.Allocator())
	mt := make([]metrics.Team, len(st.Teams))
	for i, ts := range st.Teams {
		mt[i] = metrics.Team{Name: ts.Team, GPUs: ts.GPUs, Entitled: ts.Entitled, Waiting: ts.Waiting}
	}
	m.SetTeams(gt, mt)
	if res, ok := s.statuses.save(ctx, writes); ok {
		s.settle(ctx, now, writes, res)
	}
	s.statuses.putStatus(ctx, st)
	m.JobsReady.WithLabelValues(gt).Set(float64(len(snap.Jobs)))
	m.JobsWaiting.WithLabelValues(gt).Set(float64(st.Waiting))
	m.JobsRunning.WithLabelValues(gt).Set(float64(st.Running))
	m.JobsCrossNode.WithLabelValues(gt).Set(float64(cross))
	m.GPUs.WithLabelValues(gt).Set(float64(st.GPUs))
	m.GPUsInUse.WithLabelValues(gt).Set(float64(st.GPUsInUse))
}

// settle records which status writes the store took. A live job whose
// record vanished is removed; one whose write conflicted is read again
// and reconciled: removed if it ended elsewhere, else written again over
// the newer revision at the next persist.
func (s *Service) settle(ctx context.Context, now time.Time, writes map[string]store.StatusWrite, res store.SaveResult) {
	final := store.SaveResult{}
	refused := map[string]bool{}
	for _, name := range res.Missing {
		refused[name] = true
		if s.statuses.pending(name) {
			final.Missing = append(final.Missing, name)
			continue
		}
		s.log.Warn("job vanished from the store; dropping it", "job", name)
		s.remove(ctx, now, name, endedElsewhere)
	}
	for _, name := range res.Conflicts {
		refused[name] = true
		if s.statuses.pending(name) {
			final.Conflicts = append(final.Conflicts, name)
			continue
		}
		if err := s.look(ctx, now, name); err != nil {
			s.log.Warn("read back a job whose status was refused", "job", name, "err", err)
		}
	}
	for name, w := range writes {
		if refused[name] || s.statuses.pending(name) {
			continue
		}
		if t, ok := s.jobs[name]; ok {
			s.statuses.saved(t, w)
		}
	}
	if len(s.statuses.final) > 0 {
		s.statuses.settleFinal(ctx, final)
	}
}

// unschedulable says why a waiting job cannot start on the GPU type's
// nodes as they are, whatever the other jobs do: its minimum is more GPUs
// than the nodes have (capacity), or more workers of its G GPUs than the
// nodes hold, each worker on one node; "" when it could start.
func unschedulable(spec *model.JobSpec, gpuType string, capacity int, nodes []model.Node) string {
	g := spec.PerWorker()
	if g == 1 {
		if spec.MinWorkers > capacity {
			return fmt.Sprintf("needs at least %d GPUs (its minimum workers); the %s nodes have %d in all: it starts only if nodes are added",
				spec.MinWorkers, gpuType, capacity)
		}
		return ""
	}
	largest, fit := 0, 0
	for _, n := range nodes {
		largest = max(largest, n.GPUs)
		fit += n.GPUs / g
	}
	switch {
	case g > largest:
		return fmt.Sprintf("each worker needs %d GPUs on one node; the largest %s node has %d: it starts only if larger nodes are added",
			g, gpuType, largest)
	case spec.MinWorkers > fit:
		return fmt.Sprintf("needs at least %d workers of %d GPUs, each on one node; the %s nodes hold %d such workers in all: it starts only if nodes are added",
			spec.MinWorkers, g, gpuType, fit)
	}
	return ""
}

// overLimit says why a job can never start when its minimum exceeds its
// team's limit, or "".
func overLimit(spec *model.JobSpec, quotas []model.Quota) string {
	i, ok := slices.BinarySearchFunc(quotas, spec.Team, func(q model.Quota, team string) int { return strings.Compare(q.Team, team) })
	if !ok || quotas[i].Limit == 0 {
		return ""
	}
	if need := spec.MinWorkers * spec.PerWorker(); need > quotas[i].Limit {
		return fmt.Sprintf("needs at least %d GPUs (its minimum workers); team %s may hold at most %d (its quota's limit): it starts only if an admin raises the limit",
			need, spec.Team, quotas[i].Limit)
	}
	return ""
}

// teamStates returns the teams of the live jobs, sorted by name, with
// what the last decision entitled each to and its demand, when the
// allocator divides by teams.
func teamStates(teams map[string]*store.TeamState, a algorithm.Allocator) []store.TeamState {
	if len(teams) == 0 {
		return nil
	}
	if sh, ok := a.(interface{ Shares() []algorithm.TeamShare }); ok {
		for _, share := range sh.Shares() {
			if ts := teams[share.Team]; ts != nil {
				ts.Entitled, ts.Demand = share.Entitled, share.Demand
			}
		}
	}
	out := make([]store.TeamState, 0, len(teams))
	for _, name := range slices.Sorted(maps.Keys(teams)) {
		out = append(out, *teams[name])
	}
	return out
}
