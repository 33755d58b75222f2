package placement

import (
	"sort"

	"github.com/vodascheduler/voda/internal/model"
)

// Bound answers "how few nodes could hold k workers" for one set of
// nodes: the k workers packed onto the largest nodes first. It ignores
// other jobs, so it is the lower bound a job's span is measured against.
type Bound struct {
	// prefix[i] is the capacity of the i largest nodes.
	prefix []int
	// caps are the node capacities, largest first.
	caps []int
}

// NewBound returns the bound for nodes.
func NewBound(nodes []model.Node) Bound {
	caps := make([]int, 0, len(nodes))
	for _, n := range nodes {
		if n.GPUs > 0 {
			caps = append(caps, n.GPUs)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(caps)))
	prefix := make([]int, len(caps)+1)
	for i, c := range caps {
		prefix[i+1] = prefix[i] + c
	}
	return Bound{prefix: prefix, caps: caps}
}

// MinNodes returns the fewest nodes whose capacity adds up to workers: 0
// for no workers, and every node when even all of them are too few.
func (b Bound) MinNodes(workers int) int {
	if workers <= 0 {
		return 0
	}
	i := sort.SearchInts(b.prefix, workers)
	return min(i, len(b.prefix)-1)
}

// MinNodesOf is MinNodes for workers of per GPUs each, a worker never
// split over nodes: a node of c GPUs holds c/per of them. It is every
// node that holds any when even all of them are too few.
func (b Bound) MinNodesOf(workers, per int) int {
	if per <= 1 {
		return b.MinNodes(workers)
	}
	if workers <= 0 {
		return 0
	}
	// The answer is usually a few nodes, so walking the largest first
	// costs less than a prefix sum per worker size.
	held, n := 0, 0
	for _, c := range b.caps {
		if c < per {
			break
		}
		held += c / per
		n++
		if held >= workers {
			break
		}
	}
	return n
}

// Spread counts the jobs of p that span more nodes than the fewest that
// could hold their workers: the fragmentation the topology placer fights.
func Spread(nodes []model.Node, p model.Placement) int {
	b := NewBound(nodes)
	n := 0
	for _, jp := range p {
		if jp.Nodes() > b.MinNodes(jp.Workers()) {
			n++
		}
	}
	return n
}

// SpreadOf is Spread for jobs whose workers may hold several GPUs: a
// job's fewest nodes count whole workers of its G (MinNodesOf), where
// Spread takes every worker for one GPU. It equals Spread when every
// job of snap has one-GPU workers.
func SpreadOf(snap *model.Snapshot, p model.Placement) int {
	per := perWorker(snap)
	if per == nil {
		return Spread(snap.Nodes, p)
	}
	b := NewBound(snap.Nodes)
	n := 0
	for name, jp := range p {
		if jp.Nodes() > b.MinNodesOf(jp.Workers(), per.of(name)) {
			n++
		}
	}
	return n
}
