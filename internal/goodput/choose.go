package goodput

import (
	"cmp"
	"fmt"
	"iter"
	"math"
)

// Candidates is how many batch sizes Best tries between a job's bounds,
// spaced geometrically, as the Pollux artifact does.
const Candidates = 50

// MaxReplicas bounds the replicas a curve describes.
const MaxReplicas = 1 << 12

// MaxAccum is the most extra gradient-accumulation steps a split of an
// adaptive job's batch takes: the most a progress report may carry
// (docs/progress.md, accumulationSteps), so that a job running the batch
// Voda advises can report it. With MaxLocal it bounds the batch a replica
// can run (Bounds.Largest).
const MaxAccum = 1_000_000

// Bounds are what a job lets the scheduler choose.
type Bounds struct {
	// InitBatch is the global batch size the job's hyperparameters were
	// tuned for; it is never run below.
	InitBatch int
	// MaxBatch is the largest global batch size that still trains well.
	// MaxBatch ≤ InitBatch fixes the batch at InitBatch.
	MaxBatch int
	// MinLocal is the least per-replica batch worth a replica (adaptive
	// jobs never run fewer samples per replica); 0 is 1.
	MinLocal int
	// MaxLocal is the most samples one replica's step holds (memory);
	// more takes gradient accumulation. 0 is no limit.
	MaxLocal int
	// Fixed > 0 pins the global batch at Fixed whatever the bounds, for a
	// job that does not adapt; its gain is still relative to InitBatch.
	Fixed int
}

// Check reports the first bound that makes no sense.
func (b Bounds) Check() error {
	switch {
	case b.InitBatch < 1:
		return fmt.Errorf("initial batch size %d: must be at least 1", b.InitBatch)
	case b.MaxBatch < 0:
		return fmt.Errorf("maximum batch size %d: must not be negative", b.MaxBatch)
	case b.MinLocal < 0 || b.MaxLocal < 0:
		return fmt.Errorf("local batch bounds [%d, %d]: must not be negative", b.MinLocal, b.MaxLocal)
	case b.Fixed < 0:
		return fmt.Errorf("fixed batch size %d: must not be negative", b.Fixed)
	case b.MaxLocal > 0 && b.MinLocal > b.MaxLocal:
		return fmt.Errorf("local batch bounds [%d, %d]: minimum above maximum", b.MinLocal, b.MaxLocal)
	}
	return nil
}

// Adaptive reports whether the batch size may change.
func (b Bounds) Adaptive() bool { return b.Fixed <= 0 && b.MaxBatch > b.InitBatch }

// Clamp is batch as far as replicas replicas allow it: at least InitBatch
// and MinLocal samples per replica, at most Largest (the range Best
// chooses in); Fixed when set.
func (b Bounds) Clamp(batch, replicas int) int {
	if b.Fixed > 0 {
		return b.Fixed
	}
	return min(max(batch, b.InitBatch, max(b.MinLocal, 1)*max(replicas, 1)), b.Largest(replicas))
}

// Largest is the largest global batch an adaptive job runs on replicas
// replicas: MaxBatch, and no more than MaxLocal samples in each of
// MaxAccum+1 micro-steps per replica.
func (b Bounds) Largest(replicas int) int {
	replicas = max(replicas, 1)
	// Compared by division, so that the product is formed only when it is
	// below MaxBatch and cannot overflow.
	if b.MaxLocal > 0 && b.MaxBatch/replicas/b.MaxLocal > MaxAccum {
		return replicas * b.MaxLocal * (MaxAccum + 1)
	}
	return b.MaxBatch
}

// MaxReplicas is the most replicas an adaptive job can use: each needs
// MinLocal samples of the largest batch. A fixed batch has no such limit
// here (its caller bounds the workers).
func (b Bounds) MaxReplicas() int {
	if !b.Adaptive() {
		return MaxReplicas
	}
	return max(1, min(b.MaxBatch/max(b.MinLocal, 1), MaxReplicas))
}

// DefaultSplit runs a global batch on replicas replicas with the fewest
// accumulation steps that keep a step within MaxLocal. When the batch is
// adaptive the split never exceeds Largest in total, so it takes at most
// MaxAccum accumulation steps and at most MaxBatch samples (unless
// replicas alone exceed MaxBatch: then each runs one sample).
func (b Bounds) DefaultSplit(batch, replicas int) (atomic, accum int) {
	replicas = max(replicas, 1)
	local := ceilDiv(batch, replicas)
	most := 0 // samples a replica's step may hold in all; 0: no limit
	if b.Adaptive() {
		most = max(b.Largest(replicas)/replicas, 1)
		local = min(local, most)
	}
	if b.MaxLocal > 0 {
		accum = max(ceilDiv(local, b.MaxLocal)-1, 0)
	}
	atomic = ceilDiv(local, accum+1)
	if most > 0 {
		// accum+1 ≤ local ≤ most, so this is at least 1.
		atomic = min(atomic, most/(accum+1))
	}
	return max(atomic, 1), accum
}

func (b Bounds) split(batch, replicas int) (atomic, accum int) {
	return b.DefaultSplit(batch, replicas)
}

func ceilDiv(a, b int) int {
	if b <= 0 {
		return a
	}
	return (a + b - 1) / b
}

// Choice is a batch size and how it runs on a placement.
type Choice struct {
	// Batch is the global batch size: Replicas·(Accum+1)·Atomic.
	Batch  int
	Atomic int
	Accum  int
	// Gain is the statistical efficiency gain over the initial batch.
	Gain float64
	// Iteration is the predicted seconds per optimizer step.
	Iteration float64
	// Rate is the predicted progress per second, Gain/Iteration: progress
	// counted in steps of the initial batch.
	Rate float64
}

// Evaluate predicts the goodput of running batch on the placement.
func Evaluate(p Params, g GradStats, b Bounds, nodes, replicas, batch int) Choice {
	return evaluate(p.placed(nodes, replicas), g, b, replicas, batch)
}

func evaluate(pl placement, g GradStats, b Bounds, replicas, batch int) Choice {
	atomic, accum := b.split(batch, replicas)
	eff := replicas * (accum + 1) * atomic
	c := Choice{Batch: eff, Atomic: atomic, Accum: accum, Gain: g.Gain(eff, b.InitBatch)}
	c.Iteration = pl.iteration(atomic, accum)
	if c.Iteration > 0 {
		c.Rate = c.Gain / c.Iteration
	}
	return c
}

// Best returns the batch size with the most goodput on replicas replicas
// over nodes nodes: the initial batch for a fixed job; otherwise the best
// of Candidates sizes spaced geometrically between max(InitBatch,
// MinLocal·replicas) and Largest(replicas) (ties to the smaller batch);
// Fixed when set. A placement too wide for that runs Largest.
func Best(p Params, g GradStats, b Bounds, nodes, replicas int) Choice {
	replicas = max(replicas, 1)
	pl := p.placed(max(nodes, 1), replicas)
	var best Choice
	first := true
	for batch := range b.candidates(replicas) {
		if c := evaluate(pl, g, b, replicas, batch); first || c.Rate > best.Rate {
			best, first = c, false
		}
	}
	return best
}

// candidates yields the batch sizes Best tries on replicas replicas, in
// the order it tries them (at least one).
func (b Bounds) candidates(replicas int) iter.Seq[int] {
	return func(yield func(int) bool) {
		if b.Fixed > 0 {
			yield(b.Fixed)
			return
		}
		if !b.Adaptive() {
			yield(b.InitBatch)
			return
		}
		lo := max(b.InitBatch, max(b.MinLocal, 1)*replicas)
		hi := b.Largest(replicas)
		if lo >= hi {
			yield(hi)
			return
		}
		if !yield(lo) {
			return
		}
		ratio := math.Log(float64(hi) / float64(lo))
		prev := lo
		for i := 1; i < Candidates; i++ {
			batch := int(math.Round(float64(lo) * math.Exp(ratio*float64(i)/float64(Candidates-1))))
			batch = min(max(batch, lo), hi)
			if batch == prev {
				continue
			}
			prev = batch
			if !yield(batch) {
				return
			}
		}
	}
}

// Curve returns, for k = 0..maxReplicas workers packed gpusPerNode to a
// node, the speedup of the best batch on k workers over the best batch on
// one (speedup[0] = 0, speedup[1] = 1), the batch size chosen for each
// (batch[0] = 0) and the goodput on one worker. A model that predicts no
// progress on one worker gives nil curves. It is NewTable(...).Curve(g):
// a caller that asks again with other gradient statistics keeps the table.
func Curve(p Params, g GradStats, b Bounds, gpusPerNode, maxReplicas int) (speedup []float64, batch []int, rate1 float64) {
	return NewTable(p, b, gpusPerNode, maxReplicas).Curve(g)
}

// Table is what Curve computes that does not depend on the gradient
// statistics: for each worker count, the batch sizes Best would try and
// their predicted step times. A job's statistics change at every epoch
// and its model only when it is fitted again, so a job's curve for new
// statistics costs a division or two per candidate instead of a
// step-time prediction (three powers). Its Best does the same for the
// placement a job runs on, which it keeps besides the packed ones. Curves
// and choices from a Table are Best's to the last bit. It holds up to
// Candidates entries of 24 bytes per worker count. It is not safe for
// concurrent use.
type Table struct {
	p           Params
	bounds      Bounds
	gpusPerNode int
	plans       *Plans
	// entries[start[k]:start[k+1]] are the candidates for k workers, in
	// the order Best tries them; k = 0 has none.
	entries []entry
	start   []int
	// spare are the candidates on a placement that is not packed: replicas
	// workers over nodes nodes (0: none).
	spare                     []entry
	spareNodes, spareReplicas int
}

// entry is one candidate batch: the size tried, the size it runs
// (Choice.Batch), its predicted seconds per step and its scale over the
// initial batch, float64(batch)/float64(InitBatch), which GradStats.Gain
// computes for every curve.
type entry struct {
	tried, batch int
	iter, scale  float64
}

// maxPowMemo bounds the local batches whose powers a table's rows share
// (8 bytes each, and 4 for their stamps).
const maxPowMemo = 1 << 12

// NewTable returns the table of Curve for model p, bounds b, and k =
// 1..maxReplicas workers packed gpusPerNode to a node.
func NewTable(p Params, b Bounds, gpusPerNode, maxReplicas int) *Table {
	return NewPlans().NewTable(p, b, gpusPerNode, maxReplicas)
}

// Plans keeps what tables compute that depends only on a job's bounds:
// for each worker count, the batch sizes Best tries and how each splits
// into local batch and accumulation steps. The jobs of an application
// share their bounds, and a job's table is built again at every fit of
// its model, so a caller that keeps one Plans for its tables computes
// them once. Consecutive candidates that split alike run the same batch
// at the same speed, and Best keeps the first of them, so a plan keeps
// only the first. It is not safe for concurrent use, and nor are the
// tables it makes.
type Plans struct {
	rows map[planKey][]candidate
	// pow and stamp memoise Compute(atomic)^Gamma for one table at a
	// time: pow[a] holds it when stamp[a] == gen.
	pow   []float64
	stamp []uint32
	gen   uint32
}

type planKey struct {
	b        Bounds
	replicas int
}

// candidate is one batch size tried and how it runs.
type candidate struct {
	tried, batch, atomic, accum int
}

// maxPlanRows bounds a Plans' rows: it forgets them all when full. A row
// is up to Candidates candidates of 32 bytes.
const maxPlanRows = 1 << 14

// NewPlans returns empty plans.
func NewPlans() *Plans { return &Plans{rows: map[planKey][]candidate{}} }

// row returns the candidates on replicas workers for bounds b.
func (ps *Plans) row(b Bounds, replicas int) []candidate {
	k := planKey{b, replicas}
	if r, ok := ps.rows[k]; ok {
		return r
	}
	var r []candidate
	for batch := range b.candidates(replicas) {
		atomic, accum := b.split(batch, replicas)
		if n := len(r); n > 0 && r[n-1].atomic == atomic && r[n-1].accum == accum {
			continue // the same batch at the same speed: Best keeps the first
		}
		r = append(r, candidate{tried: batch, batch: replicas * (accum + 1) * atomic, atomic: atomic, accum: accum})
	}
	if len(ps.rows) >= maxPlanRows {
		clear(ps.rows)
	}
	ps.rows[k] = r
	return r
}

// NewTable is NewTable with the candidates taken from ps.
func (ps *Plans) NewTable(p Params, b Bounds, gpusPerNode, maxReplicas int) *Table {
	maxReplicas = min(max(maxReplicas, 1), MaxReplicas)
	gpusPerNode = max(gpusPerNode, 1)
	t := &Table{p: p, bounds: b, gpusPerNode: gpusPerNode, plans: ps, start: make([]int, maxReplicas+2)}
	// Compute(atomic)^Gamma, which the rows share: a local batch is at
	// most MaxLocal, else the largest batch (then the rows share less).
	memo := false
	if n := cmp.Or(b.MaxLocal, max(b.MaxBatch, b.InitBatch, b.Fixed)); n <= maxPowMemo {
		if len(ps.pow) <= n {
			ps.pow, ps.stamp = make([]float64, n+1), make([]uint32, n+1)
		}
		ps.gen++
		if ps.gen == 0 { // wrapped: no stamp may look current
			clear(ps.stamp)
			ps.gen = 1
		}
		memo = true
	}
	for k := 1; k <= maxReplicas; k++ {
		t.start[k] = len(t.entries)
		row := ps.row(b, k)
		if k == 1 {
			// Most rows have as many candidates as the first.
			t.entries = make([]entry, 0, maxReplicas*len(row))
		}
		t.entries = t.appendRow(t.entries, row, ceilDiv(k, gpusPerNode), k, memo)
	}
	t.start[maxReplicas+1] = len(t.entries)
	return t
}

// appendRow appends to dst the candidates row on replicas workers over
// nodes nodes, predicted as Evaluate predicts them; memo: share the
// powers of local batches through t.plans.
func (t *Table) appendRow(dst []entry, row []candidate, nodes, replicas int, memo bool) []entry {
	pl := t.p.placed(nodes, replicas)
	first := len(dst)
	ps := t.plans
	for _, c := range row {
		var iter float64
		if memo && pl.s > 0 && c.atomic < len(ps.pow) {
			// placement.iteration, with the power shared.
			cc := pl.p.Compute(c.atomic)
			if ps.stamp[c.atomic] != ps.gen {
				ps.pow[c.atomic], ps.stamp[c.atomic] = pow(cc, pl.p.Gamma), ps.gen
			}
			iter = pl.synced(cc, ps.pow[c.atomic], c.accum)
		} else {
			iter = pl.iteration(c.atomic, c.accum)
		}
		e := entry{tried: c.tried, batch: c.batch, iter: iter, scale: float64(c.batch) / float64(t.bounds.InitBatch)}
		if n := len(dst); n > first && dst[n-1].batch == e.batch && dst[n-1].iter == e.iter {
			continue // the same batch again cannot do better
		}
		dst = append(dst, e)
	}
	return dst
}

// Curve is Curve for gradient statistics g.
func (t *Table) Curve(g GradStats) (speedup []float64, batch []int, rate1 float64) {
	one, _ := t.best(g, 1)
	if !(one.Rate > 0) || math.IsInf(one.Rate, 1) {
		return nil, nil, 0
	}
	n := len(t.start) - 2
	speedup = make([]float64, n+1)
	batch = make([]int, n+1)
	speedup[1], batch[1] = 1, one.Batch
	for k := 2; k <= n; k++ {
		c, _ := t.best(g, k)
		speedup[k], batch[k] = c.Rate/one.Rate, c.Batch
	}
	return speedup, batch, one.Rate
}

// Best is Best for the table's model and bounds: from the table when it
// holds the placement (replicas workers packed as the table packs them),
// else from the placement last asked for, which it keeps in place of the
// one before.
func (t *Table) Best(g GradStats, nodes, replicas int) Choice {
	replicas, nodes = max(replicas, 1), max(nodes, 1)
	row := t.spare
	if replicas < len(t.start)-1 && nodes == ceilDiv(replicas, t.gpusPerNode) {
		row = t.entries[t.start[replicas]:t.start[replicas+1]]
	} else if nodes != t.spareNodes || replicas != t.spareReplicas {
		t.spare = t.appendRow(t.spare[:0], t.plans.row(t.bounds, replicas), nodes, replicas, false)
		t.spareNodes, t.spareReplicas, row = nodes, replicas, t.spare
	}
	c, tried := best(g, t.bounds.InitBatch, row)
	c.Atomic, c.Accum = t.bounds.split(tried, replicas)
	return c
}

// best is Best's choice on k workers, without Atomic and Accum, and the
// batch size tried that gave it.
func (t *Table) best(g GradStats, k int) (Choice, int) {
	return best(g, t.bounds.InitBatch, t.entries[t.start[k]:t.start[k+1]])
}

// best is Best's choice among the candidates in row: the first with the
// most goodput, scored as Evaluate scores it.
func best(g GradStats, init int, row []entry) (best Choice, tried int) {
	// GradStats.Gain, with what does not depend on the batch hoisted out
	// of the loop: the same operations on the same values.
	known := g.Known() && init > 0
	sum := g.Var + g.Sqr
	for i, e := range row {
		c := Choice{Batch: e.batch, Gain: 1, Iteration: e.iter}
		if known && e.batch > 0 {
			c.Gain = g.gain(sum, e.scale)
		}
		if c.Iteration > 0 {
			c.Rate = c.Gain / c.Iteration
		}
		if i == 0 || c.Rate > best.Rate {
			best, tried = c, e.tried
		}
	}
	return best, tried
}
