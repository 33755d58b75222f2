// FfDLOptimizer: the elastic-scaling optimizer of V. Saxena et al.,
// "Effective Elastic Scaling of Deep Learning Workloads", IEEE MASCOTS 2020
// (IBM FfDL).
//
// It chooses for every job a GPU count g_j in {0} ∪ [min_j, max_j], whole
// workers (multiples of the job's G GPUs a worker; bounds in GPUs), that
// maximizes the cluster's total speedup sum_j S_j(g_j) (Est.SpeedupAt)
// subject to sum_j g_j <= the cluster's GPUs.
//
// Exact dynamic programming over the jobs in arrival order (model.Before),
// as the original Voda does, when the table is small: jobs x (C+1) x
// (choices per job) <= 4e6 cells, C = min(T, sum_j min(max_j, T)) with T
// the cluster's GPUs. Among
// optimal answers the reconstruction (latest job first) gives each job the
// fewest GPUs that keep the optimum, which leaves ties to earlier jobs and
// hands out no GPU that adds nothing.
//
// Deviation: above that size the DP is too slow (the original took 46.5 s
// at 10,000 jobs and 8,000 GPUs), so a greedy auction on marginal gains
// takes over: the spare GPU goes to the step with the largest gain per GPU,
// (S(g+G) - S(g))/G for a running job's next worker and S(min)/min for a
// job at 0, which takes its min at once if that many GPUs are free; ties
// by arrival; only
// positive gains. This is optimal when every curve is concave and min = 1
// (a test checks it against the DP) and an approximation otherwise.
//
// Both paths count unusable speedup curves (see usableCurve in input.go) as
// unknown, that is linear. The original ignored min; here a job gets 0 or
// at least its min.

package algorithm

import (
	"github.com/vodascheduler/voda/internal/model"

	"github.com/vodascheduler/voda/internal/registry"
)

// NameFfDL is FfDLOptimizer's registered name.
const NameFfDL = "FfDLOptimizer"

// ffdlDPCellLimit is the largest DP table (cells visited) solved exactly.
const ffdlDPCellLimit = 4_000_000

// FfDL maximizes the total speedup of all jobs.
type FfDL struct{ t tracker }

var _ Allocator = (*FfDL)(nil)

// NewFfDL is FfDLOptimizer's factory; it takes no parameters.
func NewFfDL(*registry.Params) (Allocator, error) { return &FfDL{}, nil }

// Name returns NameFfDL.
func (*FfDL) Name() string { return NameFfDL }

// Allocate implements Allocator.
func (f *FfDL) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	t := &f.t
	t.mu.Lock()
	defer t.mu.Unlock()
	// The key is the greedy's first step, S(min)/min, highest first: the
	// tracker keeps the jobs sorted by it, so the auction reads them in
	// that order and stops when the GPUs are gone. A job that keeps its
	// min and its curve (the same slice) keeps its key, without reading
	// the curve again.
	in, err := t.check(snap, t.keyed(func(j *model.Job, m int32) sortKey {
		minGPUs := inGPUs(j.Spec.MinWorkers, j.Spec.PerWorker())
		if m >= 0 && t.old.minW[m] == minGPUs && sameCurve(t.old.curve[m], j.Est.Speedup) {
			return t.oldKeys[m]
		}
		return ffdlKey(j.Est.Speedup, int(minGPUs))
	}), true)
	if err != nil {
		return model.Allocation{}, err
	}
	order := t.arrival(in)
	est := newCurves(snap)
	var gpus []int
	if capacity, ok := ffdlDPSize(in); ok {
		gpus = ffdlDP(in, order, est, capacity)
	} else {
		gpus = ffdlAuction(in, order, t.sorted(in, nil), t.keys, est)
	}
	return in.allocation(order, gpus), nil
}

// ffdlDPSize returns the DP's capacity C and whether the table fits the
// cell limit.
func ffdlDPSize(in *input) (int, bool) {
	capacity := 0
	for i := range in.maxW {
		capacity += min(int(in.maxW[i]), in.total)
		if capacity >= in.total {
			capacity = in.total
			break
		}
	}
	cells := 0
	for i := range in.maxW {
		choices := 1
		if lo, hi := int(in.minW[i]), min(int(in.maxW[i]), capacity); hi >= lo {
			choices += (hi-lo)/int(in.per[i]) + 1
		}
		cells += (capacity + 1) * choices
		if cells > ffdlDPCellLimit {
			return 0, false
		}
	}
	return capacity, true
}

// ffdlDP solves the knapsack exactly. best[c] is the largest total speedup
// of the jobs seen so far with at most c GPUs; choice records the count
// that reached it, for the reconstruction. A job's counts are whole
// workers: min, min + G, ... up to its max.
func ffdlDP(in *input, order []int, est *curves, capacity int) []int {
	w := capacity + 1
	prev := make([]float64, w)
	cur := make([]float64, w)
	choice := make([]int32, len(order)*w)
	var sv []float64
	for k, i := range order {
		lo, hi, per := int(in.minW[i]), min(int(in.maxW[i]), capacity), int(in.per[i])
		sv = sv[:0]
		for g := lo; g <= hi; g += per {
			sv = append(sv, est.at(i, g))
		}
		// g = 0 first, then g ascending, keeping a count only when it is
		// strictly better: each cell ends with the fewest GPUs that reach
		// its best value.
		row := choice[k*w : (k+1)*w]
		copy(cur, prev)
		clear(row)
		for g := lo; g <= hi; g += per {
			sg, g32 := sv[(g-lo)/per], int32(g)
			from, to, rs := prev[:w-g], cur[g:], row[g:]
			to, rs = to[:len(from)], rs[:len(from)]
			for c, pv := range from {
				if v := pv + sg; v > to[c] {
					to[c], rs[c] = v, g32
				}
			}
		}
		prev, cur = cur, prev
	}
	gpus := make([]int, len(in.name))
	c := capacity
	for k := len(order) - 1; k >= 0; k-- {
		g := int(choice[k*w+c])
		gpus[order[k]] = g
		c -= g
	}
	return gpus
}

// ffdlKey is a job's sort key for the greedy: minus the value per GPU of
// its first step, S(min)/min.
func ffdlKey(curve []float64, minW int) sortKey {
	return sortKey{f: -speedupAt(curve, usableCurve(curve), minW) / float64(minW)}
}

// ffdlGreedy hands GPUs out by marginal gain; see the file comment. It is
// ffdlAuction with the first steps sorted afresh.
func ffdlGreedy(in *input, order []int, est *curves) []int {
	keys := make([]sortKey, len(in.name))
	for i := range keys {
		keys[i] = ffdlKey(in.snap.Jobs[i].Est.Speedup, int(in.minW[i]))
	}
	byGain := sortByKey(in.snap, func(i int) sortKey { return keys[i] })
	return ffdlAuction(in, order, byGain, keys, est)
}

// ffdlAuction is the greedy. order is the arrival order (the ranks that
// break ties), byGain the jobs by their first step's value, -keys[i].f,
// highest first and ties by arrival: the auction's first steps in heap
// order, read only until the GPUs run out.
func ffdlAuction(in *input, order, byGain []int, keys []sortKey, est *curves) []int {
	gpus := make([]int, len(in.name))
	rank := func(i int) int32 { return int32(i) }
	if !in.sorted {
		ranks := make([]int32, len(order))
		for r, i := range order {
			ranks[i] = int32(r)
		}
		rank = func(i int) int32 { return ranks[i] }
	}
	fresh := &freshList{jobs: byGain, item: func(i int) (gainItem, bool) {
		if int(in.minW[i]) > in.total {
			return gainItem{}, false // never fits
		}
		return gainItem{gain: -keys[i].f, rank: rank(i), job: int32(i)}, true
	}}
	next := marginalGain(in, est, gpus)
	// The heap holds the next step of each job given GPUs: at most one per GPU.
	h := make(gainHeap, 0, min(in.total, len(byGain)))
	growAuction(h, fresh, gpus, in.total, in, next)
	return gpus
}
