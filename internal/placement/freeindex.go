package placement

import "math/bits"

// freeIndex keeps every node's free GPU count, bucketed by that count, so
// the placer finds the node with the most free GPUs, or the one that fits
// a need most tightly, in O(largest node + nodes/64) with the lowest node
// position winning ties. Changes can be undone back to a mark, which is
// how consolidation tries a move and takes it back.
type freeIndex struct {
	free  []int
	cap   []int
	total int
	// buckets[f] has bit i set when node i has exactly f free GPUs (f >= 1).
	buckets [][]uint64
	count   []int
	undo    []change
}

type change struct{ node, free int }

func newFreeIndex(caps []int) *freeIndex {
	maxCap := 0
	for _, c := range caps {
		maxCap = max(maxCap, c)
	}
	words := (len(caps) + 63) / 64
	x := &freeIndex{
		free:    make([]int, len(caps)),
		cap:     caps,
		buckets: make([][]uint64, maxCap+1),
		count:   make([]int, maxCap+1),
	}
	backing := make([]uint64, (maxCap+1)*words)
	for f := range x.buckets {
		x.buckets[f] = backing[f*words : (f+1)*words]
	}
	for i, c := range caps {
		x.put(i, max(c, 0))
	}
	return x
}

// put sets node i's free count without recording it.
func (x *freeIndex) put(i, f int) {
	if old := x.free[i]; old > 0 {
		x.buckets[old][i/64] &^= 1 << (i % 64)
		x.count[old]--
	}
	x.total += f - x.free[i]
	x.free[i] = f
	if f > 0 {
		x.buckets[f][i/64] |= 1 << (i % 64)
		x.count[f]++
	}
}

// add changes node i's free count by d, recording the change.
func (x *freeIndex) add(i, d int) {
	if d == 0 {
		return
	}
	x.undo = append(x.undo, change{i, x.free[i]})
	x.put(i, x.free[i]+d)
}

func (x *freeIndex) mark() int { return len(x.undo) }

// rollback undoes every change after mark.
func (x *freeIndex) rollback(mark int) {
	for k := len(x.undo) - 1; k >= mark; k-- {
		c := x.undo[k]
		x.put(c.node, c.free)
	}
	x.undo = x.undo[:mark]
}

// commit forgets the recorded changes.
func (x *freeIndex) commit() { x.undo = x.undo[:0] }

func (x *freeIndex) first(f int) int {
	for w, word := range x.buckets[f] {
		if word != 0 {
			return w*64 + bits.TrailingZeros64(word)
		}
	}
	return -1
}

// each calls fn for every node with exactly f free GPUs (f >= 1), lowest
// position first, until fn returns false. fn may change x only if it
// rolls its changes back before returning.
func (x *freeIndex) each(f int, fn func(node int) bool) {
	for w, word := range x.buckets[f] {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			if !fn(w*64 + b) {
				return
			}
			word &^= 1 << b
		}
	}
}

// largest returns the node with the most free GPUs, or -1 if none has any.
func (x *freeIndex) largest() int {
	for f := len(x.count) - 1; f >= 1; f-- {
		if x.count[f] > 0 {
			return x.first(f)
		}
	}
	return -1
}

// tightest returns the node with the fewest free GPUs that still holds
// need, or -1 if no node does.
func (x *freeIndex) tightest(need int) int {
	for f := max(need, 1); f < len(x.count); f++ {
		if x.count[f] > 0 {
			return x.first(f)
		}
	}
	return -1
}

// fewest returns how few nodes could hold need workers of per GPUs each
// with the current free counts, or -1 if all of them together are too
// few. A node with f free GPUs holds f/per such workers.
func (x *freeIndex) fewest(need, per int) int {
	if need <= 0 {
		return 0
	}
	if need*per > x.total {
		return -1
	}
	nodes := 0
	for f := len(x.count) - 1; f >= per; f-- {
		c := x.count[f]
		if c == 0 {
			continue
		}
		if k := f / per; c*k >= need {
			return nodes + (need+k-1)/k
		}
		nodes += c
		need -= c * (f / per)
	}
	return -1
}

// room returns how many workers of per GPUs each the free GPUs hold, a
// worker never split over nodes. For per = 1 it is total.
func (x *freeIndex) room(per int) int {
	if per <= 1 {
		return x.total
	}
	n := 0
	for f := per; f < len(x.count); f++ {
		n += x.count[f] * (f / per)
	}
	return n
}
