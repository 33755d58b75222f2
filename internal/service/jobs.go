package service

import (
	"cmp"
	"context"
	"time"

	"github.com/vodascheduler/voda/internal/estimate"
	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/store"
)

// How jobs enter and leave the core: reconcile makes the core agree with
// a stored record, admitting, restoring, re-prioritising, removing or
// setting it aside; remove is the one way out.

// tracked is what the service keeps of a live job besides the core.
type tracked struct {
	// app is the job's application (see application): jobs of one share
	// what they measured.
	app string
	// series names the job's per-job metrics: its GPU type, namespace
	// and name.
	series metrics.Job
	// revision is the StatusRevision of the stored record, as last read or
	// written: the next status write is conditional on it.
	revision int64
	// saved is the status last written (Updated zeroed); written says
	// whether there is one, so an unchanged status is not written again.
	saved   store.JobStatus
	written bool
	// allocations is the job's allocation history as last read or
	// written; the next status write appends to it.
	allocations []store.Allocation
	// nextSoft is the wall time from which a change of only the shown
	// fields is written (see due).
	nextSoft time.Time
	// progress is the job's reports as last read from the store (nil if
	// it never reported), at progressRevision.
	progress         *progress.State
	progressRevision int64
	// fit is the throughput model the estimator last fitted for a job
	// with an adaptive batch size (nil: none), written with its status
	// (store.JobStatus.Fit).
	fit *goodput.Params
}

// exit is why a job leaves the core, which decides what is recorded.
// A job that ends here (the cluster reports it done, or its deletion was
// requested) leaves with the terminal status this service writes; one
// that ended elsewhere (its record is terminal, gone or unreadable)
// leaves with nothing written and no completion counted.
type exit struct {
	// status is the terminal status the core records.
	status model.Status
	// record: write status to the store and count it.
	record bool
	// ended is when the job's work ended, if the cluster knows it to be
	// earlier than now (endTimer): its finish time. Zero: now.
	ended time.Time
}

// endedHere is the exit of a job that ends in this service with status.
func endedHere(status model.Status) exit { return exit{status: status, record: true} }

// endedElsewhere is the exit of a job whose record ended without this
// service. The core takes every job out with a terminal status; this one
// is never written.
var endedElsewhere = exit{status: model.StatusCanceled}

// reconcile makes the core agree with a stored job: admit a live job it
// does not hold, cancel one whose deletion was requested, apply a
// priority change, remove one that ended elsewhere, set aside a record
// that cannot be restored. j must be fresh: read on the loop goroutine
// (or before the loop starts) after every write this service made, so
// that a job this service finished is never admitted again from an older
// copy.
func (s *Service) reconcile(ctx context.Context, now time.Time, j store.Job) {
	name := j.Name
	if s.statuses.pending(name) {
		return // finished here; its terminal status is on its way to the store
	}
	t, held := s.jobs[name]
	switch {
	case j.Unreadable != "":
		if held {
			s.remove(ctx, now, name, endedElsewhere)
		}
		s.statuses.setAside(ctx, now, name, "the stored record cannot be decoded: "+j.Unreadable)
	case j.Status.State.Status.Done():
		if held {
			s.log.Warn("job ended elsewhere; dropping it", "job", name, "status", string(j.Status.State.Status))
			s.remove(ctx, now, name, endedElsewhere)
		}
	case j.DeleteRequested:
		if held {
			s.remove(ctx, now, name, endedHere(model.StatusCanceled))
		} else {
			s.statuses.terminal(ctx, now, j, model.StatusCanceled)
		}
	case held:
		if cur, _ := s.core.Job(name); cur.Spec.Priority != j.Spec.Priority {
			if err := s.core.SetPriority(now, name, j.Spec.Priority); err != nil {
				s.log.Warn("set priority", "job", name, "err", err)
			}
		}
		if j.StatusRevision > t.revision {
			// Another writer changed the status: write ours over it at
			// the next persist.
			t.revision, t.written = j.StatusRevision, false
		}
		s.learn.observe(t, j)
	default:
		s.admit(ctx, now, j)
		if t, ok := s.jobs[name]; ok {
			s.learn.observe(t, j)
		}
	}
}

// admit brings a live job into the core: a new one waits in queue 0; one
// the scheduler had seen before resumes with its saved state. A record
// that cannot be admitted is set aside.
func (s *Service) admit(ctx context.Context, now time.Time, j store.Job) {
	name := j.Name
	if j.Spec.GPUType != s.cfg.GPUType {
		s.log.Warn("job of another GPU type; ignoring it", "job", name, "jobGPUType", j.Spec.GPUType)
		return
	}
	if err := j.Spec.Validate(); err != nil {
		s.statuses.setAside(ctx, now, name, "its spec is invalid: "+err.Error())
		return
	}
	if err := s.cfg.Backend.Track(name, j.Model, j.Spec.Epochs, j.Spec.PerWorker(), j.Status.Progress); err != nil {
		s.statuses.setAside(ctx, now, name, "it cannot run on this cluster: "+err.Error())
		return
	}
	ns := cmp.Or(j.Namespace, s.cfg.DefaultNamespace)
	// A job's team is its namespace: quotas are per namespace.
	j.Spec.Team = ns
	var err error
	st := j.Status.State.Status
	fresh := st == "" || st == model.StatusSubmitted
	if fresh {
		err = s.core.Submit(now, j.Spec)
	} else {
		err = s.restore(ctx, now, j)
	}
	if err != nil {
		s.cfg.Backend.Forget(name)
		s.statuses.setAside(ctx, now, name, "it cannot be restored: "+err.Error())
		return
	}
	t := &tracked{app: estimate.AppKey(ns, application(j), j.Spec.PerWorker()), revision: j.StatusRevision, allocations: j.Status.Allocations,
		series: metrics.Job{GPUType: s.cfg.GPUType, Namespace: ns, Name: name}}
	s.jobs[name] = t
	if mj, ok := s.core.Job(name); ok && fresh {
		// Estimated before its first cycle, as the simulator estimates
		// every job before each cycle: without estimates an allocator
		// takes a job's speedup as linear to its maximum. A restored job
		// keeps the estimates it had.
		s.estimateJob(mj, t, max(s.capacity(), 1))
	}
}

// restore brings back a job the scheduler had seen before a restart, with
// its queue, attained service and time counters. A job that held GPUs is
// started again on the same nodes (the cluster pays its restart cost);
// if that fails, it waits for the next cycle.
func (s *Service) restore(ctx context.Context, now time.Time, j store.Job) error {
	st := j.Status.State
	est := j.Status.Est
	if len(est.Speedup) == 0 && est.RemainingSeconds == 0 {
		est.RemainingSeconds = -1
	}
	if len(st.Placement) > 0 {
		a := scheduler.Action{Kind: scheduler.Start, Job: j.Name, To: st.Placement}
		if err := s.cfg.Backend.Apply(ctx, a); err != nil {
			s.log.Warn("cannot resume job on its last placement; it waits", "job", j.Name, "err", err)
			st.Placement, st.GPUs = nil, 0
		}
	}
	if st.GPUs == 0 && st.Status == model.StatusRunning {
		st.Status = model.StatusWaiting
		st.WaitingSince = now
	}
	return s.core.Restore(model.Job{Spec: j.Spec, State: st, Est: est})
}

// remove takes a job out of the core and the cluster, saves what its
// application measured, and, for a job that ended here, writes its
// terminal status. Loop goroutine only.
func (s *Service) remove(ctx context.Context, now time.Time, name string, why exit) {
	app, ok := s.takeOut(ctx, now, name, why)
	if !ok {
		return
	}
	s.learn.save(ctx, app)
	if why.record {
		s.statuses.writeFinal(ctx)
	}
}

// takeOut is remove without its writes, for removing several jobs with
// one write: the core finishes the job, its workers are halted, the
// service and the cluster forget it, what it measured joins its
// application's history in the collector (which the caller saves:
// learner.save), and for a job that ended here its terminal status waits
// in statuses.final. It returns the job's application, and whether the
// service held the job.
func (s *Service) takeOut(ctx context.Context, now time.Time, name string, why exit) (app string, ok bool) {
	t, held := s.jobs[name]
	if !held {
		return "", false
	}
	job, err := s.core.Finish(now, name, why.status)
	if err != nil {
		s.log.Warn("finish job", "job", name, "err", err)
		return "", false
	}
	if len(job.State.Placement) > 0 {
		halt := scheduler.Action{Kind: scheduler.Halt, Job: name, From: job.State.Placement}
		if err := s.cfg.Backend.Apply(ctx, halt); err != nil {
			s.log.Warn("halt finished job", "job", name, "err", err)
		}
	}
	s.learn.est.Forget(name)
	s.cfg.Metrics.ForgetJob(t.series)
	delete(s.jobs, name)
	if why.record {
		// The cluster knows the job's progress until it forgets it.
		finish := now
		if !why.ended.IsZero() && why.ended.Before(now) && !why.ended.Before(job.State.LastChange) {
			finish = why.ended
		}
		s.statuses.ended(now, finish, name, t, job, why.status, s.cfg.Backend.Progress(name))
	}
	s.cfg.Backend.Forget(name)
	return t.app, true
}
