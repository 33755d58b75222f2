// FfDLOptimizer: the elastic-scaling optimizer of V. Saxena et al.,
// "Effective Elastic Scaling of Deep Learning Workloads", IEEE MASCOTS 2020
// (IBM FfDL).
//
// It chooses for every job a GPU count g_j in {0} ∪ [min_j, max_j] that
// maximizes the cluster's total speedup sum_j S_j(g_j) (Est.SpeedupAt)
// subject to sum_j g_j <= G, the cluster's GPUs.
//
// Exact dynamic programming over the jobs in arrival order (model.Before),
// as the original Voda does, when the table is small: jobs x (C+1) x
// (choices per job) <= 4e6 cells, C = min(G, sum_j min(max_j, G)). Among
// optimal answers the reconstruction (latest job first) gives each job the
// fewest GPUs that keep the optimum, which leaves ties to earlier jobs and
// hands out no GPU that adds nothing.
//
// Deviation: above that size the DP is too slow (the original took 46.5 s
// at 10,000 jobs and 8,000 GPUs), so a greedy auction on marginal gains
// takes over: the spare GPU goes to the step with the largest gain per GPU,
// S(g+1) - S(g) for a running job and S(min)/min for a job at 0, which
// takes its min at once if that many GPUs are free; ties by arrival; only
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
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	in, err := f.t.check(snap, nil)
	if err != nil {
		return model.Allocation{}, err
	}
	order := f.t.arrival(in)
	est := newCurves(snap)
	var gpus []int
	if capacity, ok := ffdlDPSize(snap, in.total); ok {
		gpus = ffdlDP(snap, order, est, capacity)
	} else {
		gpus = ffdlGreedy(in, order, est)
	}
	return in.allocation(order, gpus), nil
}

// ffdlDPSize returns the DP's capacity C and whether the table fits the
// cell limit.
func ffdlDPSize(snap *model.Snapshot, total int) (int, bool) {
	capacity := 0
	for i := range snap.Jobs {
		capacity += min(snap.Jobs[i].Spec.MaxWorkers, total)
		if capacity >= total {
			capacity = total
			break
		}
	}
	cells := 0
	for i := range snap.Jobs {
		s := &snap.Jobs[i].Spec
		choices := 1
		if hi := min(s.MaxWorkers, capacity); hi >= s.MinWorkers {
			choices += hi - s.MinWorkers + 1
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
// that reached it, for the reconstruction.
func ffdlDP(snap *model.Snapshot, order []int, est *curves, capacity int) []int {
	w := capacity + 1
	prev := make([]float64, w)
	cur := make([]float64, w)
	choice := make([]int32, len(order)*w)
	var sv []float64
	for k, i := range order {
		s := &snap.Jobs[i].Spec
		lo, hi := s.MinWorkers, min(s.MaxWorkers, capacity)
		sv = sv[:0]
		for g := lo; g <= hi; g++ {
			sv = append(sv, est.at(i, g))
		}
		// g = 0 first, then g ascending, keeping a count only when it is
		// strictly better: each cell ends with the fewest GPUs that reach
		// its best value.
		row := choice[k*w : (k+1)*w]
		copy(cur, prev)
		clear(row)
		for g := lo; g <= hi; g++ {
			sg, g32 := sv[g-lo], int32(g)
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
	gpus := make([]int, len(snap.Jobs))
	c := capacity
	for k := len(order) - 1; k >= 0; k-- {
		g := int(choice[k*w+c])
		gpus[order[k]] = g
		c -= g
	}
	return gpus
}

// ffdlGreedy hands GPUs out by marginal gain; see the file comment.
func ffdlGreedy(in *input, order []int, est *curves) []int {
	gpus := make([]int, len(in.name))
	h := make(gainHeap, 0, len(order))
	for r, i := range order {
		if m := int(in.minW[i]); m <= in.total {
			h = append(h, gainItem{gain: est.at(i, m) / float64(m), rank: int32(r), job: int32(i)})
		}
	}
	h.init()
	next := marginalGain(in, est, gpus)
	growAuction(h, nil, gpus, in.total, func(j int) int { return int(in.minW[j]) }, next)
	return gpus
}
