package progress

import (
	"github.com/vodascheduler/voda/internal/goodput"
)

// Goodput is what Voda keeps of a job that declared an adaptive batch
// size (Batch.Adaptive): the mean seconds per optimizer step of each
// configuration it was measured on, its latest gradient statistics, and
// the batch size Voda last advised. The bounds are the latest report's
// (State.Latest.Batch). Nothing here is fitted: the scheduler's estimator
// (package estimate) fits the step times, and the model it fitted comes
// back with the allocation (Allocation.Fit), with which each report's
// reply chooses the batch for the job's workers.
type Goodput struct {
	// Configs are the configurations measured, in the order first
	// measured; at most goodput.MaxConfigs (later new ones are not kept).
	Configs []Config `json:"configs,omitempty"`
	// GradSqNorm and GradVariance are the latest reported gradient
	// statistics (both 0: never reported).
	GradSqNorm   float64 `json:"gradSqNorm,omitempty"`
	GradVariance float64 `json:"gradVariance,omitempty"`
	// Advice is the batch size the last reply advised (nil: none yet), and
	// AdvisedAt the job's epoch when that size was first advised for its
	// worker count.
	Advice    *Advice `json:"advice,omitempty"`
	AdvisedAt float64 `json:"advisedAt,omitempty"`
	// Follows says whether the job runs the batch sizes Voda advises: set
	// by a report whose global batch is the advice for its worker count,
	// cleared by one that still runs another batch more than one epoch
	// after the advice.
	Follows bool `json:"follows,omitempty"`
}

// Config is one configuration's measured step time (the goodput model's
// stored form).
type Config = goodput.Config

// Advice is the batch size Voda advises a job for its allocation
// (docs/progress.md, the reply's batch).
type Advice struct {
	// Size is the global batch: Workers·(AccumulationSteps+1)·LocalSize.
	Size              int     `json:"size"`
	LocalSize         int     `json:"localSize"`
	AccumulationSteps int     `json:"accumulationSteps"`
	LRScale           float64 `json:"lrScale"`
	// Workers is the allocation the advice is for.
	Workers int `json:"workers"`
}

// Bounds are the goodput bounds the batch declares.
func (b Batch) Bounds() goodput.Bounds {
	return goodput.Bounds{InitBatch: int(b.Init), MaxBatch: int(b.Max), MinLocal: int(b.MinLocal), MaxLocal: int(b.MaxLocal)}
}

// Stats are the gradient statistics kept (unknown if never reported).
func (g *Goodput) Stats() goodput.GradStats {
	return goodput.GradStats{Sqr: g.GradSqNorm, Var: g.GradVariance}
}

// Valid reports whether a stored Goodput can be used: its configurations
// within bounds.
func (g *Goodput) Valid() bool {
	if len(g.Configs) > goodput.MaxConfigs {
		return false
	}
	for _, c := range g.Configs {
		if !c.Valid() {
			return false
		}
	}
	return true
}

// measure derives the configuration and seconds per step an interval of
// report r measured, since last: the step time the report gives (else the
// interval over the steps done in it), the local batch (else the global
// one over the workers) and the accumulation steps (as reported, else the
// global batch over local times workers when that divides, else none).
// Nodes are the report's, else the allocation's placement's when it is
// the report's worker count, else 1. ok is false when the interval says
// nothing of the step time or the batch.
func measure(r, last Report, seconds float64, alloc Allocation) (goodput.Obs, bool) {
	o := goodput.Obs{Nodes: r.Nodes, Replicas: r.Workers, Iteration: r.StepSeconds}
	if o.Iteration <= 0 && r.Steps > last.Steps {
		o.Iteration = seconds / float64(r.Steps-last.Steps)
	}
	switch {
	case r.LocalBatchSize > 0:
		o.Atomic = int(r.LocalBatchSize)
	case r.GlobalBatchSize > 0:
		o.Atomic = int(max(r.GlobalBatchSize/int64(r.Workers), 1))
	}
	switch {
	case r.Batch.Accumulation != nil:
		o.Accum = int(*r.Batch.Accumulation)
	case r.GlobalBatchSize > 0 && r.LocalBatchSize > 0:
		if per := r.LocalBatchSize * int64(r.Workers); r.GlobalBatchSize%per == 0 {
			o.Accum = int(r.GlobalBatchSize/per - 1)
		}
	}
	if o.Nodes <= 0 {
		o.Nodes = 1
		if alloc.Nodes > 0 && alloc.Workers == r.Workers {
			o.Nodes = alloc.Nodes
		}
	}
	return o, o.Valid()
}

// observe adds a measured configuration to the table.
func (g *Goodput) observe(o goodput.Obs) { g.Configs, _ = goodput.Add(g.Configs, o) }

// follows reports whether a global batch is what advice a asks for, to
// within the rounding of a split: less than one sample per worker per
// micro-step.
func (a Advice) follows(global int64) bool {
	d := global - int64(a.Size)
	return d > -int64(a.Workers*(a.AccumulationSteps+1)) && d < int64(a.Workers*(a.AccumulationSteps+1))
}

// advise applies report r's batch to the job's goodput state: whether it
// follows the last advice, then the advice for the allocation: the batch
// of most goodput for the job's latest gradient statistics under the
// throughput model the scheduler fitted (alloc.Fit), else the batch the
// scheduler's estimates chose for its workers (none when the job is not
// adaptive, is to stop, or the scheduler has not chosen yet), split into
// local batches and accumulation steps, with the learning-rate scale that
// goes with it.
func (g *Goodput) advise(r Report, alloc Allocation) {
	if a := g.Advice; a != nil && r.Workers == a.Workers && r.GlobalBatchSize > 0 {
		if a.follows(r.GlobalBatchSize) {
			g.Follows = true
		} else if r.Epoch-g.AdvisedAt > 1 {
			g.Follows = false
		}
	}
	batch := alloc.Batch
	if alloc.Fit != nil && g.Stats().Known() && alloc.Workers > 0 {
		batch = goodput.Best(*alloc.Fit, g.Stats(), r.Batch.Bounds(), max(alloc.Nodes, 1), alloc.Workers).Batch
	}
	if batch <= 0 || alloc.Workers <= 0 || !r.Batch.Adaptive() {
		return
	}
	next := Advise(g.Stats(), r.Batch.Bounds(), alloc.Workers, batch)
	if g.Advice == nil || g.Advice.Size != next.Size || g.Advice.Workers != next.Workers {
		g.AdvisedAt = r.Epoch
	}
	g.Advice = &next
}

// Ignores reports whether a job runs batch sizes other than those advised
// more than one epoch after the advice: its speed is then its own batch's,
// not the advised one's.
func (s State) Ignores() bool {
	g := s.Goodput
	return g != nil && g.Advice != nil && !g.Follows && s.Latest.Epoch-g.AdvisedAt > 1
}

// Advise is the advice to run a global batch of batch samples on workers
// workers: clamped to the bounds (goodput.Bounds.Clamp), split into
// local batches and accumulation steps (goodput.Bounds.DefaultSplit), with the learning-rate scale the
// gradient statistics give. For adaptive bounds a report that runs it
// (its size, local size and accumulation steps) is within the report's
// limits: at most the bounds' MaxBatch and MaxLocal (or workers samples,
// one a worker, when workers alone exceed MaxBatch) and MaxAccumulation
// steps, and lrScale in (0, goodput.MaxGain], at most the size's ratio
// to InitBatch when that is above 1.
func Advise(g goodput.GradStats, b goodput.Bounds, workers, batch int) Advice {
	// The scheduler's batch may have been chosen for other bounds (the
	// job's reports may change them): keep it within these.
	atomic, accum := b.DefaultSplit(b.Clamp(batch, workers), workers)
	size := workers * (accum + 1) * atomic
	return Advice{Size: size, LocalSize: atomic, AccumulationSteps: accum,
		LRScale: g.LRScale(size, b.InitBatch), Workers: workers}
}
