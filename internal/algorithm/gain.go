package algorithm

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

func (h gainHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// push adds an item.
func (h *gainHeap) push(it gainItem) {
	*h = append(*h, it)
	h.up(len(*h) - 1)
}

// better reports whether a goes before b: the heap's order.
func better(a, b gainItem) bool {
	if a.gain != b.gain {
		return a.gain > b.gain
	}
	return a.rank < b.rank
}

// freshList feeds an auction the first steps of jobs still at 0 GPUs
// already in heap order (highest gain first, ties by rank), so that they
// need not be heapified: an auction reads them only until the GPUs run
// out, however many jobs wait. item returns a job's step, false to skip
// the job (not a candidate, or a step the auction gets from its heap).
type freshList struct {
	jobs []int
	item func(job int) (gainItem, bool)
	next int
	head gainItem
	have bool
}

// peek returns the best item left.
func (f *freshList) peek() (gainItem, bool) {
	if f == nil {
		return gainItem{}, false
	}
	for !f.have && f.next < len(f.jobs) {
		f.head, f.have = f.item(f.jobs[f.next])
		if !f.have {
			f.next++
		}
	}
	return f.head, f.have
}

// pop removes the item peek returned.
func (f *freshList) pop() {
	f.have = false
	f.next++
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
// the candidate steps, already heap-ordered, and fresh (nil for none) more
// of them in the same order: each step goes to the best of both, so the
// answer is the one a heap of all of them would give. A job at 0 GPUs takes its min
// in one step (its item's gain is S(min)/min per GPU) if that many are
// free, else it drops out (free GPUs only decrease). A job above 0 takes
// one worker at a time (in.per GPUs), and drops out when it no longer
// fits. next returns a job's next step after it moved, and false when it
// has none (at max, or no positive gain). It returns the GPUs left.
func growAuction(h gainHeap, fresh *freshList, gpus []int, spare int, in *input,
	next func(job int) (float64, bool)) int {
	q := stepQueue{h: h, fresh: fresh}
	for spare > 0 {
		top, fromFresh, ok := q.best()
		if !ok {
			break
		}
		j := int(top.job)
		step := int(in.per[j])
		if gpus[j] == 0 {
			step = int(in.minW[j])
		}
		if step > spare {
			q.drop(fromFresh)
			continue
		}
		gpus[j] += step
		spare -= step
		g, ok := next(j)
		top.gain = g
		if ok {
			q.requeue(top, fromFresh)
		} else {
			q.drop(fromFresh)
		}
	}
	return spare
}

// stepQueue is an auction's candidate steps: a heap of steps and,
// optionally, a freshList of more of them already in heap order. Its best
// step is the better of both heads: the one a heap of all of them would
// give.
type stepQueue struct {
	h     gainHeap
	fresh *freshList
}

// best returns the best step, whether it came from the fresh list, and
// false when there is none.
func (q *stepQueue) best() (it gainItem, fromFresh, ok bool) {
	top, fromFresh := q.fresh.peek()
	if len(q.h) > 0 && (!fromFresh || better(q.h[0], top)) {
		return q.h[0], false, true
	}
	return top, fromFresh, fromFresh
}

// drop removes the best step from where it came.
func (q *stepQueue) drop(fromFresh bool) {
	if fromFresh {
		q.fresh.pop()
	} else {
		q.h.popTop()
	}
}

// requeue puts the best step back valued it (a fresh one moves to the
// heap).
func (q *stepQueue) requeue(it gainItem, fromFresh bool) {
	if fromFresh {
		q.fresh.pop()
		q.h.push(it)
	} else {
		q.h.replaceTop(it)
	}
}

// marginalGain returns the speedup per GPU a job gains from one more
// worker (of in.per GPUs), and whether it may take one: below its max and
// with a positive gain.
func marginalGain(in *input, est *curves, gpus []int) func(job int) (float64, bool) {
	return func(j int) (float64, bool) {
		g, p := gpus[j], int(in.per[j])
		if g >= int(in.maxW[j]) {
			return 0, false
		}
		gain := (est.at(j, g+p) - est.at(j, g)) / float64(p)
		return gain, gain > 0
	}
}
