package service

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/vodascheduler/voda/internal/estimate"
	"github.com/vodascheduler/voda/internal/jobname"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/store"
)

// What the scheduler learns from the jobs' progress reports
// (docs/progress.md). The API (or the simulated cluster) keeps each job's
// reports in its stored record; the scheduler reads them when it reads
// the record (at start, at every resync, on a notification), hands the
// estimator (package estimate, the one the simulator uses) what the job
// measured, and estimates from the reported epochs. Measurements outlive the process: a job's are in its
// record, and an application's (what its finished jobs measured) in the
// store's histories, which a new leader loads at start.

// learner holds what the scheduler learns from the jobs' reports: the
// estimator, and which applications' histories the store keeps.
type learner struct {
	est          *estimate.Online
	store        store.Store
	gpuType      string
	maxHistories int
	log          *slog.Logger
	// histories are the applications whose history the store keeps for
	// this GPU type: those listed at start and those saved since.
	// historiesFull is set once a new one was not kept (logged once).
	histories     map[string]bool
	historiesFull bool
	// readAt is when readProgress last read the running jobs' reports.
	readAt time.Time
}

// load gives the estimator the applications' stored histories. One that
// cannot be read is skipped: its next write replaces it.
func (s *learner) load(ctx context.Context) {
	hist, err := s.store.ListHistories(ctx, s.gpuType)
	if err != nil {
		s.log.Warn("load the applications' measured histories; starting without them", "err", err)
		return
	}
	apps := slices.Sorted(maps.Keys(hist))
	for _, app := range apps {
		s.histories[app] = true // kept, readable or not: its next write replaces it
		var m estimate.History
		if err := json.Unmarshal(hist[app], &m); err != nil {
			s.log.Warn("stored history of an application cannot be read; ignoring it", "app", app, "err", err)
			continue
		}
		if err := m.Validate(); err != nil {
			s.log.Warn("stored history of an application is invalid; ignoring it", "app", app, "err", err)
			continue
		}
		s.est.SetApp(app, m)
	}
	if len(apps) > 0 {
		s.log.Info("loaded the applications' measured histories", "apps", len(apps))
	}
}

// observe takes a held job's stored reports, when they changed since
// last read.
func (s *learner) observe(t *tracked, j store.Job) {
	if len(j.Progress) == 0 || j.ProgressRevision == t.progressRevision {
		return
	}
	st, err := progress.Decode(j.Progress)
	if err != nil {
		s.log.Warn("stored progress of a job cannot be read; ignoring it until the next report", "job", j.Name, "err", err)
		return
	}
	t.progress, t.progressRevision = st, j.ProgressRevision
	_, m, _ := estimate.FromReports(st, model.JobSpec{}, t.app, 0)
	s.est.SetJob(j.Name, t.app, m)
}

// save stores what an application's jobs measured, after one of
// them left the estimator (which then folded it into the application).
//
// At most MaxHistories applications have a stored history per GPU type:
// once that many are kept, those keep being updated and a new one is not
// stored, so what is learnt of recurring applications is never pushed out
// by one-off names. The estimator then forgets an application not kept
// once no live job names it, as a restarted scheduler would not know it
// either: it holds the applications of live jobs and kept histories, not
// every name ever used. The count is of the histories listed at start and
// saved since, which another process (a former leader) may have added to.
func (s *learner) save(ctx context.Context, app string) {
	m := s.est.App(app)
	if m.Empty() {
		if !s.histories[app] {
			s.est.DropApp(app)
		}
		return
	}
	if !s.histories[app] && len(s.histories) >= s.maxHistories {
		if !s.historiesFull {
			s.historiesFull = true
			s.log.Warn("the store keeps the measured histories of as many applications as it may; new applications' are not kept",
				"max", s.maxHistories, "app", app)
		}
		s.est.DropApp(app)
		return
	}
	data, err := json.Marshal(m)
	if err != nil {
		s.log.Warn("encode an application's history", "app", app, "err", err)
		return
	}
	if err := s.store.SaveHistory(ctx, s.gpuType, app, data); err != nil {
		s.log.Warn("save an application's measured history; the next finished job of it retries", "app", app, "err", err)
		return
	}
	s.histories[app] = true
}

// gpusPerNode tells the estimator how many GPUs a node of this type has
// (the most any node has): the placer packs k workers on ceil(k/n) nodes,
// so that is the placement the speedup curve is for.
func (s *Service) gpusPerNode() { s.learn.est.SetGPUsPerNode(s.mostGPUs()) }

// mostGPUs is the most GPUs a node of this type has.
func (s *Service) mostGPUs() int {
	most := 0
	for _, n := range s.core.Nodes() {
		most = max(most, n.GPUs)
	}
	return most
}

// application names what a job trains, so that jobs of one application
// share what they measured: the vodascheduler/application annotation,
// else the simulated cluster's performance model, else the name the user
// gave the job (its unique name without the
// submission time the API appended: "bert-finetune-20261123-101500-2"
// is "bert-finetune"), as the original Voda keyed its job-info database
// by job category.
func application(j store.Job) string {
	if j.Application != "" {
		return j.Application
	}
	if j.Model != "" {
		return j.Model
	}
	return jobname.Base(j.Name)
}

// progressEvery is the least time, on the scheduler's clock, between two
// reads of the running jobs' reports before a cycle's estimates
// (readProgress).
const progressEvery = 10 * time.Second

// readProgress reads the stored reports of the jobs that run now (the
// jobs that report), at most every progressEvery of the scheduler's
// clock. Otherwise a job's reports reach the estimator only with a
// notification or the resync, every --resync of wall time, which a
// simulated cluster at --speed N stretches N times on its clock: its jobs
// grew once every half hour of simulated time at --speed 200 where the
// simulator grows them at every cycle. It costs one store read per
// running job, and the GPUs bound the running jobs.
func (s *Service) readProgress(ctx context.Context, now time.Time) {
	if !s.learn.readAt.IsZero() && now.Sub(s.learn.readAt) < progressEvery {
		return
	}
	s.learn.readAt = now
	for _, j := range s.core.Snapshot(now).Jobs {
		t := s.jobs[j.Spec.Name]
		if j.State.GPUs == 0 || t == nil {
			continue
		}
		rec, err := s.cfg.Store.GetJob(ctx, j.Spec.Name)
		if err != nil {
			continue // gone, or the store is down: the resync tells
		}
		s.learn.observe(t, rec)
	}
}

// estimate gives every job new estimates from the estimator
// (docs/progress.md, "One estimator"), after each cycle; a job is also
// estimated when it is admitted, before its first cycle. A speedup curve
// never extends past the cluster's GPUs, whatever a job's maximum says.
func (s *Service) estimate() {
	gpus := max(s.capacity(), 1)
	for _, j := range s.core.Snapshot(s.cfg.Clock.Now()).Jobs {
		if t := s.jobs[j.Spec.Name]; t != nil {
			s.estimateJob(j, t, gpus)
		}
	}
}

// estimateJob gives one job its estimates. A job that has not reported
// yet is estimated from what its application's jobs declared and
// measured, as the simulator estimates a waiting job; with nothing known,
// its curve reaches one worker until it is measured.
func (s *Service) estimateJob(j model.Job, t *tracked, gpus int) {
	var ej estimate.Job
	if t.progress == nil {
		ej = s.learn.est.Unreported(j.Spec, t.app, gpus)
	} else {
		var ok bool
		if ej, _, ok = estimate.FromReports(t.progress, j.Spec, t.app, gpus); !ok {
			return
		}
	}
	ej.Workers = j.State.GPUs
	e := s.learn.est.Estimate(ej)
	t.fit = nil
	if ej.Bounds.Adaptive() {
		if p, ok := s.learn.est.Fit(ej.Name, ej.App); ok {
			t.fit = &p
		}
	}
	if err := s.core.SetEstimates(ej.Name, e); err != nil {
		s.log.Warn("set estimates", "job", ej.Name, "err", err)
	}
	if t.progress != nil {
		s.jobGauges(t, j.Spec.Epochs, j.State, e)
	}
}

// jobGauges sets a reporting job's Prometheus gauges: its progress, and
// while it runs, its time left on its workers (after what is left of a
// restart under way) and its measured speed there.
func (s *Service) jobGauges(t *tracked, epochs int, st model.JobState, e model.Estimates) {
	m := s.cfg.Metrics
	if !m.JobSeries() {
		return
	}
	gpus := st.GPUs
	if p, ok := t.progress.Progress(epochs); ok {
		m.SetJob(m.JobProgress, t.series, p)
	}
	now := s.cfg.Clock.Now()
	finish, _, ok := estimate.Finish(e, gpus, st.LastChange, now)
	if !ok {
		m.DeleteJob(t.series, m.JobRemainingSeconds, m.JobThroughput)
		return
	}
	m.SetJob(m.JobRemainingSeconds, t.series, finish.Sub(now).Seconds())
	for _, p := range s.learn.est.Detail(t.series.Name, t.app).Placements {
		if p.Workers == gpus {
			m.SetJob(m.JobThroughput, t.series, p.Rate*3600)
		}
	}
}

// progressOf is the fraction of a job's work done: as its reports say,
// or as the cluster says, whichever is further (a simulated cluster knows
// more recent progress than the last report; Kubernetes knows none), so
// that the progress shown never goes back.
func (s *Service) progressOf(name string, epochs int) float64 {
	p := s.cfg.Backend.Progress(name)
	if t := s.jobs[name]; t != nil && t.progress != nil {
		if r, ok := t.progress.Progress(epochs); ok {
			p = max(p, r)
		}
	}
	return p
}
