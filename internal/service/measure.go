package service

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"

	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/store"
)

// What the scheduler learns from the jobs' progress reports
// (docs/progress.md). The API (or the simulated cluster) keeps each job's
// reports in its stored record; the scheduler reads them when it reads
// the record (at start, at every resync, on a notification), gives the
// collector the job's measured throughput, and estimates from the
// reported epochs. Measurements outlive the process: a job's are in its
// record, and an application's (what its finished jobs measured) in the
// store's histories, which a new leader loads at start.

// loadHistories gives the collector the applications' stored histories.
// One that cannot be read is skipped: its next write replaces it.
func (s *Service) loadHistories(ctx context.Context) {
	hist, err := s.cfg.Store.ListHistories(ctx, s.cfg.GPUType)
	if err != nil {
		s.log.Warn("load the applications' measured histories; starting without them", "err", err)
		return
	}
	apps := slices.Sorted(maps.Keys(hist))
	for _, app := range apps {
		s.histories[app] = true // kept, readable or not: its next write replaces it
		var m collector.Measurements
		if err := json.Unmarshal(hist[app], &m); err != nil {
			s.log.Warn("stored history of an application cannot be read; ignoring it", "app", app, "err", err)
			continue
		}
		if err := m.Validate(); err != nil {
			s.log.Warn("stored history of an application is invalid; ignoring it", "app", app, "err", err)
			continue
		}
		s.collector.SetApp(app, m)
	}
	if len(apps) > 0 {
		s.log.Info("loaded the applications' measured histories", "apps", len(apps))
	}
}

// observeProgress takes a held job's stored reports, when they changed
// since last read.
func (s *Service) observeProgress(t *tracked, j store.Job) {
	if len(j.Progress) == 0 || j.ProgressRevision == t.progressRevision {
		return
	}
	st, err := progress.Decode(j.Progress)
	if err != nil {
		s.log.Warn("stored progress of a job cannot be read; ignoring it until the next report", "job", j.Name, "err", err)
		return
	}
	t.progress, t.progressRevision = st, j.ProgressRevision
	s.collector.SetJob(j.Name, t.app, st.Measured)
}

// saveHistory stores what an application's jobs measured, after one of
// them left the collector (which then folded it into the application).
//
// At most MaxHistories applications have a stored history per GPU type:
// once that many are kept, those keep being updated and a new one is not
// stored, so what is learnt of recurring applications is never pushed out
// by one-off names; the collector still uses it until the scheduler
// restarts. The count is of the histories listed at start and saved
// since, which another process (a former leader) may have added to.
func (s *Service) saveHistory(ctx context.Context, app string) {
	m := s.collector.App(app)
	if len(m.Placements) == 0 && m.Restarts == 0 {
		return
	}
	if !s.histories[app] && len(s.histories) >= s.cfg.MaxHistories {
		if !s.historiesFull {
			s.historiesFull = true
			s.log.Warn("the store keeps the measured histories of as many applications as it may; new applications' are not kept",
				"max", s.cfg.MaxHistories, "app", app)
		}
		return
	}
	data, err := json.Marshal(m)
	if err != nil {
		s.log.Warn("encode an application's history", "app", app, "err", err)
		return
	}
	if err := s.cfg.Store.SaveHistory(ctx, s.cfg.GPUType, app, data); err != nil {
		s.log.Warn("save an application's measured history; the next finished job of it retries", "app", app, "err", err)
		return
	}
	s.histories[app] = true
}

// gpusPerNode tells the collector how many GPUs a node of this type has
// (the most any node has): the placer packs k workers on ceil(k/n) nodes,
// so that is the placement the speedup curve is for.
func (s *Service) gpusPerNode() { s.collector.SetGPUsPerNode(s.mostGPUs()) }

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
	if m := stampSuffix.FindStringIndex(j.Name); m != nil && m[0] > 0 {
		return j.Name[:m[0]]
	}
	return j.Name
}

// stampSuffix is the API's "-YYYYMMDD-hhmmss" with its optional "-N".
var stampSuffix = regexp.MustCompile(`-\d{8}-\d{6}(-\d+)?$`)
