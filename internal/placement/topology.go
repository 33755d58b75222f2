package placement

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
)

// TopologyName is the topology-aware placer's registered name.
const TopologyName = "topology"

// Defaults of the topology placer's parameters.
const (
	// DefaultMigrationBudget is the most workers of otherwise untouched
	// jobs moved per cycle to defragment the cluster.
	DefaultMigrationBudget = 16
	// DefaultRestartCost is what a migrated job pays, in seconds of lost
	// progress; the simulator charges the same.
	DefaultRestartCost = 30.0
	// DefaultNodePenalty is the slowdown assumed for a job that spans
	// more than one node: it takes 1 + penalty times as long as on one.
	// Ring all-reduce is bound by its slowest link, so leaving the node
	// is what costs; two or four nodes differ little. The Pollux
	// profiles measure 1.5x to 3.6x from one node to two (four
	// workers), so 0.5 is on the careful side.
	DefaultNodePenalty = 0.5
	// DefaultDefragBudget is the most workers moved per cycle to free a
	// node for a job whose workers of G GPUs fit nowhere although enough
	// GPUs are free: eight, what empties an 8-GPU node of one-GPU
	// workers.
	DefaultDefragBudget = 8
)

// TopologyOptions tune the topology placer.
type TopologyOptions struct {
	// MigrationBudget is the most workers moved per cycle in jobs that
	// would otherwise keep running untouched, to defragment the cluster;
	// 0 turns that off.
	MigrationBudget int
	// KeepResized keeps the workers of a resized job where they are even
	// when placing it afresh would span fewer nodes. By default such a
	// job, which restarts anyway, is re-placed when that saves nodes.
	KeepResized bool
	// RestartCost is the seconds of progress a job loses when its workers
	// move and it would otherwise have kept running untouched.
	RestartCost float64
	// NodePenalty is the assumed slowdown of a job spread over more than
	// one node, against one node.
	NodePenalty float64
	// DefragBudget is the most workers moved per cycle, from nodes
	// partly used by jobs with smaller workers, to make room for a job
	// whose workers of G GPUs each fit nowhere although enough GPUs are
	// free. Unlike the other options its zero value means the default,
	// DefaultDefragBudget, so options written before it existed keep
	// their meaning; a negative value turns defragmentation off.
	DefragBudget int
}

// defragBudget is DefragBudget with its zero value read as the default.
func (o TopologyOptions) defragBudget() int {
	switch {
	case o.DefragBudget < 0:
		return 0
	case o.DefragBudget == 0:
		return DefaultDefragBudget
	}
	return o.DefragBudget
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
//     count and its nodes' capacity, higher priority first. A shrinking
//     job gives workers back from the nodes where it has the fewest, so
//     it gathers onto fewer nodes.
//  2. Grow: a growing job first fills the free GPUs of nodes it already
//     uses. Then every job that restarts this cycle anyway (it starts,
//     was resized, or lost workers with a node), largest first, gets its
//     remaining workers on the fewest nodes: the node that fits them most
//     tightly, or, when none can hold them, the node with the most free
//     GPUs, repeatedly. That keeps large holes whole. If placing the job
//     afresh, still preferring the nodes it used, spans fewer nodes than
//     keeping its workers, it is placed afresh (unless KeepResized).
//  3. Consolidate: a job that would keep running untouched but spans
//     more nodes than it could is re-placed onto fewer, alone or by
//     swapping places with a job that runs on one node, keeping as many
//     workers where they are as it can. A move is made only if the time
//     it saves (the job's remaining time times the cross-node slowdown it
//     sheds) exceeds the restarts it causes, and only while the cycle's
//     migration budget lasts.
//
// Workers of G GPUs count whole: a node with f free GPUs holds f/G of
// them, and a job whose workers fit nowhere although enough GPUs are
// free gets a node freed for it in step 2 by moving smaller workers,
// within DefragBudget (see defragment), or waits, reported unplaced.
//
// Ties go to the allocation's priority order and to the lower node
// index, so the same input always gives the same placement.
type Topology struct {
	opts TopologyOptions
}

var _ Placer = (*Topology)(nil)

// NewTopology returns a topology placer; negative options are an error,
// except DefragBudget (negative turns defragmentation off).
func NewTopology(o TopologyOptions) (*Topology, error) {
	switch {
	case o.MigrationBudget < 0:
		return nil, fmt.Errorf("migration_budget %d: must not be negative", o.MigrationBudget)
	case o.RestartCost < 0 || math.IsNaN(o.RestartCost) || math.IsInf(o.RestartCost, 0):
		return nil, fmt.Errorf("restart_cost %g: must be a non-negative number", o.RestartCost)
	case o.NodePenalty < 0 || math.IsNaN(o.NodePenalty) || math.IsInf(o.NodePenalty, 0):
		return nil, fmt.Errorf("node_penalty %g: must be a non-negative number", o.NodePenalty)
	}
	return &Topology{opts: o}, nil
}

func topologyParams() []registry.ParamDoc {
	return []registry.ParamDoc{
		{Name: "migration_budget", Default: fmt.Sprint(DefaultMigrationBudget),
			Help: "most workers of otherwise untouched jobs moved per cycle to defragment; 0 turns it off"},
		{Name: "keep_resized", Default: "false",
			Help: "keep a resized job's workers in place even when placing it afresh spans fewer nodes"},
		{Name: "restart_cost", Default: fmt.Sprint(DefaultRestartCost),
			Help: "seconds a job loses when its workers move; a move must save more"},
		{Name: "node_penalty", Default: fmt.Sprint(DefaultNodePenalty),
			Help: "assumed slowdown of a job spread over several nodes: 1 + penalty times its time on one"},
		{Name: "defrag_budget", Default: fmt.Sprint(DefaultDefragBudget),
			Help: "most smaller workers moved per cycle to free a node for a job whose multi-GPU workers fit nowhere; 0 turns it off"},
	}
}

func newTopologyFromParams(p *registry.Params) (Placer, error) {
	o := DefaultTopologyOptions()
	var err error
	if o.MigrationBudget, err = p.Int("migration_budget", o.MigrationBudget); err != nil {
		return nil, err
	}
	if o.KeepResized, err = p.Bool("keep_resized", o.KeepResized); err != nil {
		return nil, err
	}
	if o.RestartCost, err = p.Float("restart_cost", o.RestartCost); err != nil {
		return nil, err
	}
	if o.NodePenalty, err = p.Float("node_penalty", o.NodePenalty); err != nil {
		return nil, err
	}
	// The parameter counts workers, 0 for none; the option's zero value
	// is the default, so 0 is stored as -1 and the default as 0.
	defrag, err := p.Int("defrag_budget", DefaultDefragBudget)
	switch {
	case err != nil:
		return nil, err
	case defrag < 0:
		return nil, fmt.Errorf("defrag_budget %d: must not be negative", defrag)
	case defrag == 0:
		o.DefragBudget = -1
	case defrag != DefaultDefragBudget:
		o.DefragBudget = defrag
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
	per  int // GPUs per worker (G)
	w    int // allocated workers: g / per
	// prev, plan and the slots everywhere count workers; a slot takes
	// its workers times per GPUs of the free index.
	// prev is the job's placement before this cycle on known nodes, one
	// slot per node, in rank order.
	prev      []slot
	prevTotal int
	plan      []slot
	// anyway says the job restarts this cycle whatever its placement:
	// it starts, is resized or lost workers.
	anyway bool
	// unplaced says why the job could not be placed, if it could not.
	unplaced string
	// home is the node the job ran only on when consolidation started,
	// or -1; changed says consolidation gave it a new plan since.
	home    int
	changed bool
	// key is what grow and consolidate sort by, computed once: the
	// workers still to place, or the nodes spanned beyond the fewest.
	key int
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
	jobs, err := allocatedJobs(snap, alloc)
	if err != nil {
		return Result{}, err
	}
	// The plans and their previous slots live in two slabs: a
	// 10,000-node cycle has tens of thousands of jobs, and one allocation
	// each is most of the garbage a call makes.
	slab := make([]jobPlan, len(jobs))
	plans := make([]*jobPlan, len(jobs))
	entries := 0
	for _, a := range jobs {
		entries += len(a.job.State.Placement)
	}
	arena := make([]slot, 0, entries)
	for i, a := range jobs {
		p := &slab[i]
		*p = jobPlan{job: a.job, rank: i, g: a.gpus, per: a.per, w: a.gpus / a.per}
		p.prev, arena = mergeSlots(arena, a.job.State.Placement, pos)
		p.prevTotal = sumSlots(p.prev)
		plans[i] = p
	}

	// An allocation larger than the cluster (only a broken allocator
	// gives one) leaves the lowest-priority jobs that do not fit out,
	// reported. Everything else fits: workers may split over any nodes.
	left, largest := 0, 0
	for _, c := range caps {
		left += max(c, 0)
		largest = max(largest, c)
	}
	for _, p := range plans {
		if p.per > 1 && p.per > largest {
			// Workers larger than every node: no move makes room.
			p.unplaced = noRoomReason(p.g, p.per, 0, left, largest)
			continue
		}
		if p.g > left {
			p.unplaced = fmt.Sprintf("needs %d GPUs, %d free", p.g, left)
			continue
		}
		left -= p.g
	}

	r := &run{
		largest: largest,
		opts:    t.opts,
		plans:   plans,
		x:       newFreeIndex(caps),
		bound:   NewBound(snap.Nodes),
		budget:  t.opts.MigrationBudget,
		defrag:  t.opts.defragBudget(),
		prevOf:  make([]int, len(caps)),
	}
	r.keep()
	if err := r.grow(); err != nil {
		return Result{}, err
	}
	r.consolidate()

	res := Result{Placement: make(model.Placement, len(plans))}
	entries = 0
	for _, p := range plans {
		entries += len(p.plan)
	}
	// Every job's placement is a piece of one array (see carve).
	out := make([]model.NodeWorkers, entries)
	for _, p := range plans {
		name := p.job.Spec.Name
		if p.unplaced != "" {
			res.Unplaced = append(res.Unplaced, Unplaced{Job: name, GPUs: p.g, Reason: p.unplaced})
			continue
		}
		jp := model.JobPlacement(carve(&out, len(p.plan)))
		for i, s := range p.plan {
			jp[i] = model.NodeWorkers{Node: snap.Nodes[s.node].Name, Workers: s.workers}
		}
		res.Placement[name] = jp
	}
	return res, nil
}

// run is the state of one Place call.
type run struct {
	largest int // GPUs of the largest node
	opts    TopologyOptions
	plans   []*jobPlan
	x       *freeIndex
	bound   Bound
	// budget is what is left of the migration budget.
	budget int
	// defrag is what is left of the defragmentation budget; defragFailed
	// is the smallest G for which freeing a node failed this call, or 0.
	defrag       int
	defragFailed int
	// prevOf[node] is the workers the job being placed had on node
	// before this cycle (see setPrev).
	prevOf []int
	// single, changed and evict serve evictable: the jobs on one node
	// when consolidation started, the jobs re-placed since, and the
	// list it returns, reused.
	single  singles
	changed []*jobPlan
	evict   []*jobPlan
	// takes is freeNode's scratch.
	takes []int
}

func (r *run) setPrev(p *jobPlan) {
	for _, s := range p.prev {
		r.prevOf[s.node] = s.workers
	}
}

func (r *run) clearPrev(p *jobPlan) {
	for _, s := range p.prev {
		r.prevOf[s.node] = 0
	}
}

// keep is step 1: workers stay where they are, up to the job's new count
// and each node's capacity, higher-priority jobs first.
func (r *run) keep() {
	// The plans start as copies of the previous slots, cut from one
	// array; a plan that grows later is copied out of it by append.
	n := 0
	for _, p := range r.plans {
		n += len(p.prev)
	}
	arena := make([]slot, n)
	for _, p := range r.plans {
		if p.unplaced != "" {
			continue
		}
		kept := carve(&arena, len(p.prev))
		copy(kept, p.prev)
		if excess := p.prevTotal - p.w; excess > 0 {
			// Give back from the nodes with the fewest of the job's
			// workers first; among equals, from the last in rank order.
			order := make([]int, len(kept))
			for i := range order {
				order[i] = i
			}
			slices.SortFunc(order, func(a, b int) int {
				if ka, kb := kept[a].workers, kept[b].workers; ka != kb {
					return cmp.Compare(ka, kb)
				}
				return cmp.Compare(b, a)
			})
			for _, i := range order {
				w := min(kept[i].workers, excess)
				kept[i].workers -= w
				if excess -= w; excess == 0 {
					break
				}
			}
		}
		out := kept[:0]
		for _, s := range kept {
			if w := min(s.workers, r.x.free[s.node]/p.per); w > 0 {
				r.x.add(s.node, -w*p.per)
				out = append(out, slot{s.node, w})
			}
		}
		// Nothing here is rolled back: forget it as we go, so the undo
		// log stays one job long.
		r.x.commit()
		p.plan = out
		before := p.job.State.Placement.Workers()
		p.anyway = before == 0 || p.w != before || p.prevTotal != before || !equalSlots(p.plan, p.prev)
	}
}

// grow is step 2.
func (r *run) grow() error {
	x := r.x
	var restarting []*jobPlan
	for _, p := range r.plans {
		if p.unplaced != "" {
			continue
		}
		// Growing jobs fill the nodes they use before anything else
		// takes the room there.
		if need := p.w - p.planned(); need > 0 && len(p.plan) > 0 {
			own := append([]slot(nil), p.plan...)
			slices.SortStableFunc(own, func(a, b slot) int { return cmp.Compare(b.workers, a.workers) })
			for _, s := range own {
				if w := min(x.free[s.node]/p.per, need); w > 0 {
					x.add(s.node, -w*p.per)
					p.plan = addSlot(p.plan, s.node, w)
					need -= w
				}
			}
			x.commit()
		}
		if p.anyway {
			p.key = (p.w - p.planned()) * p.per
			restarting = append(restarting, p)
		}
	}
	// Largest remaining need in GPUs first, then largest job, then
	// largest workers (they need the whole holes), then priority.
	slices.SortFunc(restarting, func(pa, pb *jobPlan) int {
		if na, nb := pa.key, pb.key; na != nb {
			return cmp.Compare(nb, na)
		}
		if pa.g != pb.g {
			return cmp.Compare(pb.g, pa.g)
		}
		if pa.per != pb.per {
			return cmp.Compare(pb.per, pa.per)
		}
		return cmp.Compare(pa.rank, pb.rank)
	})
	for _, p := range restarting {
		need := p.w - p.planned()
		if need*p.per > x.total {
			return fmt.Errorf("place job %s: %d more GPUs needed, %d free after the capacity check", p.job.Spec.Name, need*p.per, x.total)
		}
		// Enough GPUs, but workers of several GPUs may fit nowhere:
		// free a node if the budget allows, else the job waits. (Never
		// for one-GPU workers: their room is x.total.)
		if x.room(p.per) < need && !r.defragment(p, need) {
			r.drop(p)
			continue
		}
		x.commit() // only this job's changes are ever rolled back
		mark := x.mark()
		kept := fill(x, append([]slot(nil), p.plan...), need, p.per)
		if r.opts.KeepResized || len(p.prev) == 0 || len(kept) <= r.bound.MinNodesOf(p.w, p.per) {
			p.plan = kept
			continue
		}
		// Placing it afresh may span fewer nodes.
		r.setPrev(p)
		keptOverlap := overlap(kept, r.prevOf)
		x.rollback(mark)
		for _, s := range p.plan {
			x.add(s.node, s.workers*p.per)
		}
		fresh := r.alone(p, len(p.prev))
		if len(fresh) < len(kept) || (len(fresh) == len(kept) && overlap(fresh, r.prevOf) > keptOverlap) {
			p.plan = rankOrder(fresh, p.prev)
		} else {
			x.rollback(mark)
			p.plan = fill(x, p.plan, need, p.per)
		}
		r.clearPrev(p)
	}
	x.commit()
	return nil
}

// fill adds need workers of per GPUs each to plan on the fewest nodes:
// the node that fits the rest most tightly, else the one with the most
// free GPUs. It may change plan's entries. The caller checks that the
// free GPUs hold need such workers (room); should they not, the plan
// comes back short, which Check reports.
func fill(x *freeIndex, plan []slot, need, per int) []slot {
	for need > 0 {
		i := x.tightest(need * per)
		if i < 0 {
			i = x.largest()
		}
		if i < 0 || x.free[i] < per {
			return plan
		}
		w := min(x.free[i]/per, need)
		x.add(i, -w*per)
		plan = addSlot(plan, i, w)
		need -= w
	}
	return plan
}

// consolidate is step 3.
func (r *run) consolidate() {
	if r.budget <= 0 {
		return
	}
	var cands []*jobPlan
	for _, p := range r.plans {
		if p.unplaced == "" && !p.anyway {
			if p.key = len(p.plan) - r.bound.MinNodesOf(p.w, p.per); p.key > 0 {
				cands = append(cands, p)
			}
		}
	}
	// The most spread first, then by priority.
	slices.SortFunc(cands, func(ca, cb *jobPlan) int {
		if ea, eb := ca.key, cb.key; ea != eb {
			return cmp.Compare(eb, ea)
		}
		return cmp.Compare(ca.rank, cb.rank)
	})
	if len(cands) == 0 {
		return
	}
	r.indexSingles(len(r.prevOf))
	for _, p := range cands {
		if r.budget <= 0 {
			break
		}
		r.improve(p)
	}
	r.x.commit()
}

// improve re-places p, an untouched job, onto fewer nodes if that pays,
// alone or by swapping places with a job that runs on one node.
func (r *run) improve(p *jobPlan) {
	x := r.x
	span := len(p.plan)
	mark := x.mark()
	for _, s := range p.plan {
		x.add(s.node, s.workers*p.per)
	}
	released := x.mark()
	r.setPrev(p)
	defer r.clearPrev(p)
	if k := x.fewest(p.w, p.per); k >= 0 && k < span {
		out := r.alone(p, span-1)
		m := moves(p, out)
		if len(out) < span && m <= r.budget && r.pays(p, span, len(out), 0) {
			p.plan = rankOrder(out, p.prev)
			r.replaced(p)
			r.budget -= m
			x.commit()
			return
		}
		x.rollback(released)
	}
	if r.swap(p, span) {
		x.commit()
		return
	}
	x.rollback(mark)
}

// alone places p, released from x, onto the fewest nodes the free GPUs
// allow, keeping as many workers where they were as it can: it tries
// keeping the job on its best 0, 1, ..., maxBase previous nodes and takes
// the try with the fewest nodes, then the most workers kept. The
// placement it returns is applied to x. prevOf must be set for p.
func (r *run) alone(p *jobPlan, maxBase int) []slot {
	x := r.x
	base := make([]int, len(p.prev))
	for i, s := range p.prev {
		base[i] = s.node
	}
	slices.SortStableFunc(base, func(na, nb int) int {
		oa, ob := min(r.prevOf[na], x.free[na]/p.per), min(r.prevOf[nb], x.free[nb]/p.per)
		if oa != ob {
			return cmp.Compare(ob, oa)
		}
		return cmp.Compare(x.free[nb], x.free[na])
	})
	bestT, bestNodes, bestOverlap := 0, math.MaxInt, -1
	for tk := 0; tk <= min(len(base), maxBase); tk++ {
		m := x.mark()
		out := tryPlace(x, base[:tk], r.prevOf, p.w, p.per)
		ov := overlap(out, r.prevOf)
		// Among equals the later try wins: it keeps more previous nodes.
		if len(out) < bestNodes || (len(out) == bestNodes && ov >= bestOverlap) {
			bestT, bestNodes, bestOverlap = tk, len(out), ov
		}
		x.rollback(m)
	}
	return tryPlace(x, base[:bestT], r.prevOf, p.w, p.per)
}

// swap makes room for p, released from x, on one of its previous nodes by
// moving a job that runs only there to a single other node, often one p
// leaves: two jobs restart so that p spans fewer nodes and the other no
// more. The two nodes where p had most workers are tried.
func (r *run) swap(p *jobPlan, span int) bool {
	x := r.x
	targets := make([]int, 0, len(p.prev))
	for _, s := range p.prev {
		targets = append(targets, s.node)
	}
	slices.SortStableFunc(targets, func(a, b int) int { return cmp.Compare(r.prevOf[b], r.prevOf[a]) })
	for _, tn := range targets[:min(2, len(targets))] {
		want := min(p.w, x.cap[tn]/p.per)
		room := x.free[tn] / p.per
		if room >= want {
			continue
		}
		for _, q := range r.evictable(p, tn, want*p.per-x.free[tn]) {
			w := q.plan[0].workers
			m := x.mark()
			x.add(tn, w*q.per)
			x.add(tn, -want*p.per)
			out := fill(x, []slot{{tn, want}}, p.w-want, p.per)
			if len(out) >= span || sumSlots(out) < p.w {
				// Every q leaves the same room on tn.
				x.rollback(m)
				break
			}
			dest := x.tightest(w * q.per)
			if dest < 0 {
				x.rollback(m)
				continue
			}
			x.add(dest, -w*q.per)
			moved := []slot{{dest, w}}
			cost, charged := 0.0, moves(p, out)
			if !q.anyway {
				cost, charged = r.opts.RestartCost, charged+moves(q, moved)
			}
			if charged <= r.budget && r.pays(p, span, len(out), cost) {
				p.plan = rankOrder(out, p.prev)
				q.plan = moved
				r.replaced(p)
				r.replaced(q)
				r.budget -= charged
				return true
			}
			x.rollback(m)
		}
	}
	return false
}

// evictable lists the jobs other than p that run only on node, with at
// least need GPUs there: those that restart anyway first, then the
// smallest in GPUs, then the lowest priority. The order is total (ranks are
// unique), so it does not depend on the order candidates are found in.
func (r *run) evictable(p *jobPlan, node, need int) []*jobPlan {
	out := r.evict[:0]
	ok := func(q *jobPlan) bool {
		return q != p && q.unplaced == "" && len(q.plan) == 1 && q.plan[0].node == node && q.plan[0].workers*q.per >= need
	}
	for _, q := range r.single.on(node) {
		if ok(q) {
			out = append(out, q)
		}
	}
	// Jobs re-placed during consolidation, unless found above already.
	for _, q := range r.changed {
		if q.home != node && ok(q) {
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(qa, qb *jobPlan) int {
		if c := anywayFirst(qa, qb); c != 0 {
			return c
		}
		if wa, wb := qa.plan[0].workers*qa.per, qb.plan[0].workers*qb.per; wa != wb {
			return cmp.Compare(wa, wb)
		}
		return cmp.Compare(qb.rank, qa.rank)
	})
	r.evict = out
	return out
}

// singles lists, per node, the jobs that ran only on that node when
// consolidation started, so evictable does not scan every job.
type singles struct {
	start []int // the jobs on node i are jobs[start[i]:start[i+1]]
	jobs  []*jobPlan
}

// indexSingles fills r.single and sets every plan's home.
func (r *run) indexSingles(nodes int) {
	start := make([]int, nodes+1)
	n := 0
	for _, p := range r.plans {
		p.home = -1
		if p.unplaced == "" && len(p.plan) == 1 {
			p.home = p.plan[0].node
			start[p.home+1]++
			n++
		}
	}
	for i := range nodes {
		start[i+1] += start[i]
	}
	jobs := make([]*jobPlan, n)
	next := append([]int(nil), start[:nodes]...)
	for _, p := range r.plans {
		if p.home >= 0 {
			jobs[next[p.home]] = p
			next[p.home]++
		}
	}
	r.single = singles{start: start, jobs: jobs}
}

func (s singles) on(node int) []*jobPlan { return s.jobs[s.start[node]:s.start[node+1]] }

// replaced records that consolidation gave p a new plan.
func (r *run) replaced(p *jobPlan) {
	if !p.changed {
		p.changed = true
		r.changed = append(r.changed, p)
	}
}

// pays reports whether moving the untouched job p from span nodes to
// fewer saves more time than its restart plus other, what the move costs
// other jobs.
func (r *run) pays(p *jobPlan, span, fewer int, other float64) bool {
	cost := r.opts.RestartCost + other
	if cost == 0 {
		return true
	}
	rem := p.job.Est.RemainingSeconds
	if rem < 0 {
		// Unknown: a training job outlasts a restart or two by far.
		return true
	}
	if s := p.job.Est.SpeedupAt(p.g); s > 0 {
		rem /= s
	}
	slow := func(n int) float64 { return 1 + r.opts.NodePenalty*float64(min(n-1, 1)) }
	return rem*(1-slow(fewer)/slow(span)) > cost
}

// tryPlace places g workers of per GPUs each: first on the base nodes
// where the job's workers already are, then topping those up, then on the
// fewest other nodes. It changes x; the caller rolls back.
func tryPlace(x *freeIndex, base []int, prevOf []int, g, per int) []slot {
	var out []slot
	need := g
	for _, n := range base {
		if w := min(prevOf[n], x.free[n]/per, need); w > 0 {
			x.add(n, -w*per)
			out = addSlot(out, n, w)
			need -= w
		}
	}
	for _, n := range base {
		if w := min(x.free[n]/per, need); w > 0 {
			x.add(n, -w*per)
			out = addSlot(out, n, w)
			need -= w
		}
	}
	return fill(x, out, need, per)
}

// moves counts the workers of p that change node going from its previous
// placement to out, the way the scheduler counts migrations.
func moves(p *jobPlan, out []slot) int {
	if p.prevTotal == 0 || p.w == 0 {
		return 0
	}
	// p.prev has one slot per node, and both are a few slots long.
	ov := 0
	for _, s := range out {
		for _, ps := range p.prev {
			if ps.node == s.node {
				ov += min(s.workers, ps.workers)
				break
			}
		}
	}
	return min(p.w, p.prevTotal) - ov
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
// The slots are appended to arena, which must have room for one per
// entry of p; it returns them, capped, and the arena after them.
func mergeSlots(arena []slot, p model.JobPlacement, pos map[string]int) (out, rest []slot) {
	out = arena[len(arena):]
	for _, nw := range p {
		i, ok := pos[nw.Node]
		if !ok || nw.Workers <= 0 {
			continue
		}
		out = addSlot(out, i, nw.Workers)
	}
	return slices.Clip(out), arena[:len(arena)+len(out)]
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

// drop makes p, which cannot be placed, wait: the workers it kept are
// released, and the reason says how the free GPUs fall short.
func (r *run) drop(p *jobPlan) {
	x := r.x
	for _, s := range p.plan {
		x.add(s.node, s.workers*p.per)
	}
	x.commit()
	p.plan = nil
	p.unplaced = noRoomReason(p.g, p.per, x.room(p.per), x.total, r.largest)
}

// defragTargets is how many candidate nodes defragment weighs for each
// node it frees: the nodes closest to holding a worker come first, and
// weighing them all would cost a scan of the cluster per move.
const defragTargets = 16

// defragment makes room for need more workers of p when the free GPUs
// would hold them in total but not in pieces of p.per: it frees room for
// one such worker at a time on a node partly used by jobs with smaller
// workers, moving those workers to other nodes, until p fits. It reports
// whether p fits now; if not, nothing moved. Each step takes the node
// whose freeing costs least (see cheaper), among the defragTargets with
// the most free GPUs below p.per, and all steps of a cycle together move
// at most DefragBudget workers. A G for which this fails is not tried
// again in the same call, nor any larger G: the free GPUs only shrink
// as the cycle goes on.
func (r *run) defragment(p *jobPlan, need int) bool {
	x := r.x
	if r.defrag <= 0 || (r.defragFailed > 0 && p.per >= r.defragFailed) {
		return false
	}
	x.commit()
	mark := x.mark()
	on := r.jobsByNode()
	var saved []savedPlan
	budget := r.defrag
	for x.room(p.per) < need {
		best, bestCost := -1, defragCost{}
		tried := 0
		for f := p.per - 1; f >= 1 && tried < defragTargets; f-- {
			x.each(f, func(t int) bool {
				if x.cap[t] < p.per {
					return true
				}
				tried++
				if c, ok := r.freeNode(p, t, on, budget, nil); ok && (best < 0 || c.less(bestCost)) {
					best, bestCost = t, c
				}
				return tried < defragTargets
			})
		}
		if best < 0 {
			for _, sp := range saved {
				sp.q.plan, sp.q.anyway = sp.plan, sp.anyway
			}
			x.rollback(mark)
			if r.defragFailed == 0 || p.per < r.defragFailed {
				r.defragFailed = p.per
			}
			return false
		}
		r.freeNode(p, best, on, budget, &saved)
		budget -= bestCost.workers
	}
	r.defrag = budget
	x.commit()
	return true
}

// defragCost is what freeing a node costs: jobs that would otherwise run
// untouched and now restart, then workers moved.
type defragCost struct{ restarts, workers int }

func (c defragCost) less(d defragCost) bool {
	if c.restarts != d.restarts {
		return c.restarts < d.restarts
	}
	return c.workers < d.workers
}

// savedPlan is a job's plan before defragment moved its workers, to put
// back if defragment fails.
type savedPlan struct {
	q      *jobPlan
	plan   []slot
	anyway bool
}

// freeNode frees p.per GPUs on node t by moving workers of jobs with
// smaller workers than p's from t to other nodes: workers of jobs that
// restart anyway first, then those of the largest workers (fewer moves),
// then those of lower priority; each goes to a node its job already uses
// if one has room, else to the node that fits it most tightly. It fails
// if that needs more than budget workers, if the movers find no room,
// or if the room for p's workers does not grow. With saved nil it only
// weighs the move (x is rolled back); otherwise it applies it to the
// plans and to on, appending each moved job's old plan to *saved once.
func (r *run) freeNode(p *jobPlan, t int, on *byNode, budget int, saved *[]savedPlan) (defragCost, bool) {
	x := r.x
	deficit := p.per - x.free[t]
	movers := r.evict[:0]
	for _, q := range on.at(t) {
		if q != p && q.unplaced == "" && q.per < p.per && workersOn(q.plan, t) > 0 && !slices.Contains(movers, q) {
			movers = append(movers, q)
		}
	}
	slices.SortFunc(movers, func(qa, qb *jobPlan) int {
		if c := anywayFirst(qa, qb); c != 0 {
			return c
		}
		if qa.per != qb.per {
			return cmp.Compare(qb.per, qa.per)
		}
		return cmp.Compare(qb.rank, qa.rank)
	})
	r.evict = movers
	var cost defragCost
	takes := r.takes[:0] // workers each mover gives up on t
	for freed := 0; freed < deficit && len(takes) < len(movers); {
		q := movers[len(takes)]
		k := min(workersOn(q.plan, t), (deficit-freed+q.per-1)/q.per)
		takes = append(takes, k)
		freed += k * q.per
		cost.workers += k
		if !q.anyway {
			cost.restarts++
		}
	}
	r.takes = takes
	freed := 0
	for i, k := range takes {
		freed += k * movers[i].per
	}
	if freed < deficit || cost.workers > budget {
		return cost, false
	}
	mark := x.mark()
	before := x.room(p.per)
	// t takes none of the movers: block its free GPUs while they go.
	ft := x.free[t]
	x.add(t, -ft)
	dests := make([][]slot, len(takes))
	for i, k := range takes {
		q := movers[i]
		var d []slot
		for _, s := range q.plan {
			if w := min(x.free[s.node]/q.per, k); s.node != t && w > 0 {
				x.add(s.node, -w*q.per)
				d = append(d, slot{s.node, w})
				k -= w
			}
		}
		if x.room(q.per) < k {
			x.rollback(mark)
			return cost, false
		}
		dests[i] = fill(x, d, k, q.per)
	}
	x.add(t, ft+freed)
	if x.room(p.per) <= before {
		x.rollback(mark)
		return cost, false
	}
	if saved == nil {
		x.rollback(mark)
		return cost, true
	}
	for i, k := range takes {
		q := movers[i]
		if !slices.ContainsFunc(*saved, func(sp savedPlan) bool { return sp.q == q }) {
			*saved = append(*saved, savedPlan{q: q, plan: q.plan, anyway: q.anyway})
		}
		q.plan = removeWorkers(q.plan, t, k)
		for _, s := range dests[i] {
			if workersOn(q.plan, s.node) == 0 {
				on.add(s.node, q)
			}
			q.plan = addSlot(q.plan, s.node, s.workers)
		}
		q.anyway = true
	}
	return cost, true
}

// byNode lists, per node, the jobs with workers there when defragment
// started, and those it moved there since; a listed job may have left
// the node since (callers check its plan) or be listed twice.
type byNode struct {
	start []int // the jobs on node i are jobs[start[i]:start[i+1]]
	jobs  []*jobPlan
	extra map[int][]*jobPlan
}

// jobsByNode indexes the placed plans by node.
func (r *run) jobsByNode() *byNode {
	nodes := len(r.prevOf)
	start := make([]int, nodes+1)
	for _, p := range r.plans {
		for _, s := range p.plan {
			start[s.node+1]++
		}
	}
	for i := range nodes {
		start[i+1] += start[i]
	}
	jobs := make([]*jobPlan, start[nodes])
	next := append([]int(nil), start[:nodes]...)
	for _, p := range r.plans {
		for _, s := range p.plan {
			jobs[next[s.node]] = p
			next[s.node]++
		}
	}
	return &byNode{start: start, jobs: jobs}
}

func (b *byNode) at(node int) []*jobPlan {
	base := b.jobs[b.start[node]:b.start[node+1]]
	if extra := b.extra[node]; len(extra) > 0 {
		return append(slices.Clip(base), extra...)
	}
	return base
}

func (b *byNode) add(node int, p *jobPlan) {
	if b.extra == nil {
		b.extra = map[int][]*jobPlan{}
	}
	b.extra[node] = append(b.extra[node], p)
}

// workersOn returns the workers plan has on node.
func workersOn(plan []slot, node int) int {
	for _, s := range plan {
		if s.node == node {
			return s.workers
		}
	}
	return 0
}

// removeWorkers returns a copy of plan with k fewer workers on node, the
// node dropped if none are left; plan itself is left alone, as a saved
// copy may hold it.
func removeWorkers(plan []slot, node, k int) []slot {
	out := make([]slot, 0, len(plan))
	for _, s := range plan {
		if s.node == node {
			s.workers -= k
		}
		if s.workers > 0 {
			out = append(out, s)
		}
	}
	return out
}

// anywayFirst orders a job that restarts this cycle anyway before one
// that would not: moving it costs no extra restart.
func anywayFirst(qa, qb *jobPlan) int {
	switch {
	case qa.anyway == qb.anyway:
		return 0
	case qa.anyway:
		return -1
	}
	return 1
}
