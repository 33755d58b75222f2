package placement

import (
	"fmt"
	"math"
	"sort"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/model"
)

// TopologyName is the topology-aware placer's registered name.
const TopologyName = "topology"

// Defaults of the topology placer's parameters.
const (
	// DefaultMigrationBudget is the most workers moved per cycle to
	// defragment the cluster.
	DefaultMigrationBudget = 16
	// DefaultRestartCost is what a migrated job pays, in seconds of lost
	// progress; the simulator charges the same.
	DefaultRestartCost = 30.0
	// DefaultNodePenalty is the slowdown assumed per extra node a job
	// spans: on n nodes a job takes 1 + penalty*(n-1) times as long as on
	// one. The Pollux profiles measure 1.5x to 3.6x from one node to two
	// (four workers), so 0.5 is on the careful side.
	DefaultNodePenalty = 0.5
)

// TopologyOptions tune the topology placer.
type TopologyOptions struct {
	// MigrationBudget is the most workers moved per cycle to defragment;
	// 0 turns consolidation off. Workers re-placed because their node
	// was lost or shrank, and jobs that start, do not count.
	MigrationBudget int
	// RestartCost is the seconds of progress a job loses when its workers
	// move and it would otherwise have kept running untouched.
	RestartCost float64
	// NodePenalty is the assumed slowdown per extra node spanned.
	NodePenalty float64
}

// DefaultTopologyOptions returns the defaults.
func DefaultTopologyOptions() TopologyOptions {
	return TopologyOptions{
		MigrationBudget: DefaultMigrationBudget,
		RestartCost:     DefaultRestartCost,
		NodePenalty:     DefaultNodePenalty,
	}
}

// Topology places each job on as few nodes as it can while moving as few
// workers as it can. In order:
//
//  1. Keep: every job keeps its workers where they are, up to its new
//     count and its nodes' capacity. A shrinking job gives workers back
//     from the nodes where it has the fewest first, so it gathers onto
//     fewer nodes.
//  2. Grow: a growing job first fills the free GPUs of nodes it already
//     uses; then the remaining needs, largest first, go to the node that
//     fits them most tightly, or, when none can hold them, to the node
//     with the most free GPUs, repeatedly. That uses the fewest nodes
//     the free GPUs allow and keeps large holes whole.
//  3. Consolidate: a job that spans more nodes than it could is re-placed
//     onto fewer when the free GPUs allow it, keeping as many workers as
//     possible where they are, if the time it saves (its remaining time
//     times the assumed cross-node slowdown it sheds) is more than the
//     restart it costs and its moves fit in the cycle's budget. A job
//     that restarts this cycle anyway (it was resized or starts) pays no
//     restart for moving.
//
// Ties go to the allocation's priority order and to the lower node
// index, so the same input always gives the same placement.
type Topology struct {
	opts TopologyOptions
}

var _ Placer = (*Topology)(nil)

// NewTopology returns a topology placer; negative options are an error.
func NewTopology(o TopologyOptions) (*Topology, error) {
	switch {
	case o.MigrationBudget < 0:
		return nil, fmt.Errorf("migration_budget %d: must not be negative", o.MigrationBudget)
	case o.RestartCost < 0 || math.IsNaN(o.RestartCost):
		return nil, fmt.Errorf("restart_cost %g: must not be negative", o.RestartCost)
	case o.NodePenalty < 0 || math.IsNaN(o.NodePenalty) || math.IsInf(o.NodePenalty, 0):
		return nil, fmt.Errorf("node_penalty %g: must be a non-negative number", o.NodePenalty)
	}
	return &Topology{opts: o}, nil
}

func topologyParams() []algorithm.ParamDoc {
	return []algorithm.ParamDoc{
		{Name: "migration_budget", Default: fmt.Sprint(DefaultMigrationBudget),
			Help: "most workers moved per cycle to defragment; 0 turns consolidation off"},
		{Name: "restart_cost", Default: fmt.Sprint(DefaultRestartCost),
			Help: "seconds a job loses when its workers move; a move must save more"},
		{Name: "node_penalty", Default: fmt.Sprint(DefaultNodePenalty),
			Help: "assumed slowdown per extra node a job spans (1 + penalty*(nodes-1))"},
	}
}

func newTopologyFromParams(p *algorithm.Params) (Placer, error) {
	o := DefaultTopologyOptions()
	var err error
	if o.MigrationBudget, err = p.Int("migration_budget", o.MigrationBudget); err != nil {
		return nil, err
	}
	if o.RestartCost, err = p.Float("restart_cost", o.RestartCost); err != nil {
		return nil, err
	}
	if o.NodePenalty, err = p.Float("node_penalty", o.NodePenalty); err != nil {
		return nil, err
	}
	return NewTopology(o)
}

// Name implements Placer.
func (*Topology) Name() string { return TopologyName }

// Options returns the placer's options.
func (t *Topology) Options() TopologyOptions { return t.opts }

// slot is a number of one job's workers on one node, the node given by
// its position in the snapshot.
type slot struct{ node, workers int }

type jobPlan struct {
	job  *model.Job
	rank int // position in the priority order
	g    int // allocated GPUs
	// prev is the job's placement before this cycle on known nodes, one
	// slot per node, in rank order.
	prev      []slot
	prevTotal int
	plan      []slot
	// unplaced says why the job could not be placed, if it could not.
	unplaced string
}

func (p *jobPlan) planned() int { return sumSlots(p.plan) }

// Place implements Placer.
func (t *Topology) Place(snap *model.Snapshot, alloc model.Allocation) (Result, error) {
	pos := make(map[string]int, len(snap.Nodes))
	caps := make([]int, len(snap.Nodes))
	for i, n := range snap.Nodes {
		pos[n.Name] = i
		caps[i] = n.GPUs
	}
	jobs := make(map[string]*model.Job, len(snap.Jobs))
	for i := range snap.Jobs {
		jobs[snap.Jobs[i].Spec.Name] = &snap.Jobs[i]
	}
	var plans []*jobPlan
	for _, name := range jobOrder(snap, alloc) {
		g := alloc.GPUs[name]
		if g <= 0 {
			continue
		}
		j, ok := jobs[name]
		if !ok {
			return Result{}, fmt.Errorf("place job %s: not in the snapshot", name)
		}
		p := &jobPlan{job: j, rank: len(plans), g: g, prev: mergeSlots(j.State.Placement, pos)}
		p.prevTotal = sumSlots(p.prev)
		plans = append(plans, p)
	}

	// An allocation larger than the cluster (only a broken allocator
	// gives one) leaves the lowest-priority jobs that do not fit out,
	// reported. Everything else fits: workers may split over any nodes.
	left := 0
	for _, c := range caps {
		left += max(c, 0)
	}
	for _, p := range plans {
		if p.g > left {
			p.unplaced = fmt.Sprintf("needs %d GPUs, %d free", p.g, left)
			continue
		}
		left -= p.g
	}

	x := newFreeIndex(caps)
	keep(plans, x)
	if err := grow(plans, x); err != nil {
		return Result{}, err
	}
	x.commit()
	if t.opts.MigrationBudget > 0 {
		t.consolidate(plans, x, NewBound(snap.Nodes))
	}

	res := Result{Placement: make(model.Placement, len(plans))}
	for _, p := range plans {
		name := p.job.Spec.Name
		if p.unplaced != "" {
			res.Unplaced = append(res.Unplaced, Unplaced{Job: name, GPUs: p.g, Reason: p.unplaced})
			continue
		}
		jp := make(model.JobPlacement, len(p.plan))
		for i, s := range p.plan {
			jp[i] = model.NodeWorkers{Node: snap.Nodes[s.node].Name, Workers: s.workers}
		}
		res.Placement[name] = jp
	}
	return res, nil
}

// keep is step 1: workers stay where they are, up to the job's new count
// and each node's capacity, higher-priority jobs first.
func keep(plans []*jobPlan, x *freeIndex) {
	for _, p := range plans {
		if p.unplaced != "" {
			continue
		}
		kept := append([]slot(nil), p.prev...)
		if excess := p.prevTotal - p.g; excess > 0 {
			// Give back from the nodes with the fewest of the job's
			// workers first; among equals, from the last in rank order.
			order := make([]int, len(kept))
			for i := range order {
				order[i] = i
			}
			sort.SliceStable(order, func(a, b int) bool {
				ka, kb := kept[order[a]], kept[order[b]]
				if ka.workers != kb.workers {
					return ka.workers < kb.workers
				}
				return order[a] > order[b]
			})
			for _, i := range order {
				r := min(kept[i].workers, excess)
				kept[i].workers -= r
				if excess -= r; excess == 0 {
					break
				}
			}
		}
		out := kept[:0]
		for _, s := range kept {
			if w := min(s.workers, x.free[s.node]); w > 0 {
				x.add(s.node, -w)
				out = append(out, slot{s.node, w})
			}
		}
		p.plan = out
	}
}

// grow is step 2: growing jobs fill the nodes they use, then every
// remaining need, largest first, goes onto the fewest nodes.
func grow(plans []*jobPlan, x *freeIndex) error {
	var needs []*jobPlan
	for _, p := range plans {
		if p.unplaced != "" {
			continue
		}
		need := p.g - p.planned()
		if need <= 0 {
			continue
		}
		if len(p.plan) > 0 {
			own := append([]slot(nil), p.plan...)
			sort.SliceStable(own, func(a, b int) bool { return own[a].workers > own[b].workers })
			for _, s := range own {
				if w := min(x.free[s.node], need); w > 0 {
					x.add(s.node, -w)
					p.plan = addSlot(p.plan, s.node, w)
					need -= w
				}
			}
		}
		if need > 0 {
			needs = append(needs, p)
		}
	}
	sort.SliceStable(needs, func(a, b int) bool {
		na, nb := needs[a].g-needs[a].planned(), needs[b].g-needs[b].planned()
		if na != nb {
			return na > nb
		}
		return needs[a].rank < needs[b].rank
	})
	for _, p := range needs {
		need := p.g - p.planned()
		if need > x.total {
			return fmt.Errorf("place job %s: %d more GPUs needed, %d free after the capacity check", p.job.Spec.Name, need, x.total)
		}
		p.plan = fill(x, p.plan, need)
	}
	return nil
}

// fill adds need workers to plan on the fewest nodes: the node that fits
// the rest most tightly, else the one with the most free GPUs. The caller
// checks that enough GPUs are free.
func fill(x *freeIndex, plan []slot, need int) []slot {
	for need > 0 {
		i := x.tightest(need)
		if i < 0 {
			i = x.largest()
		}
		w := min(x.free[i], need)
		x.add(i, -w)
		plan = addSlot(plan, i, w)
		need -= w
	}
	return plan
}

// consolidate is step 3.
func (t *Topology) consolidate(plans []*jobPlan, x *freeIndex, bound Bound) {
	type candidate struct {
		p       *jobPlan
		anyway  bool // restarts this cycle whatever happens
		excess  int
		baseMov int
	}
	var cands []candidate
	for _, p := range plans {
		if p.unplaced != "" {
			continue
		}
		if excess := len(p.plan) - bound.MinNodes(p.g); excess > 0 {
			anyway := p.prevTotal == 0 || !equalSlots(p.plan, p.prev)
			cands = append(cands, candidate{p: p, anyway: anyway, excess: excess, baseMov: moves(p, p.plan)})
		}
	}
	sort.SliceStable(cands, func(a, b int) bool {
		ca, cb := cands[a], cands[b]
		if ca.anyway != cb.anyway {
			return ca.anyway
		}
		if ca.excess != cb.excess {
			return ca.excess > cb.excess
		}
		return ca.p.rank < cb.p.rank
	})
	budget := t.opts.MigrationBudget
	prevOf := make([]int, len(x.free))
	for _, c := range cands {
		if budget <= 0 {
			break
		}
		p := c.p
		span := len(p.plan)
		mark := x.mark()
		for _, s := range p.plan {
			x.add(s.node, s.workers)
		}
		if k := x.fewest(p.g); k < 0 || k >= span {
			x.rollback(mark)
			continue
		}
		for _, s := range p.prev {
			prevOf[s.node] = s.workers
		}
		// Try keeping the job on its t best previous nodes, t = 0, 1, ...
		base := make([]int, len(p.prev))
		for i, s := range p.prev {
			base[i] = s.node
		}
		sort.SliceStable(base, func(a, b int) bool {
			na, nb := base[a], base[b]
			oa, ob := min(prevOf[na], x.free[na]), min(prevOf[nb], x.free[nb])
			if oa != ob {
				return oa > ob
			}
			return x.free[na] > x.free[nb]
		})
		bestT, bestNodes, bestOverlap := -1, span, -1
		for tk := 0; tk <= min(len(base), span-1); tk++ {
			m := x.mark()
			out := tryPlace(x, base[:tk], prevOf, p.g)
			ov := overlap(out, prevOf)
			// Among equals the later try wins: it keeps more previous nodes.
			if len(out) < bestNodes || (len(out) == bestNodes && ov >= bestOverlap) {
				bestT, bestNodes, bestOverlap = tk, len(out), ov
			}
			x.rollback(m)
		}
		accepted := false
		if bestT >= 0 {
			out := tryPlace(x, base[:bestT], prevOf, p.g)
			extra := moves(p, out) - c.baseMov
			if extra <= budget && (c.anyway || t.worthIt(p, span, len(out))) {
				p.plan = rankOrder(out, p.prev)
				budget -= max(extra, 0)
				accepted = true
			}
		}
		for _, s := range p.prev {
			prevOf[s.node] = 0
		}
		if accepted {
			x.commit()
		} else {
			x.rollback(mark)
		}
	}
	x.commit()
}

// worthIt reports whether moving an otherwise untouched job from span
// nodes to fewer saves more than its restart costs.
func (t *Topology) worthIt(p *jobPlan, span, fewer int) bool {
	r := p.job.Est.RemainingSeconds
	if r < 0 {
		// Unknown: a training job outlasts a restart by far.
		return true
	}
	if s := p.job.Est.SpeedupAt(p.g); s > 0 {
		r /= s
	}
	slow := func(n int) float64 { return 1 + t.opts.NodePenalty*float64(n-1) }
	saved := r * (1 - slow(fewer)/slow(span))
	return saved > t.opts.RestartCost
}

// tryPlace places g workers: first on the base nodes where the job's
// workers already are, then topping those up, then on the fewest other
// nodes. It changes x; the caller rolls back.
func tryPlace(x *freeIndex, base []int, prevOf []int, g int) []slot {
	var out []slot
	need := g
	for _, n := range base {
		if w := min(prevOf[n], x.free[n], need); w > 0 {
			x.add(n, -w)
			out = addSlot(out, n, w)
			need -= w
		}
	}
	for _, n := range base {
		if w := min(x.free[n], need); w > 0 {
			x.add(n, -w)
			out = addSlot(out, n, w)
			need -= w
		}
	}
	return fill(x, out, need)
}

// moves counts the workers of p that change node going from its previous
// placement to out, the way the scheduler counts migrations.
func moves(p *jobPlan, out []slot) int {
	if p.prevTotal == 0 || p.g == 0 {
		return 0
	}
	prev := make(map[int]int, len(p.prev))
	for _, s := range p.prev {
		prev[s.node] = s.workers
	}
	ov := 0
	for _, s := range out {
		ov += min(s.workers, prev[s.node])
	}
	return min(p.g, p.prevTotal) - ov
}

func overlap(out []slot, prevOf []int) int {
	ov := 0
	for _, s := range out {
		ov += min(s.workers, prevOf[s.node])
	}
	return ov
}

// rankOrder puts the nodes the job already used first, in their previous
// rank order, then the new ones in the order they were chosen.
func rankOrder(out, prev []slot) []slot {
	ordered := make([]slot, 0, len(out))
	used := make([]bool, len(out))
	for _, ps := range prev {
		for i, s := range out {
			if !used[i] && s.node == ps.node {
				ordered = append(ordered, s)
				used[i] = true
			}
		}
	}
	for i, s := range out {
		if !used[i] {
			ordered = append(ordered, s)
		}
	}
	return ordered
}

// mergeSlots turns a placement into slots on known nodes, one per node,
// in rank order; workers on unknown nodes are dropped (the node is gone).
func mergeSlots(p model.JobPlacement, pos map[string]int) []slot {
	var out []slot
	for _, nw := range p {
		i, ok := pos[nw.Node]
		if !ok || nw.Workers <= 0 {
			continue
		}
		out = addSlot(out, i, nw.Workers)
	}
	return out
}

func addSlot(plan []slot, node, w int) []slot {
	for i := range plan {
		if plan[i].node == node {
			plan[i].workers += w
			return plan
		}
	}
	return append(plan, slot{node, w})
}

func sumSlots(p []slot) int {
	n := 0
	for _, s := range p {
		n += s.workers
	}
	return n
}

func equalSlots(a, b []slot) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
