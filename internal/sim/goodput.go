package sim

import (
	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/estimate"
)

// placed is called when a job gets a new non-empty placement: the
// restart it pays is measured, as a job's first report after a restart
// measures it, and with adaptive batches the job chooses its batch for
// the placement.
func (e *engine) placed(j *simJob) error {
	j.measureFrom = firstMeasured(e.now, e.port.restartCost)
	if e.online != nil && e.port.restartCost > 0 {
		e.online.ObserveRestart(j.w.Name, e.job(j).App, e.port.restartCost)
	}
	return e.rechoose(j)
}

// rechoose sets an adaptive job's batch size to the one with the most
// estimated goodput on its placement, from its fitted throughput model and
// the gradient statistics it measures now at its batch, as far as its
// placement allows that batch (goodput.Bounds.Clamp), as the server
// advises a job from what it reports. Before anything is known of its
// application, the job runs that batch: at first, the smallest its
// placement allows.
func (e *engine) rechoose(j *simJob) error {
	if !e.opts.AdaptiveBatch || !j.bounds.Adaptive() || j.workers() == 0 {
		return nil
	}
	j.batch = j.bounds.Clamp(j.batch, j.workers())
	if c, ok := e.online.Choose(j.w.Name, j.m.Name(), j.gradStats(), j.bounds, j.nodes, j.workers()); ok {
		j.batch = c.Batch
	}
	j.rateOK = false
	return nil
}

// flush hands the estimator what a job measured since the last estimate,
// as its progress reports would: its throughput on its placement and the
// step time of each configuration it ran. A job that finished (done)
// hands over its step times only: the throughput of its last stretch
// never entered its application's history, and the replays recorded in
// testdata/golden-runs.json keep it so.
func (e *engine) flush(j *simJob, done bool) {
	if e.online == nil {
		j.obsSeconds, j.obsWork, j.pending = 0, 0, j.pending[:0]
		return
	}
	app := e.job(j).App
	if j.obsSeconds > 0 && j.prof == nil && !done {
		e.online.Observe(collector.Observation{Job: j.w.Name, App: app, Workers: j.workers(), Pods: j.workers() / j.w.PerWorker(), Seconds: j.obsSeconds, Work: j.obsWork})
	}
	for _, o := range j.pending {
		e.online.ObserveStep(j.w.Name, app, o)
	}
	if j.prof != nil && j.bounds.Adaptive() && j.start >= 0 {
		// What its reports declare: its bounds and samples per epoch.
		d := estimate.Declared{InitBatch: j.bounds.InitBatch, MaxBatch: j.bounds.MaxBatch, MinLocal: j.bounds.MinLocal, MaxLocal: j.bounds.MaxLocal}
		if done := j.EpochsDone(); done > 0 {
			d.SamplesPerEpoch = j.progress * float64(j.bounds.InitBatch) / done
		}
		e.online.Declare(app, d)
	}
	j.obsSeconds, j.obsWork, j.pending = 0, 0, j.pending[:0]
}
