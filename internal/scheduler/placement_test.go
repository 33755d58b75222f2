package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
)

// tickingClock advances by step on every reading, so a stopwatch built on
// it measures step per Now/Since pair.
type tickingClock struct {
	now  time.Time
	step time.Duration
}

func (c *tickingClock) Now() time.Time {
	c.now = c.now.Add(c.step)
	return c.now
}

func (c *tickingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func newTopologyCore(t *testing.T, alloc *fixedAlloc, sizes ...int) (*Core, *recordPort) {
	t.Helper()
	port := &recordPort{}
	pl, err := placement.Builtin().New(placement.TopologyName, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCore(Config{GPUType: "v100", Allocator: alloc, Placer: pl, Port: port,
		Stopwatch: &tickingClock{now: t0, step: 3 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range sizes {
		if err := c.AddNode(t0, model.Node{Name: string(rune('p' + i)), GPUs: g}); err != nil {
			t.Fatal(err)
		}
	}
	return c, port
}

func TestTopologyNodeLossAndAddition(t *testing.T) {
	ctx := context.Background()
	// Nodes p, q, r with 4 GPUs each. a (4) and b (4) fill p and q; c (2)
	// takes half of r.
	alloc := &fixedAlloc{gpus: map[string]int{"a": 4, "b": 4, "c": 2}}
	c, port := newTopologyCore(t, alloc, 4, 4, 4)
	for i, n := range []string{"a", "b", "c"} {
		if err := c.Submit(t0, spec(n, 1, 8, t0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := c.Cycle(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Spread != 0 {
		t.Errorf("first cycle spread = %d, want 0", rep.Spread)
	}
	if rep.PlaceDuration != 3*time.Millisecond {
		t.Errorf("PlaceDuration = %s, want the stopwatch's 3ms", rep.PlaceDuration)
	}
	a, _ := c.Job("a")
	lost := a.State.Placement[0].Node

	// The node under a goes; with 2 GPUs left free the allocator gives a
	// 2, and a starts again on a surviving node.
	if err := c.RemoveNode(t0.Add(time.Minute), lost); err != nil {
		t.Fatal(err)
	}
	alloc.gpus = map[string]int{"a": 2, "b": 4, "c": 2}
	port.actions = nil
	if _, err := c.Cycle(ctx, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	a, _ = c.Job("a")
	if a.State.GPUs != 2 || a.State.Placement.Nodes() != 1 || a.State.Placement[0].Node == lost {
		t.Fatalf("after losing %s, a is at %v, want 2 workers on one surviving node", lost, a.State.Placement)
	}
	if got := port.kinds(); !equal(got, []string{"start:a"}) {
		t.Errorf("actions = %v, want a started again", got)
	}

	// A new node arrives and a grows back to 4: on the new node, whole,
	// rather than split over the half-free node it is on and another.
	if err := c.AddNode(t0.Add(2*time.Minute), model.Node{Name: "s", GPUs: 4}); err != nil {
		t.Fatal(err)
	}
	alloc.gpus = map[string]int{"a": 4, "b": 4, "c": 2}
	port.actions = nil
	rep, err = c.Cycle(ctx, t0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	a, _ = c.Job("a")
	if a.State.GPUs != 4 || a.State.Placement.Nodes() != 1 {
		t.Fatalf("a grew to %v, want 4 workers on one node", a.State.Placement)
	}
	if rep.Spread != 0 {
		t.Errorf("spread after the new node = %d, want 0", rep.Spread)
	}
	if rep.Migrated != 2 {
		t.Errorf("migrated = %d, want a's 2 workers moved to the new node", rep.Migrated)
	}
}

func TestCycleReportsSpread(t *testing.T) {
	// The greedy placer splits a 4-worker job over two half-free nodes;
	// the report counts it.
	alloc := &fixedAlloc{gpus: map[string]int{"a": 2, "b": 2}}
	c, _ := newTestCore(t, alloc, 2)
	c.Submit(t0, spec("a", 1, 8, t0))
	c.Submit(t0, spec("b", 1, 8, t0.Add(time.Second)))
	if _, err := c.Cycle(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	c.Submit(t0, spec("d", 4, 4, t0.Add(2*time.Second)))
	alloc.gpus = map[string]int{"a": 2, "b": 2, "d": 4}
	rep, err := c.Cycle(context.Background(), t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Spread != 1 {
		t.Errorf("spread = %d, want 1 (d over two nodes)", rep.Spread)
	}
	if rep.PlaceDuration != 0 {
		t.Errorf("PlaceDuration = %s without a stopwatch, want 0", rep.PlaceDuration)
	}
}

// Jobs whose workers hold G GPUs run through a whole cycle: the allocator
// gives whole workers, the placer puts each worker on one node with G
// free GPUs, and the core records GPUs held as workers x G; a removed node
// takes its workers' G GPUs each with it.
func TestCycleMultiGPUWorkers(t *testing.T) {
	ctx := context.Background()
	// Nodes p (8), q (8), r (4). a: 2 workers of 4 = 8; b: 3 of 2 = 6;
	// c: 2 of 1 = 2; d: 1 of 4 = 4: 20 GPUs, every node full.
	alloc := &fixedAlloc{gpus: map[string]int{"a": 8, "b": 6, "c": 2, "d": 4}}
	c, port := newTopologyCore(t, alloc, 8, 8, 4)
	for i, tc := range []struct {
		name      string
		workers   int
		perWorker int
	}{{"a", 2, 4}, {"b", 3, 2}, {"c", 2, 1}, {"d", 1, 4}} {
		js := spec(tc.name, 1, 4, t0.Add(time.Duration(i)*time.Second))
		js.GPUsPerWorker = tc.perWorker
		if err := c.Submit(t0, js); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Cycle(ctx, t0); err != nil {
		t.Fatal(err)
	}
	used := map[string]int{}
	for name, want := range map[string][2]int{"a": {2, 4}, "b": {3, 2}, "c": {2, 1}, "d": {1, 4}} {
		j, _ := c.Job(name)
		if j.State.GPUs != want[0]*want[1] || j.State.Placement.Workers() != want[0] {
			t.Errorf("%s: %d GPUs on %d workers, want %d workers of %d", name, j.State.GPUs, j.State.Placement.Workers(), want[0], want[1])
		}
		for _, nw := range j.State.Placement {
			used[nw.Node] += nw.Workers * want[1]
		}
	}
	for _, n := range c.Nodes() {
		if used[n.Name] > n.GPUs {
			t.Errorf("node %s: %d GPUs used of %d", n.Name, used[n.Name], n.GPUs)
		}
	}
	if len(port.actions) == 0 {
		t.Fatal("no action applied")
	}
	// Losing q takes its workers' GPUs with them.
	var onQ []string
	for _, name := range []string{"a", "b", "c", "d"} {
		j, _ := c.Job(name)
		for _, nw := range j.State.Placement {
			if nw.Node == "q" {
				onQ = append(onQ, name)
			}
		}
	}
	if err := c.RemoveNode(t0.Add(time.Second), "q"); err != nil {
		t.Fatal(err)
	}
	for _, name := range onQ {
		j, _ := c.Job(name)
		if j.State.GPUs != j.State.Placement.Workers()*j.Spec.PerWorker() {
			t.Errorf("%s after q left: %d GPUs on %d workers of %d", name, j.State.GPUs, j.State.Placement.Workers(), j.Spec.PerWorker())
		}
	}
}

// A job of workers of 8 GPUs on nodes of 8, 4 and 4 GPUs: ElasticFIFO
// would give it the 16 GPUs it may use (2 workers), which no placement
// holds, and it waited for ever unplaced; bounded by the one worker of 8
// the nodes hold, it runs on the 8-GPU node.
func TestCycleBoundsWorkersToWhatNodesHold(t *testing.T) {
	alloc, err := algorithm.Builtin().New(algorithm.NameElasticFIFO, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := placement.Builtin().New(placement.TopologyName, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCore(Config{GPUType: "v100", Allocator: alloc, Placer: pl, Port: &recordPort{}})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range []int{8, 4, 4} {
		if err := c.AddNode(t0, model.Node{Name: string(rune('p' + i)), GPUs: g}); err != nil {
			t.Fatal(err)
		}
	}
	js := spec("wide", 1, 2, t0)
	js.RequestedWorkers, js.GPUsPerWorker = 2, 8
	if err := c.Submit(t0, js); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cycle(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	j, _ := c.Job("wide")
	if j.State.GPUs != 8 || j.State.Placement.Workers() != 1 || j.State.Placement[0].Node != "p" {
		t.Errorf("wide: %d GPUs on %v, want one worker of 8 on p", j.State.GPUs, j.State.Placement)
	}
	if j.Spec.MaxWorkers != 2 || j.Spec.RequestedWorkers != 2 {
		t.Errorf("the job's spec changed to max %d, requested %d; want 2 and 2", j.Spec.MaxWorkers, j.Spec.RequestedWorkers)
	}
}
