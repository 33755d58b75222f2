package sim

import (
	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/model"
)

// placed is called when a job gets a new non-empty placement: it counts
// the workers towards the job's and its application's ramp-up and, with
// adaptive batches, lets the job choose its batch for the placement.
func (e *engine) placed(j *simJob) error {
	j.maxSeen = max(j.maxSeen, j.workers())
	e.appSeen[j.m.Name()] = max(e.appSeen[j.m.Name()], j.workers())
	return e.rechoose(j)
}

// rechoose sets an adaptive job's batch size to the one with the most
// estimated goodput on its placement, from its fitted throughput model and
// the gradient statistics it measures now. Before anything is known of
// its application, the job runs the smallest batch its placement allows.
func (e *engine) rechoose(j *simJob) error {
	if !e.opts.AdaptiveBatch || !j.bounds.Adaptive() || j.workers() == 0 {
		return nil
	}
	if p, ok := e.gp.JobParams(j.w.Name, j.m.Name()); ok {
		j.batch = goodput.Best(p, j.gradStats(), j.bounds, j.nodes, j.workers()).Batch
	} else {
		j.batch = min(max(j.bounds.InitBatch, j.bounds.MinLocal*j.workers()), j.bounds.MaxBatch)
	}
	j.rateOK = false
	return nil
}

// flush hands the configurations a job ran since the last estimate to the
// estimator.
func (e *engine) flush(j *simJob) {
	for _, o := range j.pending {
		e.gp.Observe(j.w.Name, j.m.Name(), o)
	}
	j.pending = j.pending[:0]
}

// goodputEstimates are a job's estimates from its fitted throughput model:
// the speedup of the best batch at each worker count over the best on one
// GPU, up to its ramp (see rampLimit), the batch sizes that go with them,
// and the remaining time on one GPU. A job nothing is known of gets a
// linear curve up to its ramp and an unknown remaining time.
func (e *engine) goodputEstimates(j *simJob, remaining float64) model.Estimates {
	e.flush(j)
	limit := min(e.curveLen(j), e.rampLimit(j))
	est := model.Estimates{RemainingSeconds: -1, RestartSeconds: e.port.restartCost}
	p, ok := e.gp.JobParams(j.w.Name, j.m.Name())
	stats := j.gradStats()
	c := &j.curve
	if ok && !(c.ok && c.params == p && c.stats == stats && c.cap == limit) {
		c.speedup, c.batch, c.rate1 = goodput.Curve(p, stats, j.bounds, e.opts.GPUsPerNode, limit)
		c.params, c.stats, c.cap, c.ok = p, stats, limit, true
	}
	if !ok || c.speedup == nil {
		est.Speedup = make([]float64, limit+1)
		for k := range est.Speedup {
			est.Speedup[k] = float64(k)
		}
		return est
	}
	est.Speedup = c.speedup
	est.RemainingSeconds = remaining / c.rate1
	if j.bounds.Adaptive() {
		est.Batch = c.batch
	}
	return est
}

// rampLimit is the most workers a job's curve may reach: twice the most it
// has run on, as Pollux ramps jobs up, and at least the most any job of its
// application has run on. A job's model is its application's until it has
// run, so what the application was measured on counts as seen: a new job of
// a known application starts as wide as the evidence allows instead of
// paying a restart for each doubling from one worker.
func (e *engine) rampLimit(j *simJob) int {
	return max(2*j.maxSeen, 1, e.appSeen[j.m.Name()])
}
