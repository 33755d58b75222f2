package placement

import (
	"fmt"

	"github.com/vodascheduler/voda/internal/model"
)

// GreedyName is the naive placer's registered name.
const GreedyName = "greedy"

// Greedy keeps a job where it is when its GPU count did not change and its
// nodes still have room; every other job with GPUs is placed from scratch,
// in the allocation's priority order, by repeatedly filling the node with
// the most free GPUs (lowest index on ties). This is what the Pollux
// artifact's baseline policies do; it ignores how many nodes a job spans.
// A job whose workers hold G GPUs each puts as many whole workers on that
// node as fit; it never moves another job to make room, so it is the
// plain baseline the topology placer's defragmentation is measured
// against.
type Greedy struct{}

var _ Placer = (*Greedy)(nil)

// NewGreedy returns the naive placer.
func NewGreedy() *Greedy { return &Greedy{} }

// Name implements Placer.
func (*Greedy) Name() string { return GreedyName }

// Place implements Placer.
func (*Greedy) Place(snap *model.Snapshot, alloc model.Allocation) (Result, error) {
	free := make([]int, len(snap.Nodes))
	index := make(map[string]int, len(snap.Nodes))
	largest := 0 // GPUs of the largest node
	for i, n := range snap.Nodes {
		free[i] = n.GPUs
		index[n.Name] = i
		largest = max(largest, n.GPUs)
	}
	jobs, err := allocatedJobs(snap, alloc)
	if err != nil {
		return Result{}, err
	}
	res := Result{Placement: make(model.Placement, len(alloc.GPUs))}
	var pending []allocated
	need := make([]int, len(snap.Nodes)) // scratch for fits
	var at []int                         // the node positions of a placement
	entries := 0
	for _, a := range jobs {
		entries += len(a.job.State.Placement)
	}
	// The kept placements' copies are pieces of one array (see carve).
	kept := make([]model.NodeWorkers, entries)
	// Pass 1: jobs whose count is unchanged stay where they are.
	for _, a := range jobs {
		cur := a.job.State.Placement
		var ok bool
		if cur.Workers()*a.per == a.gpus {
			ok, at = fits(cur, a.per, index, free, need, at)
		}
		if ok {
			for k, nw := range cur {
				free[at[k]] -= nw.Workers * a.per
			}
			jp := model.JobPlacement(carve(&kept, len(cur)))
			copy(jp, cur)
			res.Placement[a.job.Spec.Name] = jp
			continue
		}
		pending = append(pending, a)
	}
	// Pass 2: the rest, most-free node first. The index finds that node
	// without scanning them all; total is the plain sum of free, as a
	// node given a negative GPU count lowers it.
	total := 0
	for _, f := range free {
		total += f
	}
	x := newFreeIndex(free) // free as the "capacity": greedy never reads it
	for _, a := range pending {
		name, g, per := a.job.Spec.Name, a.gpus, a.per
		if total < g {
			res.Unplaced = append(res.Unplaced, Unplaced{Job: name, GPUs: g,
				Reason: fmt.Sprintf("needs %d GPUs, %d free", g, total)})
			continue
		}
		// Enough GPUs, but perhaps not in pieces of per (never short for
		// per = 1: the room is then x.total, at least total).
		if room := x.room(per); room*per < g {
			res.Unplaced = append(res.Unplaced, Unplaced{Job: name, GPUs: g, Reason: noRoomReason(g, per, room, x.total, largest)})
			continue
		}
		total -= g
		var p model.JobPlacement
		for left := g / per; left > 0; {
			// Some node holds a worker: the room counted above is at
			// least left, and the most free node holds one if any does.
			best := x.largest()
			n := min(x.free[best]/per, left)
			x.add(best, -n*per)
			left -= n
			p = append(p, model.NodeWorkers{Node: snap.Nodes[best].Name, Workers: n})
		}
		x.commit()
		res.Placement[name] = p
	}
	return res, nil
}

// fits reports whether every node of p exists and has room for its
// workers of per GPUs each; if so, at[k] is the position of p[k]'s node.
// at is reused scratch; need is a zeroed slice with a slot per node, left
// zeroed.
func fits(p model.JobPlacement, per int, index map[string]int, free, need, at []int) (bool, []int) {
	at = at[:0]
	ok := true
	for _, nw := range p {
		i, known := index[nw.Node]
		if !known {
			ok = false
			break
		}
		need[i] += nw.Workers * per
		at = append(at, i)
	}
	for _, i := range at {
		if need[i] > free[i] {
			ok = false
		}
	}
	for _, i := range at {
		need[i] = 0
	}
	return ok, at
}
