package oracle

import "github.com/vodascheduler/voda/internal/model"

// gainItem is a job's next step in a marginal-gain auction: the gain per
// GPU of its next step and the job's rank in the algorithm's order, which
// breaks ties (lower first).
type gainItem struct {
	gain float64
	rank int32
	job  int32
}

// gainHeap is a max-heap of gainItems: highest gain first, then lowest
// rank. Each job has at most one item in the heap, so ranks are unique and
// the order is total: the heap's answers do not depend on insertion order.
type gainHeap []gainItem

func (h gainHeap) less(a, b int) bool {
	if h[a].gain != h[b].gain {
		return h[a].gain > h[b].gain
	}
	return h[a].rank < h[b].rank
}

// init establishes the heap order in O(n).
func (h gainHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h gainHeap) down(i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// replaceTop replaces the best item by it and restores the heap order.
func (h gainHeap) replaceTop(it gainItem) {
	h[0] = it
	h.down(0)
}

// popTop removes the best item.
func (h *gainHeap) popTop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
}

// growAuction hands spare GPUs out by marginal gain. gpus holds each job's
// count so far (indexed like the snapshot) and is updated in place; h holds
// the candidate steps, already heap-ordered. A job at 0 GPUs takes its min
// in one step (its item's gain is S(min)/min per GPU) if that many are
// free, else it drops out (free GPUs only decrease). A job above 0 takes
// one GPU at a time. next returns a job's next step after it moved, and
// false when it has none (at max, or no positive gain). It returns the
// GPUs left.
func growAuction(h gainHeap, gpus []int, spare int, minOf func(job int) int,
	next func(job int) (float64, bool)) int {
	for spare > 0 && len(h) > 0 {
		top := h[0]
		j := int(top.job)
		step := 1
		if gpus[j] == 0 {
			step = minOf(j)
		}
		if step > spare {
			h.popTop()
			continue
		}
		gpus[j] += step
		spare -= step
		if g, ok := next(j); ok {
			top.gain = g
			h.replaceTop(top)
		} else {
			h.popTop()
		}
	}
	return spare
}

// marginalGain returns the speedup a job gains from one more GPU, and
// whether it may take one: below its max and with a positive gain.
func marginalGain(snap *model.Snapshot, est []model.Estimates, gpus []int) func(job int) (float64, bool) {
	return func(j int) (float64, bool) {
		g := gpus[j]
		if g >= snap.Jobs[j].Spec.MaxWorkers {
			return 0, false
		}
		gain := est[j].SpeedupAt(g+1) - est[j].SpeedupAt(g)
		return gain, gain > 0
	}
}
