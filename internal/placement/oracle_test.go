package placement

// The placers as they were before issue 28 made them incremental
// (commit 87715a2), kept as a test oracle: TestPlacersMatchOracle runs
// them and the current placers on the same random inputs and requires the
// same placements. Only the identifiers are renamed (an "old" prefix);
// the logic is not to be changed.

import (
	"fmt"
	"math"
	"math/bits"
	"sort"

	"github.com/vodascheduler/voda/internal/model"
)

// ---- topology.go at 87715a2

// oldTopology places each job on as few nodes as it can while moving as few
// workers as it can. In order:
//
//  1. Keep: every job keeps its workers where they are, up to its new
//     count and its nodes' capacity, higher priority first. A shrinking
//     job gives workers back from the nodes where it has the fewest, so
//     it gathers onto fewer nodes.
//  2. Grow: a growing job first fills the free GPUs of nodes it already
//     uses. Then every job that restarts this cycle anyway (it starts,
//     was resized, or lost workers with a node), largest first, gets its
//     remaining workers on the fewest nodes: the node that oldFits them most
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
// Ties go to the allocation's priority order and to the lower node
// index, so the same input always gives the same placement.
type oldTopology struct {
	opts TopologyOptions
}

// oldSlot is a number of one job's workers on one node, the node given by
// its position in the snapshot.
type oldSlot struct{ node, workers int }

type oldJobPlan struct {
	job  *model.Job
	rank int // position in the priority order
	g    int // oldAllocated GPUs
	// prev is the job's placement before this cycle on known nodes, one
	// oldSlot per node, in rank order.
	prev      []oldSlot
	prevTotal int
	plan      []oldSlot
	// anyway says the job restarts this cycle whatever its placement:
	// it starts, is resized or lost workers.
	anyway bool
	// unplaced says why the job could not be placed, if it could not.
	unplaced string
}

func (p *oldJobPlan) planned() int { return oldSumSlots(p.plan) }

// Place implements Placer.
func (t *oldTopology) Place(snap *model.Snapshot, alloc model.Allocation) (Result, error) {
	pos := make(map[string]int, len(snap.Nodes))
	caps := make([]int, len(snap.Nodes))
	for i, n := range snap.Nodes {
		pos[n.Name] = i
		caps[i] = n.GPUs
	}
	jobs, err := oldAllocatedJobs(snap, alloc)
	if err != nil {
		return Result{}, err
	}
	plans := make([]*oldJobPlan, len(jobs))
	for i, a := range jobs {
		p := &oldJobPlan{job: a.job, rank: i, g: a.gpus, prev: oldMergeSlots(a.job.State.Placement, pos)}
		p.prevTotal = oldSumSlots(p.prev)
		plans[i] = p
	}

	// An allocation larger than the cluster (only a broken allocator
	// gives one) leaves the lowest-priority jobs that do not fit out,
	// reported. Everything else oldFits: workers may split over any nodes.
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

	r := &oldRun{
		opts:   t.opts,
		plans:  plans,
		x:      oldNewFreeIndex(caps),
		bound:  oldNewBound(snap.Nodes),
		budget: t.opts.MigrationBudget,
		prevOf: make([]int, len(caps)),
	}
	r.keep()
	if err := r.grow(); err != nil {
		return Result{}, err
	}
	r.consolidate()

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

// oldRun is the state of one Place call.
type oldRun struct {
	opts  TopologyOptions
	plans []*oldJobPlan
	x     *oldFreeIndex
	bound oldBound
	// budget is what is left of the migration budget.
	budget int
	// prevOf[node] is the workers the job being placed had on node
	// before this cycle (see setPrev).
	prevOf []int
}

func (r *oldRun) setPrev(p *oldJobPlan) {
	for _, s := range p.prev {
		r.prevOf[s.node] = s.workers
	}
}

func (r *oldRun) clearPrev(p *oldJobPlan) {
	for _, s := range p.prev {
		r.prevOf[s.node] = 0
	}
}

// keep is step 1: workers stay where they are, up to the job's new count
// and each node's capacity, higher-priority jobs first.
func (r *oldRun) keep() {
	for _, p := range r.plans {
		if p.unplaced != "" {
			continue
		}
		kept := append([]oldSlot(nil), p.prev...)
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
				w := min(kept[i].workers, excess)
				kept[i].workers -= w
				if excess -= w; excess == 0 {
					break
				}
			}
		}
		out := kept[:0]
		for _, s := range kept {
			if w := min(s.workers, r.x.free[s.node]); w > 0 {
				r.x.add(s.node, -w)
				out = append(out, oldSlot{s.node, w})
			}
		}
		p.plan = out
		before := p.job.State.Placement.Workers()
		p.anyway = before == 0 || p.g != before || p.prevTotal != before || !oldEqualSlots(p.plan, p.prev)
	}
	r.x.commit()
}

// grow is step 2.
func (r *oldRun) grow() error {
	x := r.x
	var restarting []*oldJobPlan
	for _, p := range r.plans {
		if p.unplaced != "" {
			continue
		}
		// Growing jobs oldFill the nodes they use before anything else
		// takes the room there.
		if need := p.g - p.planned(); need > 0 && len(p.plan) > 0 {
			own := append([]oldSlot(nil), p.plan...)
			sort.SliceStable(own, func(a, b int) bool { return own[a].workers > own[b].workers })
			for _, s := range own {
				if w := min(x.free[s.node], need); w > 0 {
					x.add(s.node, -w)
					p.plan = oldAddSlot(p.plan, s.node, w)
					need -= w
				}
			}
		}
		if p.anyway {
			restarting = append(restarting, p)
		}
	}
	// Largest remaining need first, then largest job, then priority.
	sort.SliceStable(restarting, func(a, b int) bool {
		pa, pb := restarting[a], restarting[b]
		if na, nb := pa.g-pa.planned(), pb.g-pb.planned(); na != nb {
			return na > nb
		}
		if pa.g != pb.g {
			return pa.g > pb.g
		}
		return pa.rank < pb.rank
	})
	for _, p := range restarting {
		need := p.g - p.planned()
		if need > x.total {
			return fmt.Errorf("place job %s: %d more GPUs needed, %d free after the capacity check", p.job.Spec.Name, need, x.total)
		}
		mark := x.mark()
		kept := oldFill(x, append([]oldSlot(nil), p.plan...), need)
		if r.opts.KeepResized || len(p.prev) == 0 || len(kept) <= r.bound.MinNodes(p.g) {
			p.plan = kept
			continue
		}
		// Placing it afresh may span fewer nodes.
		r.setPrev(p)
		keptOverlap := oldOverlap(kept, r.prevOf)
		x.rollback(mark)
		for _, s := range p.plan {
			x.add(s.node, s.workers)
		}
		fresh := r.alone(p, len(p.prev))
		if len(fresh) < len(kept) || (len(fresh) == len(kept) && oldOverlap(fresh, r.prevOf) > keptOverlap) {
			p.plan = oldRankOrder(fresh, p.prev)
		} else {
			x.rollback(mark)
			p.plan = oldFill(x, p.plan, need)
		}
		r.clearPrev(p)
	}
	x.commit()
	return nil
}

// oldFill adds need workers to plan on the fewest nodes: the node that oldFits
// the rest most tightly, else the one with the most free GPUs. It may
// oldChange plan's entries. The caller checks that enough GPUs are free.
func oldFill(x *oldFreeIndex, plan []oldSlot, need int) []oldSlot {
	for need > 0 {
		i := x.tightest(need)
		if i < 0 {
			i = x.largest()
		}
		w := min(x.free[i], need)
		x.add(i, -w)
		plan = oldAddSlot(plan, i, w)
		need -= w
	}
	return plan
}

// consolidate is step 3.
func (r *oldRun) consolidate() {
	if r.budget <= 0 {
		return
	}
	var cands []*oldJobPlan
	for _, p := range r.plans {
		if p.unplaced == "" && !p.anyway && len(p.plan) > r.bound.MinNodes(p.g) {
			cands = append(cands, p)
		}
	}
	// The most spread first, then by priority.
	sort.SliceStable(cands, func(a, b int) bool {
		ca, cb := cands[a], cands[b]
		ea, eb := len(ca.plan)-r.bound.MinNodes(ca.g), len(cb.plan)-r.bound.MinNodes(cb.g)
		if ea != eb {
			return ea > eb
		}
		return ca.rank < cb.rank
	})
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
func (r *oldRun) improve(p *oldJobPlan) {
	x := r.x
	span := len(p.plan)
	mark := x.mark()
	for _, s := range p.plan {
		x.add(s.node, s.workers)
	}
	released := x.mark()
	r.setPrev(p)
	defer r.clearPrev(p)
	if k := x.fewest(p.g); k >= 0 && k < span {
		out := r.alone(p, span-1)
		m := oldMoves(p, out)
		if len(out) < span && m <= r.budget && r.pays(p, span, len(out), 0) {
			p.plan = oldRankOrder(out, p.prev)
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
func (r *oldRun) alone(p *oldJobPlan, maxBase int) []oldSlot {
	x := r.x
	base := make([]int, len(p.prev))
	for i, s := range p.prev {
		base[i] = s.node
	}
	sort.SliceStable(base, func(a, b int) bool {
		na, nb := base[a], base[b]
		oa, ob := min(r.prevOf[na], x.free[na]), min(r.prevOf[nb], x.free[nb])
		if oa != ob {
			return oa > ob
		}
		return x.free[na] > x.free[nb]
	})
	bestT, bestNodes, bestOverlap := 0, math.MaxInt, -1
	for tk := 0; tk <= min(len(base), maxBase); tk++ {
		m := x.mark()
		out := oldTryPlace(x, base[:tk], r.prevOf, p.g)
		ov := oldOverlap(out, r.prevOf)
		// Among equals the later try wins: it keeps more previous nodes.
		if len(out) < bestNodes || (len(out) == bestNodes && ov >= bestOverlap) {
			bestT, bestNodes, bestOverlap = tk, len(out), ov
		}
		x.rollback(m)
	}
	return oldTryPlace(x, base[:bestT], r.prevOf, p.g)
}

// swap makes room for p, released from x, on one of its previous nodes by
// moving a job that runs only there to a single other node, often one p
// leaves: two jobs restart so that p spans fewer nodes and the other no
// more. The two nodes where p had most workers are tried.
func (r *oldRun) swap(p *oldJobPlan, span int) bool {
	x := r.x
	targets := make([]int, 0, len(p.prev))
	for _, s := range p.prev {
		targets = append(targets, s.node)
	}
	sort.SliceStable(targets, func(a, b int) bool { return r.prevOf[targets[a]] > r.prevOf[targets[b]] })
	for _, tn := range targets[:min(2, len(targets))] {
		want := min(p.g, x.cap[tn])
		room := x.free[tn]
		if room >= want {
			continue
		}
		for _, q := range r.evictable(p, tn, want-room) {
			w := q.plan[0].workers
			m := x.mark()
			x.add(tn, w)
			x.add(tn, -want)
			out := oldFill(x, []oldSlot{{tn, want}}, p.g-want)
			if len(out) >= span {
				// Every q leaves the same room on tn.
				x.rollback(m)
				break
			}
			dest := x.tightest(w)
			if dest < 0 {
				x.rollback(m)
				continue
			}
			x.add(dest, -w)
			moved := []oldSlot{{dest, w}}
			cost, charged := 0.0, oldMoves(p, out)
			if !q.anyway {
				cost, charged = r.opts.RestartCost, charged+oldMoves(q, moved)
			}
			if charged <= r.budget && r.pays(p, span, len(out), cost) {
				p.plan = oldRankOrder(out, p.prev)
				q.plan = moved
				r.budget -= charged
				return true
			}
			x.rollback(m)
		}
	}
	return false
}

// evictable lists the jobs other than p that oldRun only on node, with at
// least need workers there: those that restart anyway first, then the
// smallest, then the lowest priority.
func (r *oldRun) evictable(p *oldJobPlan, node, need int) []*oldJobPlan {
	var out []*oldJobPlan
	for _, q := range r.plans {
		if q != p && q.unplaced == "" && len(q.plan) == 1 && q.plan[0].node == node && q.plan[0].workers >= need {
			out = append(out, q)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		qa, qb := out[a], out[b]
		if qa.anyway != qb.anyway {
			return qa.anyway
		}
		if wa, wb := qa.plan[0].workers, qb.plan[0].workers; wa != wb {
			return wa < wb
		}
		return qa.rank > qb.rank
	})
	return out
}

// pays reports whether moving the untouched job p from span nodes to
// fewer saves more time than its restart plus other, what the move costs
// other jobs.
func (r *oldRun) pays(p *oldJobPlan, span, fewer int, other float64) bool {
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

// oldTryPlace places g workers: first on the base nodes where the job's
// workers already are, then topping those up, then on the fewest other
// nodes. It changes x; the caller rolls back.
func oldTryPlace(x *oldFreeIndex, base []int, prevOf []int, g int) []oldSlot {
	var out []oldSlot
	need := g
	for _, n := range base {
		if w := min(prevOf[n], x.free[n], need); w > 0 {
			x.add(n, -w)
			out = oldAddSlot(out, n, w)
			need -= w
		}
	}
	for _, n := range base {
		if w := min(x.free[n], need); w > 0 {
			x.add(n, -w)
			out = oldAddSlot(out, n, w)
			need -= w
		}
	}
	return oldFill(x, out, need)
}

// oldMoves counts the workers of p that oldChange node going from its previous
// placement to out, the way the scheduler counts migrations.
func oldMoves(p *oldJobPlan, out []oldSlot) int {
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

func oldOverlap(out []oldSlot, prevOf []int) int {
	ov := 0
	for _, s := range out {
		ov += min(s.workers, prevOf[s.node])
	}
	return ov
}

// oldRankOrder puts the nodes the job already used first, in their previous
// rank order, then the new ones in the order they were chosen.
func oldRankOrder(out, prev []oldSlot) []oldSlot {
	ordered := make([]oldSlot, 0, len(out))
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

// oldMergeSlots turns a placement into slots on known nodes, one per node,
// in rank order; workers on unknown nodes are dropped (the node is gone).
func oldMergeSlots(p model.JobPlacement, pos map[string]int) []oldSlot {
	var out []oldSlot
	for _, nw := range p {
		i, ok := pos[nw.Node]
		if !ok || nw.Workers <= 0 {
			continue
		}
		out = oldAddSlot(out, i, nw.Workers)
	}
	return out
}

func oldAddSlot(plan []oldSlot, node, w int) []oldSlot {
	for i := range plan {
		if plan[i].node == node {
			plan[i].workers += w
			return plan
		}
	}
	return append(plan, oldSlot{node, w})
}

func oldSumSlots(p []oldSlot) int {
	n := 0
	for _, s := range p {
		n += s.workers
	}
	return n
}

func oldEqualSlots(a, b []oldSlot) bool {
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

// ---- greedy.go at 87715a2

// oldGreedy keeps a job where it is when its GPU count did not oldChange and its
// nodes still have room; every other job with GPUs is placed from scratch,
// in the allocation's priority order, by repeatedly filling the node with
// the most free GPUs (lowest index on ties). This is what the Pollux
// artifact's baseline policies do; it ignores how many nodes a job spans.
type oldGreedy struct{}

// Place implements Placer.
func (*oldGreedy) Place(snap *model.Snapshot, alloc model.Allocation) (Result, error) {
	free := make([]int, len(snap.Nodes))
	index := make(map[string]int, len(snap.Nodes))
	for i, n := range snap.Nodes {
		free[i] = n.GPUs
		index[n.Name] = i
	}
	jobs, err := oldAllocatedJobs(snap, alloc)
	if err != nil {
		return Result{}, err
	}
	res := Result{Placement: make(model.Placement, len(alloc.GPUs))}
	var pending []string
	// Pass 1: jobs whose count is unchanged stay where they are.
	for _, a := range jobs {
		j, g, name := a.job, a.gpus, a.job.Spec.Name
		cur := j.State.Placement
		if cur.Workers() == g && oldFits(cur, index, free) {
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

// oldFits reports whether every node of p exists and has room for its
// workers.
func oldFits(p model.JobPlacement, index map[string]int, free []int) bool {
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

// ---- freeindex.go at 87715a2

// oldFreeIndex keeps every node's free GPU count, bucketed by that count, so
// the placer finds the node with the most free GPUs, or the one that oldFits
// a need most tightly, in O(largest node + nodes/64) with the lowest node
// position winning ties. Changes can be undone back to a mark, which is
// how consolidation tries a move and takes it back.
type oldFreeIndex struct {
	free  []int
	cap   []int
	total int
	// buckets[f] has bit i set when node i has exactly f free GPUs (f >= 1).
	buckets [][]uint64
	count   []int
	undo    []oldChange
}

type oldChange struct{ node, free int }

func oldNewFreeIndex(caps []int) *oldFreeIndex {
	maxCap := 0
	for _, c := range caps {
		maxCap = max(maxCap, c)
	}
	words := (len(caps) + 63) / 64
	x := &oldFreeIndex{
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
func (x *oldFreeIndex) put(i, f int) {
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

// add changes node i's free count by d, recording the oldChange.
func (x *oldFreeIndex) add(i, d int) {
	if d == 0 {
		return
	}
	x.undo = append(x.undo, oldChange{i, x.free[i]})
	x.put(i, x.free[i]+d)
}

func (x *oldFreeIndex) mark() int { return len(x.undo) }

// rollback undoes every oldChange after mark.
func (x *oldFreeIndex) rollback(mark int) {
	for k := len(x.undo) - 1; k >= mark; k-- {
		c := x.undo[k]
		x.put(c.node, c.free)
	}
	x.undo = x.undo[:mark]
}

// commit forgets the recorded changes.
func (x *oldFreeIndex) commit() { x.undo = x.undo[:0] }

func (x *oldFreeIndex) first(f int) int {
	for w, word := range x.buckets[f] {
		if word != 0 {
			return w*64 + bits.TrailingZeros64(word)
		}
	}
	return -1
}

// largest returns the node with the most free GPUs, or -1 if none has any.
func (x *oldFreeIndex) largest() int {
	for f := len(x.count) - 1; f >= 1; f-- {
		if x.count[f] > 0 {
			return x.first(f)
		}
	}
	return -1
}

// tightest returns the node with the fewest free GPUs that still holds
// need, or -1 if no node does.
func (x *oldFreeIndex) tightest(need int) int {
	for f := max(need, 1); f < len(x.count); f++ {
		if x.count[f] > 0 {
			return x.first(f)
		}
	}
	return -1
}

// fewest returns how few nodes could hold need with the current free
// counts, or -1 if all of them together are too few.
func (x *oldFreeIndex) fewest(need int) int {
	if need <= 0 {
		return 0
	}
	if need > x.total {
		return -1
	}
	nodes := 0
	for f := len(x.count) - 1; f >= 1; f-- {
		c := x.count[f]
		if c == 0 {
			continue
		}
		if c*f >= need {
			return nodes + (need+f-1)/f
		}
		nodes += c
		need -= c * f
	}
	return -1
}

// ---- spread.go at 87715a2

// oldBound answers "how few nodes could hold k workers" for one set of
// nodes: the k workers packed onto the largest nodes first. It ignores
// other jobs, so it is the lower bound a job's span is measured against.
type oldBound struct {
	// prefix[i] is the capacity of the i largest nodes.
	prefix []int
}

// oldNewBound returns the bound for nodes.
func oldNewBound(nodes []model.Node) oldBound {
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
	return oldBound{prefix: prefix}
}

// MinNodes returns the fewest nodes whose capacity adds up to workers: 0
// for no workers, and every node when even all of them are too few.
func (b oldBound) MinNodes(workers int) int {
	if workers <= 0 {
		return 0
	}
	i := sort.SearchInts(b.prefix, workers)
	return min(i, len(b.prefix)-1)
}

// ---- placement.go at 87715a2

// oldJobOrder lists the jobs a placer must consider, each once: alloc.Order,
// then the jobs with GPUs it left out in snapshot order, then any other
// names of alloc.GPUs sorted. The scheduler completes the order before
// placing, but a Placer must place every job with GPUs whatever the order.
func oldJobOrder(snap *model.Snapshot, alloc model.Allocation) []string {
	seen := make(map[string]bool, len(alloc.Order))
	out := make([]string, 0, max(len(alloc.Order), len(alloc.GPUs)))
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, name := range alloc.Order {
		add(name)
	}
	for i := range snap.Jobs {
		if name := snap.Jobs[i].Spec.Name; alloc.GPUs[name] != 0 {
			add(name)
		}
	}
	var rest []string
	for name := range alloc.GPUs {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// oldAllocated is a job with GPUs, in placement order.
type oldAllocated struct {
	job  *model.Job
	gpus int
}

// oldAllocatedJobs lists the jobs of alloc with GPUs in oldJobOrder, each with
// its snapshot entry; a job missing from the snapshot is an error.
func oldAllocatedJobs(snap *model.Snapshot, alloc model.Allocation) ([]oldAllocated, error) {
	jobs := make(map[string]*model.Job, len(snap.Jobs))
	for i := range snap.Jobs {
		jobs[snap.Jobs[i].Spec.Name] = &snap.Jobs[i]
	}
	var out []oldAllocated
	for _, name := range oldJobOrder(snap, alloc) {
		g := alloc.GPUs[name]
		if g <= 0 {
			continue
		}
		j, ok := jobs[name]
		if !ok {
			return nil, fmt.Errorf("place job %s: not in the snapshot", name)
		}
		out = append(out, oldAllocated{job: j, gpus: g})
	}
	return out, nil
}

// ---- placement.go (Check) at 87715a2
// oldCheck verifies a result against the snapshot and allocation: capacity
// never exceeded, every job with GPUs either placed with exactly its count
// or reported unplaced, workers only on known nodes.
func oldCheck(snap *model.Snapshot, alloc model.Allocation, res Result) error {
	// Workers are counted per node name: index maps a name to a slot of
	// used (the last node of that name, should a name repeat).
	index := make(map[string]int, len(snap.Nodes))
	for i, n := range snap.Nodes {
		index[n.Name] = i
	}
	used := make([]int, len(snap.Nodes))
	unplaced := map[string]bool{}
	for _, u := range res.Unplaced {
		unplaced[u.Job] = true
	}
	// Every job with GPUs and every job placed, not only the ordered ones:
	// a job left out of the order must not escape the capacity check.
	names := oldJobOrder(snap, alloc)
	if oldPlacedListed(names, res.Placement) < len(res.Placement) {
		listed := make(map[string]bool, len(names))
		for _, name := range names {
			listed[name] = true
		}
		var extra []string
		for name := range res.Placement {
			if !listed[name] {
				extra = append(extra, name)
			}
		}
		sort.Strings(extra)
		names = append(names, extra...)
	}
	for _, name := range names {
		g := alloc.GPUs[name]
		p, placed := res.Placement[name]
		switch {
		case g == 0 && placed && p.Workers() > 0:
			return fmt.Errorf("job %s: placed %d workers without an allocation", name, p.Workers())
		case g > 0 && unplaced[name]:
			if placed && p.Workers() > 0 {
				return fmt.Errorf("job %s: both placed and unplaced", name)
			}
		case g > 0 && p.Workers() != g:
			return fmt.Errorf("job %s: placed %d workers, allocated %d", name, p.Workers(), g)
		}
		for _, nw := range p {
			i, ok := index[nw.Node]
			if !ok {
				return fmt.Errorf("job %s: unknown node %s", name, nw.Node)
			}
			if nw.Workers <= 0 {
				return fmt.Errorf("job %s: %d workers on node %s", name, nw.Workers, nw.Node)
			}
			used[i] += nw.Workers
		}
	}
	for _, n := range snap.Nodes {
		if u := used[index[n.Name]]; u > n.GPUs {
			return fmt.Errorf("node %s: %d workers on %d GPUs", n.Name, u, n.GPUs)
		}
	}
	return nil
}

// oldPlacedListed counts the jobs of p that names lists; names has no
// repeats, so p has a job names leaves out exactly when the count is
// below len(p).
func oldPlacedListed(names []string, p model.Placement) int {
	n := 0
	for _, name := range names {
		if _, ok := p[name]; ok {
			n++
		}
	}
	return n
}
