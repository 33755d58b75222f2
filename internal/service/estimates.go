package service

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"

	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/model"
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
// by one-off names. The collector then forgets an application not kept
// once no live job names it, as a restarted scheduler would not know it
// either: it holds the applications of live jobs and kept histories, not
// every name ever used. The count is of the histories listed at start and
// saved since, which another process (a former leader) may have added to.
func (s *Service) saveHistory(ctx context.Context, app string) {
	m := s.collector.App(app)
	if len(m.Placements) == 0 && m.Restarts == 0 {
		if !s.histories[app] {
			s.collector.DropApp(app)
		}
		return
	}
	if !s.histories[app] && len(s.histories) >= s.cfg.MaxHistories {
		if !s.historiesFull {
			s.historiesFull = true
			s.log.Warn("the store keeps the measured histories of as many applications as it may; new applications' are not kept",
				"max", s.cfg.MaxHistories, "app", app)
		}
		s.collector.DropApp(app)
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

// goodputEstimates are the estimates of a job whose batch size Voda
// chooses (docs/progress.md, "The batch size"): for a job that declared
// an adaptive batch, has a fitted throughput model and follows the
// advice, the speedup on k GPUs is that of the best batch on k (packed
// gpusPerNode to a node) over the best batch on one, with the batch for
// each k, up to maxWorkers. Its remaining time on one GPU is the work
// left, counted in steps of its initial batch (epochs left times the
// samples of an epoch, as its reports' samples and epochs say, over the
// initial batch), over the goodput of the best batch on one GPU; without
// samples the collector's (fixed) remaining time stays. ok is false for
// any other job: the collector's estimates (fixed, its fixed batch)
// stand.
func goodputEstimates(st *progress.State, fixed model.Estimates, remainingEpochs float64, gpusPerNode, maxWorkers int) (model.Estimates, bool) {
	if st == nil || st.Goodput == nil {
		return fixed, false
	}
	g, b := st.Goodput, st.Latest.Batch
	if !b.Adaptive() || g.Params == nil || !g.Follows {
		return fixed, false
	}
	speedup, batch, rate1 := goodput.Curve(*g.Params, g.Stats(), b.Bounds(), gpusPerNode, maxWorkers)
	if speedup == nil {
		return fixed, false
	}
	e := fixed
	e.Speedup, e.Batch = speedup, batch
	if l := st.Latest; l.Samples > 0 && l.Epoch > 0 && remainingEpochs >= 0 {
		steps := remainingEpochs * float64(l.Samples) / l.Epoch / float64(b.Init)
		e.RemainingSeconds = steps / rate1
	}
	return e, true
}

// estimate gives every job that reported its progress a new estimate:
// the epochs it has left over the rate the collector fitted to what it
// (and its application) measured, or for a job that follows the batch
// sizes Voda advises, its goodput curve (goodputEstimates). A speedup curve never extends past the
// cluster's GPUs, whatever a job's maximum says.
func (s *Service) estimate() {
	gpus, perNode := max(s.capacity(), 1), s.mostGPUs()
	for _, j := range s.core.Snapshot(s.cfg.Clock.Now()).Jobs {
		name := j.Spec.Name
		t := s.jobs[name]
		if t == nil || t.progress == nil {
			continue
		}
		rem, ok := t.progress.RemainingEpochs(j.Spec.Epochs)
		if !ok {
			continue
		}
		e := s.collector.Estimate(name, t.app, rem, min(j.Spec.MaxWorkers, gpus))
		e, _ = goodputEstimates(t.progress, e, rem, perNode, min(j.Spec.MaxWorkers, gpus))
		if err := s.core.SetEstimates(name, e); err != nil {
			s.log.Warn("set estimates", "job", name, "err", err)
		}
		s.jobGauges(name, t, j.Spec.Epochs, j.State, e)
	}
}

// jobGauges sets a reporting job's Prometheus gauges: its progress, and
// while it runs, its time left on its workers (after what is left of a
// restart under way) and its measured speed there.
func (s *Service) jobGauges(name string, t *tracked, epochs int, st model.JobState, e model.Estimates) {
	gpus := st.GPUs
	m, gt := s.cfg.Metrics, s.cfg.GPUType
	if p, ok := t.progress.Progress(epochs); ok {
		m.JobProgress.WithLabelValues(gt, name).Set(p)
	}
	if gpus <= 0 || gpus >= len(e.Speedup) || e.RemainingSeconds < 0 || e.Speedup[gpus] <= 0 {
		m.JobRemainingSeconds.DeleteLabelValues(gt, name)
		m.JobThroughput.DeleteLabelValues(gt, name)
		return
	}
	restart := e.PendingRestart(st.LastChange, s.cfg.Clock.Now()).Seconds()
	m.JobRemainingSeconds.WithLabelValues(gt, name).Set(e.RemainingSeconds/e.Speedup[gpus] + restart)
	for _, p := range s.collector.Detail(name, t.app).Placements {
		if p.Workers == gpus {
			m.JobThroughput.WithLabelValues(gt, name).Set(p.Rate * 3600)
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
