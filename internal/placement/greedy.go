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
	for i, n := range snap.Nodes {
		free[i] = n.GPUs
		index[n.Name] = i
	}
	jobs, err := allocatedJobs(snap, alloc)
	if err != nil {
		return Result{}, err
	}
	res := Result{Placement: make(model.Placement, len(alloc.GPUs))}
	var pending []string
	// Pass 1: jobs whose count is unchanged stay where they are.
	for _, a := range jobs {
		j, g, name := a.job, a.gpus, a.job.Spec.Name
		cur := j.State.Placement
		if cur.Workers() == g && fits(cur, index, free) {
			for _, nw := range cur {
				free[index[nw.Node]] -= nw.Workers
			}
			res.Placement[name] = cur.Clone()
			continue
		}
		pending = append(pending, name)
	}
	// Pass 2: the rest, most-free node first.
	for _, name := range pending {
		g := alloc.GPUs[name]
		total := 0
		for _, f := range free {
			total += f
		}
		if total < g {
			res.Unplaced = append(res.Unplaced, Unplaced{Job: name, GPUs: g,
				Reason: fmt.Sprintf("needs %d GPUs, %d free", g, total)})
			continue
		}
		var p model.JobPlacement
		for left := g; left > 0; {
			best := 0
			for i := 1; i < len(free); i++ {
				if free[i] > free[best] {
					best = i
				}
			}
			n := min(free[best], left)
			free[best] -= n
			left -= n
			p = append(p, model.NodeWorkers{Node: snap.Nodes[best].Name, Workers: n})
		}
		res.Placement[name] = p
	}
	return res, nil
}

// fits reports whether every node of p exists and has room for its
// workers.
func fits(p model.JobPlacement, index map[string]int, free []int) bool {
	need := map[string]int{}
	for _, nw := range p {
		need[nw.Node] += nw.Workers
	}
	for node, w := range need {
		i, ok := index[node]
		if !ok || free[i] < w {
			return false
		}
	}
	return true
}
