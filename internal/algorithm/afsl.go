// AFS-L: Apathetic Future Share with known job lengths, from C. Hwang, T.
// Kim, S. Kim, J. Shin and K. Park, "Elastic Resource Sharing for
// Distributed Deep Learning", USENIX NSDI 2021.
//
// GPUs are handed out one at a time. For each GPU, the candidates (jobs
// below their max) meet in a tournament in length order: shortest first by
// Est.RemainingSeconds (remaining time at one GPU), unknown last, ties by
// model.Before. The incumbent starts as the shortest candidate and is
// always the shorter side of each comparison; a longer challenger L takes
// over from the shorter incumbent S when its relative gain exceeds the
// incumbent's, each computed at its own GPU count n (the original used the
// incumbent's count for both, a defect):
//
//	(S_L(n_L+1) - S_L(n_L)) / S_L(n_L+1)  >  (S_S(n_S+1) - S_S(n_S)) / S_S(n_S)
//
// The right side is +Inf for an incumbent at 0 GPUs, so between jobs at 0
// the shorter wins. The winner gets the GPU.
//
// Minimum workers (not in the paper; the original ignored them): a job at
// 0 GPUs takes its min in one step, and only if that many are free; its
// "one more GPU" is that step, so its challenger-side gain is
// S(min)/S(min) = 1. No job goes past its max.
//
// Workers of G GPUs (not in the paper): a job's "one more GPU" is one more
// worker, G GPUs, handed out only if they are free, and both sides' gains
// are divided by the G of their step, so that jobs compare by relative
// gain per GPU: (S(n+G) - S(n)) / S(n+G) / G for a challenger, / S(n) / G
// for the incumbent, 1/G for a challenger at 0. With G = 1 this is the
// rule above.
//
// Deviations: the paper states the rule for two jobs; extending it to N
// jobs as a tournament in length order is our reading (the original Voda
// compared candidates in submit order and measured length as remaining
// time at the current share). A job whose next GPU has no positive gain is
// not a candidate, so such GPUs stay idle. Unusable speedup curves (see
// usableCurve in input.go) count as unknown, that is linear.
//
// The tournament is computed exactly but fast: candidates sit in a
// max-segment-tree of challenger gains over their length rank, so the next
// challenger that beats the incumbent (the first one after it whose gain
// exceeds the incumbent's) is found in O(log N) instead of by a scan. One
// GPU costs O((h+1) log N) with h the number of times the incumbent
// changes, typically a handful; the naive scan costs O(N).

package algorithm

import (
	"math"
	"slices"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
)

// NameAFSL is AFS-L's registered name.
const NameAFSL = "AFS-L"

// AFSL is Apathetic Future Share with known lengths.
type AFSL struct {
	t tracker
	s afslScratch // the tournament's, reused across decisions (guarded by t.mu)
}

// afslScratch holds the tournament's per-position slices, so that a
// decision at 100,000 jobs does not allocate (and the collector scan) 5 MB.
type afslScratch struct {
	cnt, minW           []int
	asLonger, asShorter []float64
	tree                []float64
}

var _ Allocator = (*AFSL)(nil)

// NewAFSL is AFS-L's factory; it takes no parameters.
func NewAFSL(*registry.Params) (Allocator, error) { return &AFSL{}, nil }

// Name returns NameAFSL.
func (*AFSL) Name() string { return NameAFSL }

// Allocate implements Allocator.
func (a *AFSL) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	in, err := a.t.check(snap, a.t.keyed(jobKey(remainingKey)), false)
	if err != nil {
		return model.Allocation{}, err
	}
	order := a.t.sorted(in, nil)
	return in.allocation(order, afslTournament(in, order, newCurves(snap), &a.s)), nil
}

// afslTournament runs the per-GPU tournament. Positions p index order (the
// length rank); asLonger[p] is the job's gain as a challenger, -Inf when it
// is not a candidate, and asShorter[p] its gain as the incumbent.
func afslTournament(in *input, order []int, est *curves, s *afslScratch) []int {
	n := len(order)
	s.cnt = slices.Grow(s.cnt[:0], n)[:n]
	s.minW = slices.Grow(s.minW[:0], n)[:n]
	s.asLonger = slices.Grow(s.asLonger[:0], n)[:n]
	s.asShorter = slices.Grow(s.asShorter[:0], n)[:n]
	cnt, minW, asLonger, asShorter := s.cnt, s.minW, s.asLonger, s.asShorter
	clear(cnt)
	clear(asShorter) // as the fresh slices were: eval sets it for candidates only
	free := in.total
	inf := math.Inf(1)

	eval := func(p int) {
		i := order[p]
		c := cnt[p]
		asLonger[p] = math.Inf(-1)
		per := int(in.per[i])
		switch {
		case c == 0:
			if minW[p] <= free {
				asLonger[p], asShorter[p] = 1/float64(per), inf
			}
		case c < int(in.maxW[i]) && per <= free:
			s0, s1 := est.at(i, c), est.at(i, c+per)
			if gain := s1 - s0; gain > 0 {
				asLonger[p], asShorter[p] = gain/s1/float64(per), gain/s0/float64(per)
			}
		}
	}
	for p, i := range order {
		minW[p] = int(in.minW[i])
		eval(p)
	}
	tree := buildMaxTree(s.tree, asLonger)
	s.tree = tree.v

	// A job stops being a candidate once its next step (its min at 0, a
	// worker of G GPUs above) exceeds the free GPUs. Rather than track that
	// eagerly, the search drops such a job
	// from the tree when it meets it, and searches again: each job is
	// dropped at most once.
	stale := func(p int) bool {
		if (cnt[p] == 0 && minW[p] > free) || (cnt[p] > 0 && int(in.per[order[p]]) > free) {
			tree.set(p, math.Inf(-1))
			return true
		}
		return false
	}

	// A job that stops being a candidate never becomes one again (its
	// count no longer changes, and free GPUs only decrease), so the first
	// candidate only moves right.
	head := 0
	for free > 0 {
		for head < n && (tree.leaf(head) == math.Inf(-1) || stale(head)) {
			head++
		}
		if head == n {
			break
		}
		w := head
		for !math.IsInf(asShorter[w], 1) {
			c := tree.firstAbove(w+1, asShorter[w])
			if c < 0 {
				break
			}
			if stale(c) {
				continue
			}
			w = c
		}
		step := int(in.per[order[w]])
		if cnt[w] == 0 {
			step = minW[w]
		}
		cnt[w] += step
		free -= step
		eval(w)
		tree.set(w, asLonger[w])
	}

	gpus := make([]int, len(in.name))
	for p, i := range order {
		gpus[i] = cnt[p]
	}
	return gpus
}

// maxTree is a segment tree of float64 maxima over positions 0..n-1, used
// to find the first position after a point whose value beats a bar.
type maxTree struct {
	size int // leaves, a power of two
	v    []float64
}

func newMaxTree(leaves []float64) maxTree { return buildMaxTree(nil, leaves) }

// buildMaxTree is newMaxTree in buf's array if it is large enough.
func buildMaxTree(buf, leaves []float64) maxTree {
	size := 1
	for size < len(leaves) {
		size <<= 1
	}
	v := slices.Grow(buf[:0], 2*size)[:2*size]
	for p := range size {
		v[size+p] = math.Inf(-1)
	}
	copy(v[size:], leaves)
	for p := size - 1; p >= 1; p-- {
		v[p] = max(v[2*p], v[2*p+1])
	}
	return maxTree{size: size, v: v}
}

func (t maxTree) set(p int, x float64) {
	p += t.size
	t.v[p] = x
	for p > 1 {
		p >>= 1
		t.v[p] = max(t.v[2*p], t.v[2*p+1])
	}
}

func (t maxTree) leaf(p int) float64 { return t.v[t.size+p] }

// firstAbove returns the first position >= from whose value is > bar, or
// -1 if there is none. It climbs from the leaf until a subtree to the
// right holds a value above bar, then descends into its leftmost such
// leaf: O(log n).
func (t maxTree) firstAbove(from int, bar float64) int {
	if from >= t.size {
		return -1
	}
	p := from + t.size
	for !(t.v[p] > bar) {
		// Go up while p is a right child, then over to the right sibling.
		for p&1 == 1 {
			p >>= 1
			if p <= 1 {
				return -1
			}
		}
		p++
	}
	for p < t.size {
		p <<= 1
		if !(t.v[p] > bar) {
			p++
		}
	}
	return p - t.size
}
