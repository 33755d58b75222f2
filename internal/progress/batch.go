package progress

import (
	"math"
	"time"

	"github.com/vodascheduler/voda/internal/goodput"
)

// Goodput is what Voda keeps of a job that declared an adaptive batch
// size (Batch.Adaptive): the mean seconds per optimizer step of each
// configuration it was measured on, its latest gradient statistics, the
// throughput model fitted to the configurations, and the batch size Voda
// last advised. The bounds are the latest report's (State.Latest.Batch).
type Goodput struct {
	// Configs are the configurations measured, in the order first
	// measured; at most goodput.MaxConfigs (later new ones are not kept).
	Configs []Config `json:"configs,omitempty"`
	// GradSqNorm and GradVariance are the latest reported gradient
	// statistics (both 0: never reported).
	GradSqNorm   float64 `json:"gradSqNorm,omitempty"`
	GradVariance float64 `json:"gradVariance,omitempty"`
	// Params is the model fitted to Configs, nil before the first
	// measurement, fitted at FittedAt. Current says whether it was fitted
	// to every configuration in Configs: a configuration it already
	// predicted within goodput.RefitTolerance does not make it fit again.
	// Stale says a configuration it mispredicts awaits a fit, which runs
	// at the first report RefitEvery after the last fit.
	Params   *goodput.Params `json:"params,omitempty"`
	FittedAt time.Time       `json:"fittedAt,omitzero"`
	Current  bool            `json:"current,omitempty"`
	Stale    bool            `json:"stale,omitempty"`
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

// RefitEvery is the least time between two fits of a job's model after
// its first: a fit takes milliseconds (about 1 ms for one configuration,
// 12 ms for sixteen), so a job that changes its batch at every report
// cannot make every report pay one.
const RefitEvery = time.Minute

// Config is one configuration's measured step time: Nodes and Workers as
// reported, Local samples per worker per micro-step, Accum extra
// accumulation steps; Seconds is the sum of N measurements.
type Config struct {
	Nodes   int     `json:"nodes"`
	Workers int     `json:"workers"`
	Local   int     `json:"local"`
	Accum   int     `json:"accum"`
	Seconds float64 `json:"seconds"`
	N       int     `json:"n"`
}

func (c Config) obs() goodput.Obs {
	return goodput.Obs{Nodes: c.Nodes, Replicas: c.Workers, Atomic: c.Local, Accum: c.Accum, Iteration: c.Seconds / float64(max(c.N, 1))}
}

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
// within bounds and its model usable.
func (g *Goodput) Valid() bool {
	if len(g.Configs) > goodput.MaxConfigs || (g.Params != nil && !g.Params.Valid()) {
		return false
	}
	for _, c := range g.Configs {
		if c.N < 1 || !c.obs().Valid() {
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

// observe adds a measured configuration to the table, and marks the
// model stale only when the configuration is new and the model (if any)
// mispredicts it by more than goodput.RefitTolerance: a report of a
// configuration already measured makes no fit.
func (g *Goodput) observe(o goodput.Obs) {
	for i := range g.Configs {
		c := &g.Configs[i]
		if c.Nodes == o.Nodes && c.Workers == o.Replicas && c.Local == o.Atomic && c.Accum == o.Accum {
			c.Seconds += o.Iteration
			c.N++
			return
		}
	}
	if len(g.Configs) >= goodput.MaxConfigs {
		return
	}
	g.Configs = append(g.Configs, Config{Nodes: o.Nodes, Workers: o.Replicas, Local: o.Atomic, Accum: o.Accum, Seconds: o.Iteration, N: 1})
	if g.Params != nil && math.Abs(g.Params.Predict(o)-o.Iteration)/o.Iteration <= goodput.RefitTolerance {
		g.Current = false
		return
	}
	g.Stale = true
}

// refit fits the model to the table when it is stale, at once the first
// time and otherwise at most once every RefitEvery.
func (g *Goodput) refit(now time.Time) {
	if !g.Stale || len(g.Configs) == 0 || (g.Params != nil && now.Sub(g.FittedAt) < RefitEvery) {
		return
	}
	obs := make([]goodput.Obs, len(g.Configs))
	for i, c := range g.Configs {
		obs[i] = c.obs()
	}
	prior := goodput.Generic(obs[0])
	if g.Params != nil {
		prior = *g.Params
	}
	p := goodput.Fit(obs, prior)
	g.Params, g.FittedAt, g.Current, g.Stale = &p, now, true, false
}

// follows reports whether a global batch is what advice a asks for, to
// within the rounding of a split: less than one sample per worker per
// micro-step.
func (a Advice) follows(global int64) bool {
	d := global - int64(a.Size)
	return d > -int64(a.Workers*(a.AccumulationSteps+1)) && d < int64(a.Workers*(a.AccumulationSteps+1))
}

// advise applies report r's batch to the job's goodput state: whether it
// follows the last advice, then the advice for the allocation (nil when
// the job is not adaptive, has no model, or is to stop).
func (g *Goodput) advise(r Report, alloc Allocation) {
	if a := g.Advice; a != nil && r.Workers == a.Workers && r.GlobalBatchSize > 0 {
		if a.follows(r.GlobalBatchSize) {
			g.Follows = true
		} else if r.Epoch-g.AdvisedAt > 1 {
			g.Follows = false
		}
	}
	if g.Params == nil || alloc.Workers <= 0 || !r.Batch.Adaptive() {
		return
	}
	next := Advise(*g.Params, g.Stats(), r.Batch.Bounds(), alloc.Workers, nodesFor(r, alloc))
	if prev := g.Advice; prev != nil && prev.Workers == next.Workers && prev.Size != next.Size {
		next = keep(*g.Params, g.Stats(), r.Batch.Bounds(), nodesFor(r, alloc), *prev, next)
	}
	if g.Advice == nil || g.Advice.Size != next.Size || g.Advice.Workers != next.Workers {
		g.AdvisedAt = r.Epoch
	}
	g.Advice = &next
}

// AdviceTolerance is how much less goodput than the best the batch
// advised before may promise and still be advised again: gradient
// statistics that wander a little do not make the job change its batch
// at every epoch.
const AdviceTolerance = 0.02

// keep returns the previous advice, with its learning-rate scale brought
// up to date, when its batch is still within AdviceTolerance of the best
// goodput (best) on the placement and within the bounds; else best.
func keep(p goodput.Params, g goodput.GradStats, b goodput.Bounds, nodes int, prev, best Advice) Advice {
	if prev.Size < b.InitBatch || (b.MaxBatch > 0 && prev.Size > b.MaxBatch) {
		return best
	}
	was := goodput.Evaluate(p, g, b, nodes, prev.Workers, prev.Size)
	now := goodput.Evaluate(p, g, b, nodes, best.Workers, best.Size)
	if was.Batch != prev.Size || was.Rate < (1-AdviceTolerance)*now.Rate {
		return best
	}
	prev.LocalSize, prev.AccumulationSteps = was.Atomic, was.Accum
	prev.LRScale = g.LRScale(prev.Size, b.InitBatch)
	return prev
}

// nodesFor is the nodes the allocation's workers run on: the stored
// placement's, else the report's when it has the allocation's workers,
// else the allocation's workers packed as densely as the report's
// placement shows (one node when it shows nothing).
func nodesFor(r Report, alloc Allocation) int {
	switch {
	case alloc.Nodes > 0:
		return alloc.Nodes
	case r.Nodes > 0 && r.Workers == alloc.Workers:
		return r.Nodes
	case r.Nodes > 0:
		perNode := (r.Workers + r.Nodes - 1) / r.Nodes
		return (alloc.Workers + perNode - 1) / perNode
	}
	return 1
}

// Advise is the batch size with the most goodput on workers workers over
// nodes nodes, and the learning-rate scale that goes with it.
func Advise(p goodput.Params, g goodput.GradStats, b goodput.Bounds, workers, nodes int) Advice {
	c := goodput.Best(p, g, b, nodes, workers)
	return Advice{Size: c.Batch, LocalSize: c.Atomic, AccumulationSteps: c.Accum,
		LRScale: g.LRScale(c.Batch, b.InitBatch), Workers: workers}
}
