package scheduler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/vodascheduler/voda/internal/model"
)

// A burst of thousands of events inside one rate-limit window must neither
// deadlock nor lose events (the original deadlocked past 100).
func TestDefect_BurstOfEventsNoDeadlockNoLoss(t *testing.T) {
	alloc := &fixedAlloc{}
	c, _ := newTestCore(t, alloc, 4)
	clk := testingclock.NewFakeClock(t0)
	loop := NewLoop(c, clk)
	var cycles atomic.Int64
	loop.OnCycle = func(CycleReport, error) { cycles.Add(1) }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go loop.Run(ctx)

	const senders, perSender = 8, 1000
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 0; i < perSender; i++ {
				loop.Notify(Event{Kind: JobArrived, Spec: spec(fmt.Sprintf("job-%d-%d", s, i), 1, 1, t0)})
			}
		}(s)
	}
	wg.Wait()
	var n int
	if err := loop.Do(ctx, func(c *Core) { n = c.Len() }); err != nil {
		t.Fatal(err)
	}
	if n != senders*perSender {
		t.Fatalf("core holds %d jobs, want %d", n, senders*perSender)
	}
	// Finish half of them in a second burst.
	for s := 0; s < senders; s++ {
		for i := 0; i < perSender; i += 2 {
			loop.Notify(Event{Kind: JobCompleted, Job: fmt.Sprintf("job-%d-%d", s, i)})
		}
	}
	if err := loop.Do(ctx, func(c *Core) { n = c.Len() }); err != nil {
		t.Fatal(err)
	}
	if n != senders*perSender/2 {
		t.Fatalf("core holds %d jobs after completions, want %d", n, senders*perSender/2)
	}
	// The clock has not moved: the rate limit allows one cycle only.
	if got := cycles.Load(); got != 1 {
		t.Fatalf("%d cycles without the clock moving, want 1", got)
	}
	clk.Step(DefaultRateLimit)
	waitFor(t, func() bool { return cycles.Load() == 2 })
}

// Without events and before the tick the loop sleeps: no cycles run.
func TestDefect_NoBusyWaitSleepsUntilDue(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 1}}
	c, _ := newTestCore(t, alloc, 1)
	clk := testingclock.NewFakeClock(t0)
	loop := NewLoop(c, clk)
	var cycles atomic.Int64
	loop.OnCycle = func(CycleReport, error) { cycles.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- loop.Run(ctx) }()
	loop.Notify(Event{Kind: JobArrived, Spec: spec("a", 1, 1, t0)})
	waitFor(t, func() bool { return cycles.Load() == 1 })
	waitFor(t, clk.HasWaiters)
	if got := cycles.Load(); got != 1 {
		t.Fatalf("%d cycles before the tick, want 1", got)
	}
	clk.Step(DefaultTick)
	waitFor(t, func() bool { return cycles.Load() == 2 })
	var j model.Job
	loop.Do(ctx, func(c *Core) { j, _ = c.Job("a") })
	if j.State.AttainedService != DefaultTick.Seconds() {
		t.Errorf("attained service %v after one tick, want %v", j.State.AttainedService, DefaultTick.Seconds())
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
}

func TestLoopReportsRejectedEvents(t *testing.T) {
	c, _ := newTestCore(t, &fixedAlloc{}, 1)
	loop := NewLoop(c, testingclock.NewFakeClock(t0))
	var mu sync.Mutex
	var rejected []Event
	loop.OnEventError = func(ev Event, err error) {
		mu.Lock()
		rejected = append(rejected, ev)
		mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go loop.Run(ctx)
	loop.Notify(Event{Kind: JobDeleted, Job: "ghost"})
	loop.Do(ctx, func(*Core) {})
	mu.Lock()
	defer mu.Unlock()
	if len(rejected) != 1 || rejected[0].Job != "ghost" {
		t.Fatalf("rejected events %v, want the ghost deletion", rejected)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
