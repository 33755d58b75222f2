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

// nodes returns nodes n0, n1, ... with the given sizes and their position
// as index.
func nodes(sizes ...int) []model.Node {
	out := make([]model.Node, len(sizes))
	for i, g := range sizes {
		out[i] = model.Node{Name: fmt.Sprintf("n%d", i), GPUs: g, Index: i}
	}
	return out
}

// job returns a running job with range [1, 8] and the given placement.
func job(name string, submit int, cur model.JobPlacement) model.Job {
	st := model.JobState{Status: model.StatusWaiting}
	if cur.Workers() > 0 {
		st = model.JobState{Status: model.StatusRunning, GPUs: cur.Workers(), Placement: cur}
	}
	return model.Job{
		Spec: model.JobSpec{Name: name, MinWorkers: 1, MaxWorkers: 8, RequestedWorkers: 1,
			SubmitTime: time.Unix(int64(submit), 0)},
		State: st,
	}
}

func TestGreedyPlace(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []model.Node
		jobs     []model.Job
		alloc    model.Allocation
		want     model.Placement
		unplaced []Unplaced
	}{
		{
			name:  "most free node first, lowest index on ties",
			nodes: nodes(4, 4, 4),
			jobs:  []model.Job{job("a", 0, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 6}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n0", 4), at("n1", 2)}},
		},
		{
			name:  "largest node before a lower index",
			nodes: nodes(2, 8, 8),
			jobs:  []model.Job{job("a", 0, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 10}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n1", 8), at("n2", 2)}},
		},
		{
			name:  "small job on the most free node",
			nodes: nodes(2, 3, 1),
			jobs:  []model.Job{job("a", 0, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 1}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n1", 1)}},
		},
		{
			name:  "jobs placed in allocation order, not snapshot order",
			nodes: nodes(4, 2),
			jobs:  []model.Job{job("a", 0, nil), job("b", 1, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 3, "b": 3}, Order: []string{"b", "a"}},
			want: model.Placement{
				"b": {at("n0", 3)},
				"a": {at("n1", 2), at("n0", 1)},
			},
		},
		{
			name:  "same jobs in the other order",
			nodes: nodes(4, 2),
			jobs:  []model.Job{job("a", 0, nil), job("b", 1, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 3, "b": 3}, Order: []string{"a", "b"}},
			want: model.Placement{
				"a": {at("n0", 3)},
				"b": {at("n1", 2), at("n0", 1)},
			},
		},
		{
			name:  "unchanged job keeps its placement, rank order included",
			nodes: nodes(4, 4, 4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("n2", 1), at("n0", 2)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 3}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n2", 1), at("n0", 2)}},
		},
		{
			name:  "kept job is not displaced by a higher-priority new one",
			nodes: nodes(4, 4),
			jobs:  []model.Job{job("x", 0, model.JobPlacement{at("n0", 4)}), job("y", 1, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"x": 4, "y": 4}, Order: []string{"y", "x"}},
			want: model.Placement{
				"x": {at("n0", 4)},
				"y": {at("n1", 4)},
			},
		},
		{
			name:  "resized job is placed from scratch",
			nodes: nodes(4, 4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("n1", 2)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 3}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n0", 3)}},
		},
		{
			name:  "placement on a removed node is re-placed",
			nodes: nodes(4, 4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("gone", 2), at("n1", 2)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n0", 4)}},
		},
		{
			name:  "placement on a shrunken node is re-placed",
			nodes: nodes(2, 4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("n0", 4)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n1", 4)}},
		},
		{
			name:  "job without GPUs gets no placement",
			nodes: nodes(4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("n0", 2)}), job("b", 1, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 0, "b": 2}, Order: []string{"a", "b"}},
			want:  model.Placement{"b": {at("n0", 2)}},
		},
		{
			name:     "total short: the later job is unplaced",
			nodes:    nodes(4, 4),
			jobs:     []model.Job{job("a", 0, nil), job("b", 1, nil)},
			alloc:    model.Allocation{GPUs: map[string]int{"a": 6, "b": 4}, Order: []string{"a", "b"}},
			want:     model.Placement{"a": {at("n0", 4), at("n1", 2)}},
			unplaced: []Unplaced{{Job: "b", GPUs: 4, Reason: "needs 4 GPUs, 2 free"}},
		},
		{
			name:  "a later smaller job still fits after an unplaced one",
			nodes: nodes(4, 4),
			jobs:  []model.Job{job("a", 0, nil), job("b", 1, nil), job("c", 2, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 6, "b": 4, "c": 2}, Order: []string{"a", "b", "c"}},
			want: model.Placement{
				"a": {at("n0", 4), at("n1", 2)},
				"c": {at("n1", 2)},
			},
			unplaced: []Unplaced{{Job: "b", GPUs: 4, Reason: "needs 4 GPUs, 2 free"}},
		},
		{
			name:     "no nodes",
			nodes:    nil,
			jobs:     []model.Job{job("a", 0, nil)},
			alloc:    model.Allocation{GPUs: map[string]int{"a": 1}, Order: []string{"a"}},
			want:     model.Placement{},
			unplaced: []Unplaced{{Job: "a", GPUs: 1, Reason: "needs 1 GPUs, 0 free"}},
		},
		{
			name:  "jobs left out of the order are still placed, in snapshot order",
			nodes: nodes(4, 4),
			jobs:  []model.Job{job("a", 0, nil), job("b", 1, nil), job("c", 2, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 2, "b": 3, "c": 3}, Order: []string{"c"}},
			want: model.Placement{
				"c": {at("n0", 3)},
				"a": {at("n1", 2)},
				"b": {at("n1", 2), at("n0", 1)},
			},
		},
		{
			name:  "nil order",
			nodes: nodes(4),
			jobs:  []model.Job{job("a", 0, nil), job("b", 1, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 1, "b": 2}},
			want: model.Placement{
				"a": {at("n0", 1)},
				"b": {at("n0", 2)},
			},
		},
		{
			name:  "a job ordered twice is placed once",
			nodes: nodes(4, 4),
			jobs:  []model.Job{job("a", 0, nil), job("b", 1, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 4}, Order: []string{"a", "a", "b"}},
			want: model.Placement{
				"a": {at("n0", 4)},
				"b": {at("n1", 4)},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkPlace(t, NewGreedy(), &model.Snapshot{Nodes: tc.nodes, Jobs: tc.jobs}, tc.alloc, tc.want, tc.unplaced)
		})
	}
}

// checkPlace places one table case and compares it with what is wanted;
// the result must also pass Check.
func checkPlace(t *testing.T, p Placer, snap *model.Snapshot, alloc model.Allocation, want model.Placement, unplaced []Unplaced) {
	t.Helper()
	res, err := p.Place(snap, alloc)
	if err != nil {
		t.Fatalf("Place() error: %v", err)
	}
	if diff := cmp.Diff(want, res.Placement); diff != "" {
		t.Errorf("Place() placement (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(unplaced, res.Unplaced); diff != "" {
		t.Errorf("Place() unplaced (-want,+got):\n%s", diff)
	}
	if err := Check(snap, alloc, res); err != nil {
		t.Errorf("Check() = %v, want nil", err)
	}
}

func TestGreedyPlaceUnknownJob(t *testing.T) {
	snap := &model.Snapshot{Nodes: nodes(4), Jobs: []model.Job{job("a", 0, nil)}}
	for _, alloc := range []model.Allocation{
		{GPUs: map[string]int{"a": 1, "ghost": 2}, Order: []string{"ghost", "a"}},
		{GPUs: map[string]int{"a": 1, "ghost": 2}, Order: []string{"a"}},
	} {
		_, err := NewGreedy().Place(snap, alloc)
		if err == nil || !strings.Contains(err.Error(), "ghost") {
			t.Errorf("Place(%v) error = %v, want one naming job ghost", alloc, err)
		}
	}
}

// randomCase is one random scheduling situation: a cluster, jobs whose
// current placements were valid on the cluster before some nodes left, and
// a valid new allocation.
func randomCase(rng *rand.Rand) (*model.Snapshot, model.Allocation) {
	n := 1 + rng.IntN(50)
	all := make([]model.Node, 0, n+3)
	for i := range n {
		all = append(all, model.Node{Name: fmt.Sprintf("n%02d", i), GPUs: 1 + rng.IntN(8), Index: i})
	}
	// Nodes that held workers before and are now gone.
	for i := range rng.IntN(4) {
		all = append(all, model.Node{Name: fmt.Sprintf("gone%d", i), GPUs: 1 + rng.IntN(8), Index: n + i})
	}
	free := map[string]int{}
	prevTotal := 0
	for _, nd := range all {
		free[nd.Name] = nd.GPUs
		prevTotal += nd.GPUs
	}

	jobs := make([]model.Job, 1+rng.IntN(40))
	t0 := time.Unix(0, 0)
	for i := range jobs {
		minW := 1 + rng.IntN(4)
		maxW := minW + rng.IntN(8)
		jobs[i] = model.Job{Spec: model.JobSpec{
			Name: fmt.Sprintf("j%02d", i), MinWorkers: minW, MaxWorkers: maxW, RequestedWorkers: minW,
			// Few distinct times, so the name tie-break matters.
			SubmitTime: t0.Add(time.Duration(rng.IntN(5)) * time.Minute),
		}, State: model.JobState{Status: model.StatusWaiting}}
		// The previous placement: a count in range that fitted then,
		// spread over random nodes in random rank order.
		if rng.IntN(3) == 0 {
			continue
		}
		g := minW + rng.IntN(maxW-minW+1)
		if g > prevTotal {
			continue
		}
		prevTotal -= g
		var p model.JobPlacement
		at := map[string]int{}
		for left := g; left > 0; {
			nd := all[rng.IntN(len(all))]
			if free[nd.Name] == 0 {
				continue
			}
			w := 1 + rng.IntN(min(left, free[nd.Name]))
			free[nd.Name] -= w
			left -= w
			if i, ok := at[nd.Name]; ok {
				p[i].Workers += w
				continue
			}
			at[nd.Name] = len(p)
			p = append(p, model.NodeWorkers{Node: nd.Name, Workers: w})
		}
		jobs[i].State = model.JobState{Status: model.StatusRunning, GPUs: g, Placement: p}
	}
	snap := &model.Snapshot{Nodes: all[:n], Jobs: jobs}
	snap.Sort()

	// A valid allocation: total within the cluster, each job 0 or in its
	// range, often its current count so that keeping matters.
	budget := snap.TotalGPUs()
	alloc := model.Allocation{GPUs: make(map[string]int, len(jobs))}
	for _, i := range rng.Perm(len(jobs)) {
		j := &snap.Jobs[i]
		alloc.Order = append(alloc.Order, j.Spec.Name)
		var g int
		switch rng.IntN(4) {
		case 0:
			g = 0
		case 1, 2:
			g = j.State.GPUs
		default:
			g = j.Spec.MinWorkers + rng.IntN(j.Spec.MaxWorkers-j.Spec.MinWorkers+1)
		}
		if g > budget {
			g = 0
		}
		budget -= g
		if g > 0 || rng.IntN(2) == 0 {
			alloc.GPUs[j.Spec.Name] = g
		}
	}
	return snap, alloc
}

func copySnapshot(s *model.Snapshot) *model.Snapshot {
	c := *s
	c.Nodes = append([]model.Node(nil), s.Nodes...)
	c.Jobs = append([]model.Job(nil), s.Jobs...)
	for i := range c.Jobs {
		c.Jobs[i].State.Placement = s.Jobs[i].State.Placement.Clone()
		c.Jobs[i].Est.Speedup = append([]float64(nil), s.Jobs[i].Est.Speedup...)
	}
	return &c
}

func copyAllocation(a model.Allocation) model.Allocation {
	c := model.Allocation{GPUs: make(map[string]int, len(a.GPUs)), Order: append([]string(nil), a.Order...)}
	for k, v := range a.GPUs {
		c.GPUs[k] = v
	}
	return c
}

func TestGreedyProperties(t *testing.T) {
	const cases = 2000
	rng := rand.New(rand.NewPCG(20240611, 7))
	for c := range cases {
		snap, alloc := randomCase(rng)
		g := NewGreedy()
		res, fail := placeAndCheck(t, c, g, snap, alloc)
		capacity := capacities(snap)
		for i := range snap.Jobs {
			j := &snap.Jobs[i]
			name, want := j.Spec.Name, alloc.GPUs[j.Spec.Name]
			got := res.Placement[name]
			// Unchanged count on surviving nodes: kept exactly.
			cur := j.State.Placement
			if want > 0 && cur.Workers() == want && onNodes(cur, capacity) && !got.Equal(cur) {
				fail("job %s: moved from %v to %v although its count and nodes are unchanged", name, cur, got)
			}
		}
		// Fed back as the current placement with the same allocation,
		// nothing moves.
		res3, err := g.Place(feedBack(snap, res), alloc)
		if err != nil {
			fail("Place() on its own result: %v", err)
		}
		if !reflect.DeepEqual(res, res3) {
			fail("Place() on its own result moved jobs (-first,+second):\n%s", cmp.Diff(res, res3))
		}
	}
}

// placeAndCheck places a random case and checks what every placer must
// guarantee: Check passes, inputs untouched, capacity and known nodes,
// every job exactly its count (a valid allocation always fits),
// determinism, and a result that shares no memory with the snapshot. It
// returns the result and a fail function that names the case.
func placeAndCheck(t *testing.T, c int, p Placer, snap *model.Snapshot, alloc model.Allocation) (Result, func(string, ...any)) {
	t.Helper()
	if err := model.CheckAllocation(snap, alloc); err != nil {
		t.Fatalf("case %d: generated an invalid allocation: %v", c, err)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s case %d (%d nodes, %d jobs): %s", p.Name(), c, len(snap.Nodes), len(snap.Jobs), fmt.Sprintf(format, args...))
	}
	wantSnap, wantAlloc := copySnapshot(snap), copyAllocation(alloc)
	res, err := p.Place(snap, alloc)
	if err != nil {
		fail("Place() error: %v", err)
	}
	if err := Check(snap, alloc, res); err != nil {
		fail("Check() = %v, want nil", err)
	}
	if !reflect.DeepEqual(wantSnap, snap) {
		fail("Place() modified the snapshot (-want,+got):\n%s", cmp.Diff(wantSnap, snap))
	}
	if !reflect.DeepEqual(wantAlloc, alloc) {
		fail("Place() modified the allocation (-want,+got):\n%s", cmp.Diff(wantAlloc, alloc))
	}

	// Capacity, known nodes, no empty entries: checked here
	// independently of Check.
	capacity := capacities(snap)
	used := map[string]int{}
	for name, jp := range res.Placement {
		for _, nw := range jp {
			if _, ok := capacity[nw.Node]; !ok {
				fail("job %s placed on unknown node %s", name, nw.Node)
			}
			if nw.Workers <= 0 {
				fail("job %s has %d workers on %s", name, nw.Workers, nw.Node)
			}
			used[nw.Node] += nw.Workers
		}
	}
	for node, u := range used {
		if u > capacity[node] {
			fail("node %s: %d workers on %d GPUs", node, u, capacity[node])
		}
	}
	if len(res.Unplaced) > 0 {
		fail("unplaced %+v with a valid allocation (%d of %d GPUs)", res.Unplaced, alloc.Total(), snap.TotalGPUs())
	}
	for name, jp := range res.Placement {
		if alloc.GPUs[name] == 0 {
			fail("job %s placed %v without GPUs", name, jp)
		}
	}
	for i := range snap.Jobs {
		name := snap.Jobs[i].Spec.Name
		if got, want := res.Placement[name].Workers(), alloc.GPUs[name]; got != want {
			fail("job %s: placed %d workers (%v), want %d", name, got, res.Placement[name], want)
		}
	}

	// Deterministic.
	res2, err := p.Place(snap, alloc)
	if err != nil || !reflect.DeepEqual(res, res2) {
		fail("second Place() differs: %v\nfirst  %+v\nsecond %+v", err, res, res2)
	}

	// The result shares no memory with the snapshot.
	scribbled := Result{Placement: model.Placement{}}
	for name, jp := range res2.Placement {
		scribbled.Placement[name] = jp
		for k := range jp {
			jp[k].Workers += 100
			jp[k].Node = "scribbled"
		}
	}
	if !reflect.DeepEqual(wantSnap, snap) {
		fail("changing the result changed the snapshot (-want,+got):\n%s", cmp.Diff(wantSnap, snap))
	}
	return res, fail
}

func capacities(snap *model.Snapshot) map[string]int {
	capacity := map[string]int{}
	for _, nd := range snap.Nodes {
		capacity[nd.Name] = nd.GPUs
	}
	return capacity
}

// feedBack returns a copy of snap whose jobs run where res put them.
func feedBack(snap *model.Snapshot, res Result) *model.Snapshot {
	next := copySnapshot(snap)
	for i := range next.Jobs {
		p := res.Placement[next.Jobs[i].Spec.Name].Clone()
		next.Jobs[i].State.Placement, next.Jobs[i].State.GPUs = p, p.Workers()*next.Jobs[i].Spec.PerWorker()
	}
	return next
}

func onNodes(p model.JobPlacement, capacity map[string]int) bool {
	for _, nw := range p {
		if _, ok := capacity[nw.Node]; !ok {
			return false
		}
	}
	return true
}

// at is one placement entry.
func at(node string, workers int) model.NodeWorkers {
	return model.NodeWorkers{Node: node, Workers: workers}
}
