package placement

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/model"
)

// oracleWorld is a cluster evolving over scheduling cycles for the
// differential test: nodes join, leave and shrink, jobs arrive, finish,
// grow and shrink, and each cycle's placement becomes the next cycle's
// current placement.
type oracleWorld struct {
	rng      *rand.Rand
	snap     *model.Snapshot
	nodeSeq  int
	jobSeq   int
	sizes    []int // node sizes to draw from
	maxes    []int // job maximum sizes to draw from
	overfill bool  // allocations may exceed the cluster
}

func newOracleWorld(rng *rand.Rand, nodes, jobs int) *oracleWorld {
	w := &oracleWorld{rng: rng, snap: &model.Snapshot{Now: time.Unix(1e6, 0)}}
	switch rng.IntN(4) {
	case 0:
		w.sizes = []int{8}
	case 1:
		w.sizes = []int{1, 2, 4, 8}
	case 2:
		w.sizes = []int{4, 8, 8, 16}
	default:
		w.sizes = []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	}
	w.maxes = [][]int{{1, 2, 4, 8}, {1, 2, 4, 8, 16}, {1, 1, 2, 3, 5, 12, 32}}[rng.IntN(3)]
	w.overfill = rng.IntN(10) == 0
	for range nodes {
		w.addNode()
	}
	for range jobs {
		w.addJob()
	}
	w.scatter()
	return w
}

func (w *oracleWorld) addNode() {
	w.snap.Nodes = append(w.snap.Nodes, model.Node{Name: fmt.Sprintf("n%05d", w.nodeSeq),
		GPUs: w.sizes[w.rng.IntN(len(w.sizes))], Index: w.nodeSeq})
	w.nodeSeq++
}

func (w *oracleWorld) addJob() {
	maxW := w.maxes[w.rng.IntN(len(w.maxes))]
	j := model.Job{
		Spec: model.JobSpec{Name: fmt.Sprintf("j%06d", w.jobSeq), MinWorkers: 1, MaxWorkers: maxW,
			RequestedWorkers: 1, SubmitTime: time.Unix(int64(w.jobSeq), 0)},
		State: model.JobState{Status: model.StatusWaiting},
		Est:   model.Estimates{RemainingSeconds: []float64{-1, 20, 600, 7200, 1e5}[w.rng.IntN(5)]},
	}
	if w.rng.IntN(3) == 0 {
		// A sublinear speedup curve, so pays divides by something else
		// than the worker count.
		j.Est.Speedup = []float64{0, 1}
		for k := 2; k <= maxW; k++ {
			j.Est.Speedup = append(j.Est.Speedup, j.Est.Speedup[k-1]+0.5+w.rng.Float64()/2)
		}
	}
	w.snap.Jobs = append(w.snap.Jobs, j)
	w.jobSeq++
}

// scatter gives some jobs a fragmented current placement: chunks of
// workers on random nodes with room, in random rank order.
func (w *oracleWorld) scatter() {
	free := make([]int, len(w.snap.Nodes))
	for i, n := range w.snap.Nodes {
		free[i] = n.GPUs
	}
	left := w.snap.TotalGPUs()
	fill := w.rng.Float64()
	for i := range w.snap.Jobs {
		j := &w.snap.Jobs[i]
		g := 1 + w.rng.IntN(j.Spec.MaxWorkers)
		if w.rng.Float64() > fill || g > left {
			continue
		}
		left -= g
		var p model.JobPlacement
		for rest := g; rest > 0; {
			k := w.rng.IntN(len(free))
			if free[k] == 0 {
				continue
			}
			n := 1 + w.rng.IntN(min(rest, free[k]))
			free[k] -= n
			rest -= n
			// A node may repeat in a placement; placers merge it.
			p = append(p, model.NodeWorkers{Node: w.snap.Nodes[k].Name, Workers: n})
		}
		j.State = model.JobState{Status: model.StatusRunning, GPUs: g, Placement: p}
	}
}

// churn changes the cluster and the job set between cycles.
func (w *oracleWorld) churn() {
	r := w.rng
	if r.IntN(3) == 0 && len(w.snap.Nodes) > 1 {
		// Nodes leave; their workers stay in the jobs' placements for
		// the placer to re-place.
		for range 1 + r.IntN(1+len(w.snap.Nodes)/20) {
			k := r.IntN(len(w.snap.Nodes))
			w.snap.Nodes = append(w.snap.Nodes[:k], w.snap.Nodes[k+1:]...)
		}
	}
	if r.IntN(4) == 0 && len(w.snap.Nodes) > 0 {
		// A node shrinks below what it holds.
		k := r.IntN(len(w.snap.Nodes))
		w.snap.Nodes[k].GPUs = r.IntN(w.snap.Nodes[k].GPUs + 1)
	}
	if r.IntN(3) == 0 {
		for range 1 + r.IntN(1+len(w.snap.Nodes)/20) {
			w.addNode()
		}
	}
	// Jobs finish and arrive.
	kept := w.snap.Jobs[:0]
	for _, j := range w.snap.Jobs {
		if r.IntN(12) > 0 {
			j.Est.RemainingSeconds = max(-1, j.Est.RemainingSeconds-60)
			kept = append(kept, j)
		}
	}
	w.snap.Jobs = kept
	for range r.IntN(2 + len(w.snap.Jobs)/8) {
		w.addJob()
	}
	if r.IntN(30) == 0 && len(w.snap.Jobs) > 0 {
		// A repeated name, which the core never sends but a Placer
		// must survive: the last job of a name stands for it.
		j := w.snap.Jobs[r.IntN(len(w.snap.Jobs))]
		j.State = model.JobState{Status: model.StatusWaiting}
		w.snap.Jobs = append(w.snap.Jobs, j)
	}
}

// allocation draws this cycle's allocation: most jobs keep their count,
// some grow, shrink, stop or start, in a priority order that is mostly
// arrival order with some jobs moved ahead.
func (w *oracleWorld) allocation() model.Allocation {
	r := w.rng
	jobs := w.snap.Jobs
	order := make([]string, len(jobs))
	for i := range jobs {
		order[i] = jobs[i].Spec.Name
	}
	for range len(order) / 4 {
		a, b := r.IntN(len(order)), r.IntN(len(order))
		order[a], order[b] = order[b], order[a]
	}
	if r.IntN(5) == 0 && len(order) > 0 {
		// An incomplete order: the placer completes it.
		order = order[:r.IntN(len(order))]
	}
	alloc := model.Allocation{GPUs: make(map[string]int, len(jobs)), Order: order}
	left := w.snap.TotalGPUs()
	if w.overfill {
		left += left/4 + 1
	}
	for _, i := range r.Perm(len(jobs)) {
		j := &jobs[i]
		g := j.State.GPUs
		switch k := r.IntN(20); {
		case g > 0 && k == 0:
			g = 0
		case g > 0 && k < 4, g == 0 && k < 8:
			g = 1 + r.IntN(j.Spec.MaxWorkers)
		}
		if g > left {
			g = 0
		}
		left -= g
		if g > 0 || r.IntN(8) == 0 {
			alloc.GPUs[j.Spec.Name] = g
		}
	}
	if r.IntN(10) == 0 {
		// Jobs missing from the snapshot: harmless without GPUs, an
		// error with some, listed in the order or not.
		for k := range 1 + r.IntN(3) {
			name := fmt.Sprintf("ghost%d", r.IntN(4))
			alloc.GPUs[name] = max(0, r.IntN(6)-4)
			if k%2 == 0 {
				alloc.Order = append(alloc.Order, name)
			}
		}
	}
	return alloc
}

// apply makes res the jobs' current placement.
func (w *oracleWorld) apply(res Result) {
	for i := range w.snap.Jobs {
		j := &w.snap.Jobs[i]
		p := res.Placement[j.Spec.Name].Clone()
		j.State.Placement, j.State.GPUs = p, p.Workers()
		j.State.Status = model.StatusWaiting
		if len(p) > 0 {
			j.State.Status = model.StatusRunning
		}
	}
}

// TestPlacersMatchOracle runs every built-in placer and its implementation
// from before issue 28 (oracle_test.go) on random clusters of 1 to about
// 1,000 nodes over several consecutive cycles and requires the same
// result, error and all. The current placers are reused across every case,
// so any state they keep between calls is exercised too.
func TestPlacersMatchOracle(t *testing.T) {
	topo := func(o TopologyOptions) *Topology {
		p, err := NewTopology(o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	d := DefaultTopologyOptions()
	configs := []TopologyOptions{
		d,
		{MigrationBudget: 4, RestartCost: d.RestartCost, NodePenalty: d.NodePenalty},
		{MigrationBudget: 1000, RestartCost: 0, NodePenalty: d.NodePenalty},
		{MigrationBudget: 64, RestartCost: 5, NodePenalty: 2},
		{KeepResized: true, RestartCost: d.RestartCost, NodePenalty: d.NodePenalty},
	}
	type pair struct {
		name string
		cur  Placer
		old  func(*model.Snapshot, model.Allocation) (Result, error)
	}
	var pairs []pair
	for i, o := range configs {
		pairs = append(pairs, pair{fmt.Sprintf("topology%d", i), topo(o), (&oldTopology{opts: o}).Place})
	}
	pairs = append(pairs, pair{"greedy", NewGreedy(), (&oldGreedy{}).Place})

	// run compares every pair over cycles of w, the first with first
	// as the allocation if given, feeding one placer's result back.
	run := func(c int, w *oracleWorld, cycles int, first model.Allocation) {
		nodes, jobs := len(w.snap.Nodes), len(w.snap.Jobs)
		feed := pairs[w.rng.IntN(len(pairs))].name
		for cycle := range cycles {
			alloc := first
			if cycle > 0 {
				w.churn()
			}
			if cycle > 0 || alloc.GPUs == nil {
				alloc = w.allocation()
			}
			var fed *Result
			for _, pr := range pairs {
				want, wantErr := pr.old(w.snap, alloc)
				got, gotErr := pr.cur.Place(w.snap, alloc)
				if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
					t.Fatalf("case %d (%d nodes, %d jobs) cycle %d, %s: error %v, oracle %v", c, nodes, jobs, cycle, pr.name, gotErr, wantErr)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("case %d (%d nodes, %d jobs) cycle %d, %s: placement differs from the oracle (-oracle,+current):\n%s",
						c, nodes, jobs, cycle, pr.name, diff)
				}
				if pr.name == feed {
					fed = &got
				}
			}
			w.apply(*fed)
		}
	}

	rng := rand.New(rand.NewPCG(20261127, 28))
	// Node counts from tiny to about 1,000; the large ones are few, as
	// the old placers are slow there.
	sizes := []struct{ cases, maxNodes int }{{150, 4}, {150, 40}, {40, 300}, {4, 1000}}
	c := 0
	for _, sz := range sizes {
		for range sz.cases {
			nodes := 1 + rng.IntN(sz.maxNodes)
			if sz.maxNodes == 1000 {
				nodes = 700 + rng.IntN(301)
			}
			jobs := 1 + rng.IntN(1+nodes*(1+rng.IntN(6)))
			run(c, newOracleWorld(rng, nodes, jobs), 1+rng.IntN(5), model.Allocation{})
			c++
		}
	}
	// The benchmark's full, fragmented clusters, where consolidation and
	// its swaps have the most to do.
	for _, nodes := range []int{100, 1000} {
		snap, alloc := benchCase(nodes, 8, 4*nodes, uint64(nodes))
		w := &oracleWorld{rng: rng, snap: snap, nodeSeq: nodes, jobSeq: len(snap.Jobs),
			sizes: []int{8}, maxes: []int{1, 2, 4, 8, 16}}
		run(c, w, 3, alloc)
		c++
	}
}

// TestCheckMatchesOracle compares Check with its version from before
// issue 28 on valid results and on results broken in every way Check
// knows, one or several at a time, so that the job an error names (the
// first in priority order) is compared too.
func TestCheckMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261127, 4))
	placers := []Placer{NewGreedy(), topology(t, DefaultTopologyOptions())}
	breaks := []func(snap *model.Snapshot, alloc model.Allocation, res *Result){
		func(_ *model.Snapshot, _ model.Allocation, res *Result) { // a worker more or less
			if p := pick(rng, res.Placement); len(p) > 0 {
				p[rng.IntN(len(p))].Workers += []int{-1, 1}[rng.IntN(2)]
			}
		},
		func(_ *model.Snapshot, _ model.Allocation, res *Result) { // a node that is gone
			if p := pick(rng, res.Placement); len(p) > 0 {
				p[rng.IntN(len(p))].Node = "gone"
			}
		},
		func(_ *model.Snapshot, _ model.Allocation, res *Result) { // no or negative workers
			if p := pick(rng, res.Placement); len(p) > 0 {
				p[rng.IntN(len(p))].Workers = -rng.IntN(2)
			}
		},
		func(snap *model.Snapshot, _ model.Allocation, res *Result) { // workers moved onto another node
			if p := pick(rng, res.Placement); len(p) > 0 && len(snap.Nodes) > 0 {
				p[rng.IntN(len(p))].Node = snap.Nodes[rng.IntN(len(snap.Nodes))].Name
			}
		},
		func(snap *model.Snapshot, alloc model.Allocation, res *Result) { // a job placed without GPUs
			if len(snap.Jobs) > 0 && len(snap.Nodes) > 0 {
				j := snap.Jobs[rng.IntN(len(snap.Jobs))].Spec.Name
				if alloc.GPUs[j] == 0 {
					res.Placement[j] = model.JobPlacement{{Node: snap.Nodes[0].Name, Workers: 1}}
				}
			}
		},
		func(snap *model.Snapshot, _ model.Allocation, res *Result) { // a stranger placed, empty or not
			res.Placement[fmt.Sprintf("stranger%d", rng.IntN(3))] = model.JobPlacement{{Node: snap.Nodes[0].Name, Workers: rng.IntN(2)}}
		},
		func(_ *model.Snapshot, _ model.Allocation, res *Result) { // placed and reported unplaced
			if name := pickName(rng, res.Placement); name != "" {
				res.Unplaced = append(res.Unplaced, Unplaced{Job: name, GPUs: res.Placement[name].Workers()})
			}
		},
		func(_ *model.Snapshot, _ model.Allocation, res *Result) { // a job dropped
			delete(res.Placement, pickName(rng, res.Placement))
		},
		func(_ *model.Snapshot, _ model.Allocation, res *Result) { // a job dropped and reported unplaced
			if name := pickName(rng, res.Placement); name != "" {
				res.Unplaced = append(res.Unplaced, Unplaced{Job: name, GPUs: res.Placement[name].Workers()})
				delete(res.Placement, name)
			}
		},
	}
	failures := 0
	for c := range 1500 {
		nodes := 1 + rng.IntN([]int{4, 40, 200}[rng.IntN(3)])
		w := newOracleWorld(rng, nodes, 1+rng.IntN(1+3*nodes))
		alloc := w.allocation()
		res, err := placers[rng.IntN(len(placers))].Place(w.snap, alloc)
		if err != nil {
			continue // an allocation naming a job the snapshot lacks
		}
		res = cloneResult(res)
		for range rng.IntN(4) {
			breaks[rng.IntN(len(breaks))](w.snap, alloc, &res)
		}
		want, got := oldCheck(w.snap, alloc, res), Check(w.snap, alloc, res)
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Fatalf("case %d: Check() = %v, oracle %v", c, got, want)
		}
		if got != nil {
			failures++
		}
	}
	if failures < 500 {
		t.Errorf("only %d of the cases fail Check: the breaks do not break enough", failures)
	}
}

// pickName returns a job of p drawn by rng, or "" if p is empty; the
// names are sorted first so that the seed alone decides.
func pickName(rng *rand.Rand, p model.Placement) string {
	if len(p) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(p))
	return names[rng.IntN(len(names))]
}

// pick returns the placement of a job of p drawn by rng, or nil.
func pick(rng *rand.Rand, p model.Placement) model.JobPlacement {
	return p[pickName(rng, p)]
}

func cloneResult(r Result) Result {
	c := Result{Placement: make(model.Placement, len(r.Placement)), Unplaced: append([]Unplaced(nil), r.Unplaced...)}
	for name, p := range r.Placement {
		c.Placement[name] = p.Clone()
	}
	return c
}
