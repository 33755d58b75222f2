package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
)

// The rate limit bounds how often running jobs are changed, not how soon a
// job starts: a job that fits in free GPUs starts at once (after the start
// interval), whatever the rate limit.
func TestStartOnFreeGPUsDoesNotWaitForRateLimit(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 4}}
	c, port := newTestCore(t, alloc, 2)
	c.SetRateLimit(10 * time.Minute)
	ctx := context.Background()
	if err := c.Submit(t0, spec("a", 1, 4, t0)); err != nil {
		t.Fatal(err)
	}
	if rep, err := c.Cycle(ctx, t0); err != nil || rep.Limited {
		t.Fatalf("first cycle: limited %v, err %v; want a full cycle", rep.Limited, err)
	}
	port.actions = nil

	at := t0.Add(5 * time.Second)
	alloc.gpus = map[string]int{"a": 4, "b": 3}
	if err := c.Submit(at, spec("b", 2, 4, at)); err != nil {
		t.Fatal(err)
	}
	due, ok := c.Due()
	if !ok || !due.Equal(at) {
		t.Fatalf("a job that fits in free GPUs: due %v %v, want %v (not the rate limit %v)", due, ok, at, c.NextFull())
	}
	rep, err := c.Cycle(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Limited || len(rep.Deferred) != 0 {
		t.Fatalf("limited %v, deferred %v; want a limited cycle that defers nothing", rep.Limited, rep.Deferred)
	}
	if got, want := port.kinds(), []string{"start:b"}; !equal(got, want) {
		t.Fatalf("actions %v, want %v", got, want)
	}
	if j, _ := c.Job("b"); j.State.Status != model.StatusRunning || j.State.GPUs != 3 {
		t.Fatalf("b is %s with %d GPUs, want Running with 3", j.State.Status, j.State.GPUs)
	}
	if !c.NextFull().Equal(t0.Add(10 * time.Minute)) {
		t.Errorf("a limited cycle moved the rate limit to %v", c.NextFull())
	}
	if c.Dirty() {
		t.Error("dirty after a limited cycle that left nothing")
	}
}

// A limited cycle applies the starts that fit in the GPUs free now, in the
// allocator's order, and defers every change to a running job and every
// start that needs GPUs a running job holds, until the rate limit allows.
func TestLimitedCycleDefersChangesToRunningJobs(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 4, "b": 4}}
	c, port := newTestCore(t, alloc, 3)
	ctx := context.Background()
	c.Submit(t0, spec("a", 1, 8, t0))
	c.Submit(t0, spec("b", 1, 8, t0.Add(time.Second)))
	if _, err := c.Cycle(ctx, t0); err != nil {
		t.Fatal(err)
	}
	port.actions = nil

	// c and d arrive; the plan shrinks a, grows b, starts c on the free
	// node and d on what a frees.
	at := t0.Add(time.Second)
	c.Submit(at, spec("c", 4, 4, at))
	c.Submit(at, spec("d", 2, 2, at.Add(time.Second)))
	alloc.gpus = map[string]int{"a": 1, "b": 5, "c": 4, "d": 2}
	due, _ := c.Due()
	if !due.Equal(at) {
		t.Fatalf("due %v, want %v", due, at)
	}
	rep, err := c.Cycle(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Limited {
		t.Fatal("cycle within the rate limit not limited")
	}
	for _, a := range rep.Actions {
		if a.Kind != Start {
			t.Errorf("a limited cycle applied %s %s", a.Kind, a.Job)
		}
	}
	// The placer decides which of c and d goes to the free node n2; that
	// one starts, the other waits for a's GPUs.
	if len(rep.Actions) != 1 {
		t.Fatalf("applied %v, want one start", port.kinds())
	}
	started := rep.Actions[0]
	if len(started.To) != 1 || started.To[0].Node != "n2" {
		t.Fatalf("started %s on %v, want the free node n2 only", started.Job, started.To)
	}
	other := map[string]string{"c": "d", "d": "c"}[started.Job]
	kinds := map[string]ActionKind{}
	for _, a := range rep.Deferred {
		kinds[a.Job] = a.Kind
	}
	if kinds["a"] != Shrink || kinds["b"] != Grow || kinds[other] != Start || len(kinds) != 3 {
		t.Fatalf("deferred %v, want the shrink of a, the growth of b and the start of %s", rep.Deferred, other)
	}
	if !c.Dirty() {
		t.Fatal("not dirty with deferred changes")
	}
	if !c.StartDeferred(other) || c.StartDeferred(started.Job) {
		t.Fatalf("start deferred: %s %v, %s %v; want true, false", other, c.StartDeferred(other), started.Job, c.StartDeferred(started.Job))
	}
	// No waiting job fits in the free GPUs now: the next cycle is the rate
	// limit's, even after another event.
	c.Submit(at.Add(time.Second), spec("e", 3, 3, at.Add(2*time.Second)))
	if due, _ := c.Due(); !due.Equal(t0.Add(DefaultRateLimit)) {
		t.Fatalf("due %v with no free GPU, want the rate limit %v", due, t0.Add(DefaultRateLimit))
	}
	port.actions = nil
	rep, err = c.Cycle(ctx, t0.Add(DefaultRateLimit))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Limited || len(rep.Deferred) != 0 {
		t.Fatalf("full cycle: limited %v, deferred %v", rep.Limited, rep.Deferred)
	}
	if got, want := port.kinds(), []string{"shrink:a", "start:" + other, "grow:b"}; !equal(got, want) {
		t.Fatalf("full cycle applied %v, want %v", got, want)
	}
	if c.Dirty() || c.StartDeferred(other) {
		t.Errorf("after the full cycle: dirty %v, start of %s deferred %v", c.Dirty(), other, c.StartDeferred(other))
	}
}

// Limited cycles are spaced by the start interval, so a burst of
// submissions is decided in few cycles; the rate limit is never exceeded
// for running jobs.
func TestLimitedCyclesAreSpaced(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{}}
	c, _ := newTestCore(t, alloc, 1)
	ctx := context.Background()
	if _, err := c.Cycle(ctx, t0); err != nil {
		t.Fatal(err)
	}
	c.Submit(t0.Add(100*time.Millisecond), spec("a", 1, 1, t0))
	if due, _ := c.Due(); !due.Equal(t0.Add(DefaultStartInterval)) {
		t.Fatalf("due %v, want one start interval after the last cycle", due)
	}
	c.SetRateLimit(200 * time.Millisecond)
	if due, _ := c.Due(); !due.Equal(t0.Add(200 * time.Millisecond)) {
		t.Fatalf("due %v, want the rate limit when it comes before the start interval", due)
	}
}

// A job too large for the free GPUs does not make cycles run before the
// rate limit; one that fits does, and an unchanged state asks for none.
func TestCanStartCountsFreeGPUsOnSchedulableNodes(t *testing.T) {
	tests := []struct {
		name     string
		minimum  int
		per      int // GPUs per worker of the new job, 0 for 1
		cordon   bool
		limited  bool
		occupied int
	}{
		{name: "fits", minimum: 4, limited: true},
		{name: "workers of two GPUs fit", minimum: 2, per: 2, limited: true},
		{name: "workers of two GPUs too large", minimum: 3, per: 2},
		{name: "a worker of two GPUs beside a running job", minimum: 1, per: 2, occupied: 2, limited: true},
		{name: "a worker of four GPUs beside a running job", minimum: 1, per: 4, occupied: 2},
		{name: "a worker of three GPUs in three free", minimum: 1, per: 3, occupied: 1, limited: true},
		{name: "too large", minimum: 5},
		{name: "fits but the free node is cordoned", minimum: 4, cordon: true},
		{name: "fits beside a running job", minimum: 2, occupied: 2, limited: true},
		{name: "too large beside a running job", minimum: 3, occupied: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alloc := &fixedAlloc{gpus: map[string]int{"run": 4 + tt.occupied}}
			c, _ := newTestCore(t, alloc, 2)
			ctx := context.Background()
			c.Submit(t0, spec("run", 1, 8, t0))
			if _, err := c.Cycle(ctx, t0); err != nil {
				t.Fatal(err)
			}
			if tt.cordon {
				n := c.Nodes()[1]
				n.Cordoned = true
				c.AddNode(t0, n)
				if _, err := c.Cycle(ctx, t0.Add(DefaultRateLimit)); err != nil {
					t.Fatal(err)
				}
			}
			if j, _ := c.Job("run"); j.State.GPUs != 4+tt.occupied && !tt.cordon {
				t.Fatalf("setup: run holds %d GPUs", j.State.GPUs)
			}
			last := c.NextFull()
			at := last.Add(-DefaultRateLimit).Add(time.Second)
			js := spec("new", tt.minimum, tt.minimum, at)
			js.GPUsPerWorker = tt.per
			c.Submit(at, js)
			due, _ := c.Due()
			if got := due.Before(last); got != tt.limited {
				t.Fatalf("due %v (rate limit %v): before the rate limit %v, want %v", due, last, got, tt.limited)
			}
		})
	}
}

// On the live loop's clock: a job submitted on an idle cluster runs one
// start interval after the last cycle, not a rate limit later.
func TestLoopStartsJobOnIdleClusterWithinStartInterval(t *testing.T) {
	alloc := &fixedAlloc{}
	c, _ := newTestCore(t, alloc, 1)
	loop, clk, cycles := startLoop(t, c)
	ctx := context.Background()
	waitFor(t, func() bool { return cycles.Load() == 1 }) // the nodes' cycle
	submit := func(c *Core) {
		alloc.gpus = map[string]int{"a": 2} // on the loop's goroutine, as the allocator is read
		_ = c.Submit(clk.Now(), spec("a", 1, 2, clk.Now()))
	}
	if err := loop.Do(ctx, submit); err != nil {
		t.Fatal(err)
	}
	waitFor(t, clk.HasWaiters)
	clk.Step(DefaultStartInterval)
	waitFor(t, func() bool { return cycles.Load() == 2 })
	var j model.Job
	if err := loop.Do(ctx, func(c *Core) { j, _ = c.Job("a") }); err != nil {
		t.Fatal(err)
	}
	if j.State.Status != model.StatusRunning || !j.State.FirstStart.Equal(t0.Add(DefaultStartInterval)) {
		t.Fatalf("job %s since %v, want Running since %v (the rate limit is %v)", j.State.Status, j.State.FirstStart, t0.Add(DefaultStartInterval), DefaultRateLimit)
	}
}

// A team below its guarantee with a job waiting, while another team
// borrows, gets its guarantee in the next cycle, which the rate limit
// does not hold: it shrinks the borrower and starts the waiting job. The
// override happens once for each new set of owed jobs; a job that joins
// a team already at its guarantee waits for the rate limit.
func TestReclaimIsNotHeldByTheRateLimit(t *testing.T) {
	teams, err := algorithm.NewTeams(func() (algorithm.Allocator, error) {
		return algorithm.Builtin().New(algorithm.NameElasticFIFO, nil)
	}, []algorithm.Quota{{Team: "team-a", Guarantee: 8, Weight: 1}, {Team: "team-b", Guarantee: 8, Weight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	port := &recordPort{}
	c, err := NewCore(Config{GPUType: "v100", Allocator: teams, Placer: placement.NewGreedy(), Port: port, RateLimit: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := c.AddNode(t0, model.Node{Name: fmt.Sprintf("n%d", i), GPUs: 4}); err != nil {
			t.Fatal(err)
		}
	}
	inTeam := func(s model.JobSpec, team string) model.JobSpec { s.Team = team; return s }
	ctx := context.Background()
	if err := c.Submit(t0, inTeam(spec("a1", 1, 16, t0), "team-a")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cycle(ctx, t0); err != nil {
		t.Fatal(err)
	}
	if j, _ := c.Job("a1"); j.State.GPUs != 16 {
		t.Fatalf("a1 borrows %d GPUs, want all 16", j.State.GPUs)
	}
	port.actions = nil

	at := t0.Add(time.Minute)
	if err := c.Submit(at, inTeam(spec("b1", 1, 8, at), "team-b")); err != nil {
		t.Fatal(err)
	}
	due, ok := c.Due()
	if !ok || due.After(at.Add(DefaultStartInterval)) {
		t.Fatalf("team-b owed its guarantee: due %v %v, want by %v (not the rate limit's %v)", due, ok, at.Add(DefaultStartInterval), c.NextFull())
	}
	rep, err := c.Cycle(ctx, due)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Limited || !rep.Reclaim || len(rep.Deferred) != 0 {
		t.Fatalf("limited %v, reclaim %v, deferred %v; want a reclaiming full cycle", rep.Limited, rep.Reclaim, rep.Deferred)
	}
	if got, want := port.kinds(), []string{"shrink:a1", "start:b1"}; !equal(got, want) {
		t.Fatalf("actions %v, want %v", got, want)
	}
	for name, want := range map[string]int{"a1": 8, "b1": 8} {
		if j, _ := c.Job(name); j.State.GPUs != want {
			t.Errorf("%s holds %d GPUs, want %d", name, j.State.GPUs, want)
		}
	}

	// b2 joins team-b, which holds its guarantee: nothing is owed, and
	// no GPU is free, so it waits for the rate limit.
	at = at.Add(time.Minute)
	if err := c.Submit(at, inTeam(spec("b2", 1, 8, at), "team-b")); err != nil {
		t.Fatal(err)
	}
	if due, ok := c.Due(); !ok || !due.Equal(c.NextFull()) {
		t.Fatalf("b2 in a team at its guarantee: due %v %v, want the rate limit's %v", due, ok, c.NextFull())
	}
}
