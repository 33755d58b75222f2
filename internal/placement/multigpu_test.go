package placement

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/model"
)

// mjob is job with workers of per GPUs each.
func mjob(name string, submit, per int, cur model.JobPlacement) model.Job {
	j := job(name, submit, cur)
	j.Spec.GPUsPerWorker = per
	j.State.GPUs = cur.Workers() * per
	return j
}

func TestPlaceMultiGPUWorkers(t *testing.T) {
	def := DefaultTopologyOptions()
	off := def
	off.DefragBudget = -1
	three := def
	three.DefragBudget = 3
	// Four 8-GPU nodes, each half used by a job of four one-GPU workers
	// that keeps its count: 16 GPUs free, no node with 8.
	halfUsed := []model.Job{
		mjob("s0", 0, 1, model.JobPlacement{at("n0", 4)}),
		mjob("s1", 1, 1, model.JobPlacement{at("n1", 4)}),
		mjob("s2", 2, 1, model.JobPlacement{at("n2", 4)}),
		mjob("s3", 3, 1, model.JobPlacement{at("n3", 4)}),
		mjob("big", 4, 8, nil),
	}
	halfAlloc := model.Allocation{GPUs: map[string]int{"s0": 4, "s1": 4, "s2": 4, "s3": 4, "big": 8},
		Order: []string{"s0", "s1", "s2", "s3", "big"}}
	// What is left when no node is freed: the four stay, big waits.
	halfKept := model.Placement{"s0": {at("n0", 4)}, "s1": {at("n1", 4)}, "s2": {at("n2", 4)}, "s3": {at("n3", 4)}}
	bigWaits := []Unplaced{{Job: "big", GPUs: 8,
		Reason: "needs 8 GPUs in workers of 8, 16 GPUs free but room for 0 such workers"}}
	tests := []struct {
		name     string
		placer   Placer
		nodes    []model.Node
		jobs     []model.Job
		alloc    model.Allocation
		want     model.Placement
		unplaced []Unplaced
	}{
		{
			// Largest need first: c takes a whole 8-GPU node, a the
			// 4-GPU node that fits it exactly, b and d share the other.
			name:   "topology: mixed G on 4- and 8-GPU nodes",
			placer: topology(t, def),
			nodes:  nodes(4, 8, 8),
			jobs:   []model.Job{mjob("a", 0, 4, nil), mjob("b", 1, 2, nil), mjob("c", 2, 8, nil), mjob("d", 3, 1, nil)},
			alloc:  model.Allocation{GPUs: map[string]int{"a": 4, "b": 4, "c": 8, "d": 3}, Order: []string{"a", "b", "c", "d"}},
			want: model.Placement{"a": {at("n0", 1)}, "b": {at("n2", 2)}, "c": {at("n1", 1)},
				"d": {at("n2", 3)}},
		},
		{
			// In priority order on the most free node: a and b take half
			// of each 8-GPU node, and c's worker of 8 fits nowhere.
			name:   "greedy: mixed G on 4- and 8-GPU nodes leaves the G=8 job out",
			placer: NewGreedy(),
			nodes:  nodes(4, 8, 8),
			jobs:   []model.Job{mjob("a", 0, 4, nil), mjob("b", 1, 2, nil), mjob("c", 2, 8, nil), mjob("d", 3, 1, nil)},
			alloc:  model.Allocation{GPUs: map[string]int{"a": 4, "b": 4, "c": 8, "d": 3}, Order: []string{"a", "b", "c", "d"}},
			want:   model.Placement{"a": {at("n1", 1)}, "b": {at("n2", 2)}, "d": {at("n0", 3)}},
			unplaced: []Unplaced{{Job: "c", GPUs: 8,
				Reason: "needs 8 GPUs in workers of 8, 12 GPUs free but room for 0 such workers"}},
		},
		{
			name:   "topology: a G=2 job that keeps its count stays, one that grows fills its node first",
			placer: topology(t, def),
			nodes:  nodes(8, 8),
			jobs: []model.Job{mjob("a", 0, 2, model.JobPlacement{at("n1", 1), at("n0", 1)}),
				mjob("b", 1, 2, model.JobPlacement{at("n1", 2)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 6}, Order: []string{"a", "b"}},
			want:  model.Placement{"a": {at("n1", 1), at("n0", 1)}, "b": {at("n1", 3)}},
		},
		{
			// a keeps its count and its nodes' GPUs: it stays, spread as
			// it is; b grows, so it is placed afresh from the most free
			// node: n0 and n1 have 6 free each, the lower index first
			// holds 3 of its 4 workers.
			name:   "greedy: a G=2 job that keeps its count stays, one that grows is placed afresh",
			placer: NewGreedy(),
			nodes:  nodes(8, 8),
			jobs: []model.Job{mjob("a", 0, 2, model.JobPlacement{at("n1", 1), at("n0", 1)}),
				mjob("b", 1, 2, model.JobPlacement{at("n0", 2)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 8}, Order: []string{"a", "b"}},
			want:  model.Placement{"a": {at("n1", 1), at("n0", 1)}, "b": {at("n0", 3), at("n1", 1)}},
		},
		{
			name:   "topology: a G=2 job shrinking gives back whole workers",
			placer: topology(t, off),
			nodes:  nodes(8, 8),
			jobs:   []model.Job{mjob("a", 0, 2, model.JobPlacement{at("n0", 3), at("n1", 1)})},
			alloc:  model.Allocation{GPUs: map[string]int{"a": 6}, Order: []string{"a"}},
			want:   model.Placement{"a": {at("n0", 3)}},
		},
		{
			// Every node is a candidate at the same cost (one restart,
			// four workers): the lowest index, n0, is freed, its
			// workers going to the tightest fit, n1.
			name:   "topology: a G=8 job placed after a node is freed",
			placer: topology(t, def),
			nodes:  nodes(8, 8, 8, 8),
			jobs:   halfUsed,
			alloc:  halfAlloc,
			want: model.Placement{"big": {at("n0", 1)}, "s0": {at("n1", 4)}, "s1": {at("n1", 4)},
				"s2": {at("n2", 4)}, "s3": {at("n3", 4)}},
		},
		{
			name:     "topology: freeing a node needs four moves, the budget allows three",
			placer:   topology(t, three),
			nodes:    nodes(8, 8, 8, 8),
			jobs:     halfUsed,
			alloc:    halfAlloc,
			want:     halfKept,
			unplaced: bigWaits,
		},
		{
			name:     "topology: defragmentation off",
			placer:   topology(t, off),
			nodes:    nodes(8, 8, 8, 8),
			jobs:     halfUsed,
			alloc:    halfAlloc,
			want:     halfKept,
			unplaced: bigWaits,
		},
		{
			// Freeing n0 restarts s0 (four moves), n2 restarts s2 and s3
			// (three moves); n1 holds r, which restarts anyway as it
			// shrinks: its two workers of 2 GPUs move to n0 at no
			// extra restart, the cheapest.
			name:   "topology: the node whose freeing costs least",
			placer: topology(t, def),
			nodes:  nodes(8, 8, 8),
			jobs: []model.Job{
				mjob("s0", 0, 1, model.JobPlacement{at("n0", 4)}),
				mjob("r", 1, 2, model.JobPlacement{at("n1", 3)}), // shrinks to 2 workers
				mjob("s2", 2, 4, model.JobPlacement{at("n2", 1)}),
				mjob("s3", 3, 1, model.JobPlacement{at("n2", 2)}),
				mjob("big", 4, 8, nil),
			},
			alloc: model.Allocation{GPUs: map[string]int{"s0": 4, "r": 4, "s2": 4, "s3": 2, "big": 8},
				Order: []string{"s0", "r", "s2", "s3", "big"}},
			want: model.Placement{"s0": {at("n0", 4)}, "r": {at("n0", 2)}, "s2": {at("n2", 1)},
				"s3": {at("n2", 2)}, "big": {at("n1", 1)}},
		},
		{
			name:   "topology: workers larger than every node",
			placer: topology(t, def),
			nodes:  nodes(4, 8, 8),
			jobs:   []model.Job{mjob("huge", 0, 16, nil), mjob("a", 1, 1, nil)},
			alloc:  model.Allocation{GPUs: map[string]int{"huge": 16, "a": 2}, Order: []string{"huge", "a"}},
			want:   model.Placement{"a": {at("n0", 2)}},
			unplaced: []Unplaced{{Job: "huge", GPUs: 16,
				Reason: "needs workers of 16 GPUs, the largest node has 8"}},
		},
		{
			name:   "greedy: workers larger than every node",
			placer: NewGreedy(),
			nodes:  nodes(4, 8, 8),
			jobs:   []model.Job{mjob("huge", 0, 16, nil), mjob("a", 1, 1, nil)},
			alloc:  model.Allocation{GPUs: map[string]int{"huge": 16, "a": 2}, Order: []string{"huge", "a"}},
			want:   model.Placement{"a": {at("n1", 2)}},
			unplaced: []Unplaced{{Job: "huge", GPUs: 16,
				Reason: "needs workers of 16 GPUs, the largest node has 8"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkPlace(t, tc.placer, &model.Snapshot{Nodes: tc.nodes, Jobs: tc.jobs}, tc.alloc, tc.want, tc.unplaced)
		})
	}
}

func TestPlaceRejectsPartialWorkers(t *testing.T) {
	snap := &model.Snapshot{Nodes: nodes(8, 8), Jobs: []model.Job{mjob("a", 0, 1, nil), mjob("b", 1, 4, nil)}}
	alloc := model.Allocation{GPUs: map[string]int{"a": 2, "b": 6}, Order: []string{"a", "b"}}
	for _, p := range []Placer{NewGreedy(), topology(t, DefaultTopologyOptions())} {
		_, err := p.Place(snap, alloc)
		if want := "place job b: 6 GPUs are not whole workers of 4 GPUs"; err == nil || err.Error() != want {
			t.Errorf("%s: Place() error = %v, want %q", p.Name(), err, want)
		}
	}
}

func TestCheckMultiGPUWorkers(t *testing.T) {
	snap := &model.Snapshot{
		Nodes: nodes(8, 4),
		Jobs:  []model.Job{mjob("a", 0, 4, nil), mjob("b", 1, 2, nil), mjob("c", 2, 1, nil)},
	}
	alloc := model.Allocation{GPUs: map[string]int{"a": 8, "b": 2, "c": 2}, Order: []string{"a", "b", "c"}}
	tests := []struct {
		name  string
		alloc model.Allocation
		res   Result
		want  string // a substring of the error; "" means valid
	}{
		{
			name: "valid",
			res:  Result{Placement: model.Placement{"a": {at("n0", 1), at("n1", 1)}, "b": {at("n0", 1)}, "c": {at("n0", 2)}}},
		},
		{
			name: "node over capacity in GPUs, not in workers",
			res:  Result{Placement: model.Placement{"a": {at("n0", 2)}, "b": {at("n0", 1)}, "c": {at("n1", 2)}}},
			want: "node n0: 10 GPUs used by 3 workers on 8 GPUs",
		},
		{
			name: "GPUs counted as workers",
			res:  Result{Placement: model.Placement{"a": {at("n0", 8)}, "b": {at("n1", 2)}, "c": {at("n1", 2)}}},
			want: "job a: placed 8 workers of 4 GPUs, allocated 8 GPUs (2 workers)",
		},
		{
			name:  "allocation not whole workers",
			alloc: model.Allocation{GPUs: map[string]int{"a": 6, "b": 2, "c": 2}, Order: []string{"a", "b", "c"}},
			res: Result{Placement: model.Placement{"b": {at("n0", 1)}, "c": {at("n0", 2)}},
				Unplaced: []Unplaced{{Job: "a", GPUs: 6, Reason: "r"}}},
			want: "job a: allocated 6 GPUs, not whole workers of 4 GPUs",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.alloc
			if a.GPUs == nil {
				a = alloc
			}
			err := Check(snap, a, tc.res)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestUnusableFreeGPUs(t *testing.T) {
	done := mjob("done", 9, 1, nil)
	done.State.Status = model.StatusCompleted
	tests := []struct {
		name  string
		nodes []model.Node
		jobs  []model.Job
		alloc map[string]int
		res   Result
		want  int
	}{
		{
			// 4 + 4 free on n0 and n1; the G=8 job waits.
			name:  "half-used nodes and a waiting G=8 job",
			nodes: nodes(8, 8, 8),
			jobs:  []model.Job{mjob("a", 0, 2, nil), mjob("b", 1, 4, nil), mjob("c", 2, 8, nil)},
			alloc: map[string]int{"a": 4, "b": 4, "c": 8},
			res: Result{Placement: model.Placement{"a": {at("n0", 2)}, "b": {at("n1", 1)}, "c": {at("n2", 1)}},
				Unplaced: nil},
			want: 0, // nothing waits
		},
		{
			name:  "an unplaced G=8 job",
			nodes: nodes(8, 8, 4),
			jobs:  []model.Job{mjob("a", 0, 2, nil), mjob("b", 1, 4, nil), mjob("c", 2, 8, nil)},
			alloc: map[string]int{"a": 4, "b": 4, "c": 8},
			res: Result{Placement: model.Placement{"a": {at("n0", 2)}, "b": {at("n1", 1)}},
				Unplaced: []Unplaced{{Job: "c", GPUs: 8, Reason: "r"}}},
			want: 4 + 4 + 4,
		},
		{
			// The smallest waiting G decides: 2 fits on n0's 4 free GPUs
			// and n2's 2, not on n1's 1.
			name:  "a job given no GPUs with G=2 beside a G=8 one",
			nodes: nodes(8, 8, 4),
			jobs:  []model.Job{mjob("a", 0, 4, nil), mjob("b", 1, 1, nil), mjob("c", 2, 8, nil), mjob("w", 3, 2, nil), done},
			alloc: map[string]int{"a": 4, "b": 9, "c": 8},
			res: Result{Placement: model.Placement{"a": {at("n0", 1)}, "b": {at("n1", 7), at("n2", 2)}},
				Unplaced: []Unplaced{{Job: "c", GPUs: 8, Reason: "r"}}},
			want: 1,
		},
		{
			// huge's G is larger than every node: no placement runs it,
			// so n0's 2 free GPUs are not lost to fragmentation.
			name:  "only a job larger than every node waits",
			nodes: nodes(8),
			jobs:  []model.Job{mjob("a", 0, 2, nil), mjob("huge", 1, 16, nil)},
			alloc: map[string]int{"a": 6, "huge": 16},
			res: Result{Placement: model.Placement{"a": {at("n0", 3)}},
				Unplaced: []Unplaced{{Job: "huge", GPUs: 16, Reason: "r"}}},
			want: 0,
		},
		{
			name:  "a waiting one-GPU job uses any free GPU",
			nodes: nodes(8),
			jobs:  []model.Job{mjob("a", 0, 4, nil), mjob("w", 1, 1, nil)},
			alloc: map[string]int{"a": 4},
			res:   Result{Placement: model.Placement{"a": {at("n0", 1)}}},
			want:  0,
		},
		{
			name:  "a finished job does not wait",
			nodes: nodes(8),
			jobs:  []model.Job{mjob("a", 0, 4, nil), func() model.Job { j := mjob("d", 1, 8, nil); j.State.Status = model.StatusCompleted; return j }()},
			alloc: map[string]int{"a": 4},
			res:   Result{Placement: model.Placement{"a": {at("n0", 1)}}},
			want:  0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := &model.Snapshot{Nodes: tc.nodes, Jobs: tc.jobs}
			alloc := model.Allocation{GPUs: tc.alloc}
			if err := Check(snap, alloc, tc.res); err != nil {
				t.Fatalf("the case's result fails Check: %v", err)
			}
			if got := UnusableFreeGPUs(snap, alloc, tc.res); got != tc.want {
				t.Errorf("UnusableFreeGPUs() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBoundMultiGPU(t *testing.T) {
	b := NewBound(nodes(4, 8, 8, 2))
	for _, tc := range []struct{ workers, per, want int }{
		{0, 4, 0}, {1, 8, 1}, {2, 8, 2}, {3, 8, 2}, {4, 4, 2}, {5, 4, 3}, {9, 2, 3}, {10, 2, 3}, {11, 2, 4},
		{3, 16, 0}, {5, 1, 1}, {17, 1, 3},
	} {
		if got := b.MinNodesOf(tc.workers, tc.per); got != tc.want {
			t.Errorf("MinNodesOf(%d, %d) = %d, want %d", tc.workers, tc.per, got, tc.want)
		}
	}
	x := newFreeIndex([]int{4, 8, 8, 2, 3})
	for _, tc := range []struct{ per, room int }{{1, 25}, {2, 12}, {3, 6}, {4, 5}, {8, 2}, {9, 0}} {
		if got := x.room(tc.per); got != tc.room {
			t.Errorf("room(%d) = %d, want %d", tc.per, got, tc.room)
		}
	}
	for _, tc := range []struct{ need, per, want int }{{2, 8, 2}, {3, 8, -1}, {5, 4, 3}, {6, 4, -1}, {1, 3, 1}, {4, 3, 2}} {
		if got := x.fewest(tc.need, tc.per); got != tc.want {
			t.Errorf("fewest(%d, %d) = %d, want %d", tc.need, tc.per, got, tc.want)
		}
	}
}

// randomMixedCase is a random cluster of 2- to 8-GPU nodes, mostly 4 and
// 8, with jobs of G in {1, 2, 4, 8} running where they fitted before
// (some on nodes now gone), and an allocation of whole workers within
// the cluster's GPUs.
func randomMixedCase(rng *rand.Rand) (*model.Snapshot, model.Allocation) {
	sizes := []int{4, 8, 8, 4, 2, 6}
	n := 1 + rng.IntN(30)
	all := make([]model.Node, 0, n+2)
	for i := range n {
		all = append(all, model.Node{Name: fmt.Sprintf("n%02d", i), GPUs: sizes[rng.IntN(len(sizes))], Index: i})
	}
	for i := range rng.IntN(3) {
		all = append(all, model.Node{Name: fmt.Sprintf("gone%d", i), GPUs: 8, Index: n + i})
	}
	free := make([]int, len(all))
	for i, nd := range all {
		free[i] = nd.GPUs
	}
	pers := []int{1, 1, 1, 2, 4, 8}
	jobs := make([]model.Job, 1+rng.IntN(40))
	for i := range jobs {
		per := pers[rng.IntN(len(pers))]
		minW := 1 + rng.IntN(2)
		maxW := minW + rng.IntN(4)
		jobs[i] = model.Job{Spec: model.JobSpec{
			Name: fmt.Sprintf("j%02d", i), MinWorkers: minW, MaxWorkers: maxW, RequestedWorkers: minW,
			GPUsPerWorker: per, SubmitTime: time.Unix(int64(rng.IntN(5)), 0),
		}, State: model.JobState{Status: model.StatusWaiting},
			Est: model.Estimates{RemainingSeconds: []float64{-1, 30, 7200}[rng.IntN(3)]}}
		if rng.IntN(3) == 0 {
			continue
		}
		// Previous workers, each on a random node that had room.
		var p model.JobPlacement
		for range minW + rng.IntN(maxW-minW+1) {
			k := rng.IntN(len(all))
			if free[k] < per {
				continue
			}
			free[k] -= per
			p = addEntry(p, all[k].Name)
		}
		if p.Workers() > 0 {
			jobs[i].State = model.JobState{Status: model.StatusRunning, GPUs: p.Workers() * per, Placement: p}
		}
	}
	snap := &model.Snapshot{Nodes: all[:n], Jobs: jobs}
	snap.Sort()
	left := snap.TotalGPUs()
	alloc := model.Allocation{GPUs: map[string]int{}}
	for _, i := range rng.Perm(len(jobs)) {
		j := &snap.Jobs[i]
		alloc.Order = append(alloc.Order, j.Spec.Name)
		per := j.Spec.PerWorker()
		w := 0
		switch rng.IntN(4) {
		case 1, 2:
			w = j.State.Placement.Workers()
		case 3:
			w = j.Spec.MinWorkers + rng.IntN(j.Spec.MaxWorkers-j.Spec.MinWorkers+1)
		}
		if w < j.Spec.MinWorkers || w > j.Spec.MaxWorkers || w*per > left {
			w = 0
		}
		left -= w * per
		if w > 0 {
			alloc.GPUs[j.Spec.Name] = w * per
		}
	}
	return snap, alloc
}

// addEntry adds one worker on node to p.
func addEntry(p model.JobPlacement, node string) model.JobPlacement {
	for k := range p {
		if p[k].Node == node {
			p[k].Workers++
			return p
		}
	}
	return append(p, model.NodeWorkers{Node: node, Workers: 1})
}

// TestMultiGPUProperties places random mixed-G cases with every placer
// and checks, independently of Check: no node over capacity in GPUs,
// every placed job's workers x G equal to its allocation, only jobs of
// G > 1 left unplaced (one-GPU workers fit in any free GPU), inputs
// untouched, the same result twice, and with consolidation off no more
// workers of untouched jobs moved than the defragmentation budget.
func TestMultiGPUProperties(t *testing.T) {
	const cases = 1500
	rng := rand.New(rand.NewPCG(20261127, 29))
	defragged := 0
	for c := range cases {
		snap, alloc := randomMixedCase(rng)
		if err := model.CheckAllocation(snap, alloc); err != nil {
			t.Fatalf("case %d: generated an invalid allocation: %v", c, err)
		}
		budget := 1 + rng.IntN(8)
		placers := []Placer{
			NewGreedy(),
			topology(t, DefaultTopologyOptions()),
			topology(t, TopologyOptions{KeepResized: true, DefragBudget: budget, RestartCost: DefaultRestartCost, NodePenalty: DefaultNodePenalty}),
		}
		capacity := capacities(snap)
		for k, p := range placers {
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("%s #%d case %d (%d nodes, %d jobs): %s", p.Name(), k, c, len(snap.Nodes), len(snap.Jobs), fmt.Sprintf(format, args...))
			}
			wantSnap, wantAlloc := copySnapshot(snap), copyAllocation(alloc)
			res, err := p.Place(snap, alloc)
			if err != nil {
				fail("Place() error: %v", err)
			}
			if err := Check(snap, alloc, res); err != nil {
				fail("Check() = %v", err)
			}
			if !reflect.DeepEqual(wantSnap, snap) || !reflect.DeepEqual(wantAlloc, alloc) {
				fail("Place() modified its input")
			}
			used := map[string]int{}
			for i := range snap.Jobs {
				j := &snap.Jobs[i]
				name, per := j.Spec.Name, j.Spec.PerWorker()
				jp := res.Placement[name]
				for _, nw := range jp {
					if _, ok := capacity[nw.Node]; !ok || nw.Workers <= 0 {
						fail("job %s: %d workers on node %s", name, nw.Workers, nw.Node)
					}
					used[nw.Node] += nw.Workers * per
				}
				if jp.Workers() > 0 && jp.Workers()*per != alloc.GPUs[name] {
					fail("job %s: %d workers of %d GPUs, allocated %d", name, jp.Workers(), per, alloc.GPUs[name])
				}
			}
			for node, u := range used {
				if u > capacity[node] {
					fail("node %s: %d GPUs used of %d", node, u, capacity[node])
				}
			}
			placed := 0
			for _, u := range res.Unplaced {
				per := 1
				for i := range snap.Jobs {
					if snap.Jobs[i].Spec.Name == u.Job {
						per = snap.Jobs[i].Spec.PerWorker()
					}
				}
				if per == 1 || u.Reason == "" {
					fail("unplaced %+v: a job of one-GPU workers, or no reason", u)
				}
				if _, ok := res.Placement[u.Job]; ok {
					fail("job %s both placed and unplaced", u.Job)
				}
			}
			for name, g := range alloc.GPUs {
				if g > 0 && res.Placement[name].Workers() > 0 {
					placed++
				}
			}
			if placed+len(res.Unplaced) != countPositive(alloc.GPUs) {
				fail("%d placed and %d unplaced of %d jobs with GPUs", placed, len(res.Unplaced), countPositive(alloc.GPUs))
			}
			if again, err := p.Place(snap, alloc); err != nil || !reflect.DeepEqual(res, again) {
				fail("second Place() differs: %v\n%s", err, cmp.Diff(res, again))
			}
			if k == 2 {
				moved := 0
				for i := range snap.Jobs {
					j := &snap.Jobs[i]
					cur := j.State.Placement
					if g := alloc.GPUs[j.Spec.Name]; g == 0 || g != cur.Workers()*j.Spec.PerWorker() || !onNodes(cur, capacity) {
						continue
					}
					moved += movedWorkers(cur, res.Placement[j.Spec.Name], capacity)
				}
				if moved > budget {
					fail("%d workers of untouched jobs moved, defrag budget %d", moved, budget)
				}
				if moved > 0 {
					defragged++
				}
			}
		}
	}
	// The cases must make the placer defragment, or the bound above
	// proves little.
	if defragged < cases/50 {
		t.Errorf("defragmentation moved workers in only %d of %d cases", defragged, cases)
	}
	t.Logf("defragmentation moved workers in %d of %d cases", defragged, cases)
}

func countPositive(m map[string]int) int {
	n := 0
	for _, v := range m {
		if v > 0 {
			n++
		}
	}
	return n
}

func TestSpreadOf(t *testing.T) {
	snap := &model.Snapshot{Nodes: nodes(8, 8, 4),
		Jobs: []model.Job{mjob("a", 0, 8, nil), mjob("b", 1, 2, nil), mjob("c", 2, 1, nil)}}
	tests := []struct {
		name string
		p    model.Placement
		want int
	}{
		// Two workers of 8 GPUs need two nodes; 4 of 2 fit on one.
		{"workers of 8 on two nodes are not spread", model.Placement{"a": {at("n0", 1), at("n1", 1)}}, 0},
		{"workers of 2 on two nodes are", model.Placement{"b": {at("n0", 2), at("n2", 2)}}, 1},
		{"one-GPU workers as Spread counts them", model.Placement{"c": {at("n0", 1), at("n1", 1)}}, 1},
	}
	for _, tc := range tests {
		if got := SpreadOf(snap, tc.p); got != tc.want {
			t.Errorf("%s: SpreadOf() = %d, want %d", tc.name, got, tc.want)
		}
	}
}
