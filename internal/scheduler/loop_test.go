package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	vodaclock "github.com/vodascheduler/voda/internal/clock"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
)

// startLoop runs a loop on a fake clock until the test ends.
func startLoop(t *testing.T, c *Core) (*Loop, *testingclock.FakeClock, *atomic.Int64) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	loop := NewLoop(c, clk, nil)
	var cycles atomic.Int64
	loop.OnCycle = func(context.Context, CycleReport, error) { cycles.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return loop, clk, &cycles
}

// A burst of thousands of changes inside one rate-limit window must neither
// deadlock nor lose any (the original deadlocked past 100 events).
func TestDefect_BurstOfEventsNoDeadlockNoLoss(t *testing.T) {
	c, _ := newTestCore(t, &fixedAlloc{}, 4)
	loop, clk, cycles := startLoop(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const senders, perSender = 8, 1000
	burst := func(do func(c *Core, s, i int) error) {
		var wg sync.WaitGroup
		errs := make(chan error, senders)
		for s := 0; s < senders; s++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perSender; i++ {
					var err error
					if derr := loop.Do(ctx, func(c *Core) { err = do(c, s, i) }); derr != nil {
						err = derr
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	burst(func(c *Core, s, i int) error { return c.Submit(t0, spec(fmt.Sprintf("job-%d-%d", s, i), 1, 1, t0)) })
	var n int
	if err := loop.Do(ctx, func(c *Core) { n = c.Len() }); err != nil {
		t.Fatal(err)
	}
	if n != senders*perSender {
		t.Fatalf("core holds %d jobs, want %d", n, senders*perSender)
	}
	burst(func(c *Core, s, i int) error {
		if i%2 == 1 {
			return nil
		}
		_, err := c.Finish(t0, fmt.Sprintf("job-%d-%d", s, i), model.StatusCompleted)
		return err
	})
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
// The job is in the core before the loop starts: submitted through the
// loop, it raced the loop's first cycle (the nodes added make one due),
// and when it lost, it started a tick late, with no service at the tick.
func TestDefect_NoBusyWaitSleepsUntilDue(t *testing.T) {
	c, _ := newTestCore(t, &fixedAlloc{gpus: map[string]int{"a": 1}}, 1)
	if err := c.Submit(t0, spec("a", 1, 1, t0)); err != nil {
		t.Fatal(err)
	}
	loop, clk, cycles := startLoop(t, c)
	ctx := context.Background()
	waitFor(t, func() bool { return cycles.Load() == 1 })
	waitFor(t, clk.HasWaiters)
	if got := cycles.Load(); got != 1 {
		t.Fatalf("%d cycles before the tick, want 1", got)
	}
	clk.Step(DefaultTick)
	waitFor(t, func() bool { return cycles.Load() == 2 })
	var j model.Job
	if err := loop.Do(ctx, func(c *Core) { j, _ = c.Job("a") }); err != nil {
		t.Fatal(err)
	}
	if j.State.AttainedService != DefaultTick.Seconds() {
		t.Errorf("attained service %v after one tick, want %v", j.State.AttainedService, DefaultTick.Seconds())
	}
}

// With the rate limit off and an action that keeps failing, the loop ran
// about 160,000 cycles a second and ignored its cancelled context. Now
// failed cycles back off (doubling from RetryMin), even with no rate limit.
func TestDefect_FailingActionsBackOffWithoutRateLimit(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 1}}
	port := &recordPort{fail: map[string]bool{"a": true}}
	c, err := NewCore(Config{GPUType: "v100", Allocator: alloc, Placer: placement.NewGreedy(), Port: port, RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddNode(t0, model.Node{Name: "n0", GPUs: 4}); err != nil {
		t.Fatal(err)
	}
	if err := c.Submit(t0, spec("a", 1, 1, t0)); err != nil {
		t.Fatal(err)
	}
	loop, clk, cycles := startLoop(t, c)
	waitFor(t, func() bool { return cycles.Load() == 1 })
	waitFor(t, clk.HasWaiters)
	time.Sleep(20 * time.Millisecond) // a spinning loop would cycle meanwhile
	if got := cycles.Load(); got != 1 {
		t.Fatalf("%d cycles before the retry backoff passed, want 1", got)
	}
	// Backoffs of 1 s, 2 s, 4 s: each retry waits for its own.
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		clk.Step(wait - time.Millisecond)
		time.Sleep(5 * time.Millisecond)
		if got := cycles.Load(); got != int64(i+1) {
			t.Fatalf("retry %d ran before its %v backoff", i+1, wait)
		}
		clk.Step(time.Millisecond)
		waitFor(t, func() bool { return cycles.Load() == int64(i+2) })
		waitFor(t, clk.HasWaiters)
	}
	// Once the action succeeds, the streak ends.
	port.mu.Lock()
	port.fail = nil
	port.mu.Unlock()
	clk.Step(8 * time.Second)
	waitFor(t, func() bool { return cycles.Load() == 5 })
	var j model.Job
	if err := loop.Do(context.Background(), func(c *Core) { j, _ = c.Job("a") }); err != nil {
		t.Fatal(err)
	}
	if j.State.GPUs != 1 {
		t.Fatalf("a holds %d GPUs after the action succeeded, want 1", j.State.GPUs)
	}
}

// Run returns as soon as its context ends, even while cycles keep failing,
// and from then on Do answers ErrStopped instead of blocking forever
// (onDone used to hang the shutdown that way).
func TestDefect_DoAfterStopReturnsErrStopped(t *testing.T) {
	c, _ := newTestCore(t, &fixedAlloc{}, 1)
	loop := NewLoop(c, testingclock.NewFakeClock(t0), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	if err := loop.Do(context.Background(), func(*Core) {}); err != nil {
		t.Fatalf("Do on a running loop: %v", err)
	}
	// A call waiting when the loop stops is released.
	in, block := make(chan struct{}), make(chan struct{})
	go func() { _ = loop.Do(context.Background(), func(*Core) { close(in); <-block }) }()
	<-in
	cancel()
	close(block)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	ran := false
	err := loop.Do(context.Background(), func(*Core) { ran = true })
	if !errors.Is(err, ErrStopped) || ran {
		t.Fatalf("Do after Run returned: err %v, ran %v; want ErrStopped and not run", err, ran)
	}
}

// A caller that gives up before the loop takes its function is told so,
// and the function never runs.
func TestDoAbandonedCallNeverRuns(t *testing.T) {
	c, _ := newTestCore(t, &fixedAlloc{}, 1)
	loop := NewLoop(c, testingclock.NewFakeClock(t0), nil) // not running yet
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := atomic.Bool{}
	if err := loop.Do(ctx, func(*Core) { ran.Store(true) }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with a cancelled context: %v, want context.Canceled", err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	go loop.Run(runCtx)
	if err := loop.Do(context.Background(), func(*Core) {}); err != nil {
		t.Fatal(err)
	}
	if ran.Load() {
		t.Fatal("an abandoned call ran")
	}
}

// Busy reports how long the loop has been inside one call, by its watch.
func TestBusyMeasuresTheCurrentCall(t *testing.T) {
	c, _ := newTestCore(t, &fixedAlloc{}, 1)
	clk := testingclock.NewFakeClock(t0)
	watch := testingclock.NewFakePassiveClock(t0)
	loop := NewLoop(c, clk, watch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go loop.Run(ctx)
	if got := loop.Busy(); got != 0 {
		t.Fatalf("Busy = %v while idle", got)
	}
	in, release := make(chan struct{}), make(chan struct{})
	go func() { _ = loop.Do(ctx, func(*Core) { close(in); <-release }) }()
	<-in
	watch.SetTime(t0.Add(3 * time.Minute))
	if got := loop.Busy(); got != 3*time.Minute {
		t.Errorf("Busy = %v inside a call started 3m ago, want 3m", got)
	}
	close(release)
	waitFor(t, func() bool { return loop.Busy() == 0 })
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

// BeforeCycle runs right before every cycle, at the cycle's time, and
// what it sets is what the cycle decides on: estimates handed to the core
// there reach the allocator of that cycle, not of the next.
func TestBeforeCycleRunsBeforeEachCycle(t *testing.T) {
	c, _ := newTestCore(t, &fixedAlloc{gpus: map[string]int{"a": 1}}, 1)
	clk := testingclock.NewFakeClock(t0)
	loop := NewLoop(c, clk, nil)
	var mu sync.Mutex
	var before []time.Time
	var seen []float64 // the remaining time each cycle's snapshot held
	loop.BeforeCycle = func(_ context.Context, now time.Time) {
		mu.Lock()
		defer mu.Unlock()
		before = append(before, now)
		_ = c.SetEstimates("a", model.Estimates{RemainingSeconds: float64(len(before)), Speedup: []float64{0, 1}})
	}
	var cycles atomic.Int64
	loop.OnCycle = func(_ context.Context, rep CycleReport, _ error) {
		mu.Lock()
		defer mu.Unlock()
		j, _ := c.Job("a")
		seen = append(seen, j.Est.RemainingSeconds)
		if len(before) != len(seen) || !before[len(before)-1].Equal(rep.Time) {
			t.Errorf("cycle %d at %v: BeforeCycle ran %d times, last at %v", len(seen), rep.Time, len(before), before)
		}
		cycles.Add(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := loop.Do(ctx, func(c *Core) { _ = c.Submit(t0, spec("a", 1, 1, t0)) }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return cycles.Load() == 1 })
	waitFor(t, clk.HasWaiters)
	clk.Step(DefaultTick)
	waitFor(t, func() bool { return cycles.Load() == 2 })
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Errorf("the cycles saw remaining times %v, want [1 2]: the estimates set just before each", seen)
	}
}

// With Hold (a simulated cluster's scaled clock), a loop that wakes late
// still runs each cycle at its due time: the clock stops there until the
// cycle is done, so the lateness costs the jobs nothing.
func TestHoldRunsLateCyclesAtTheirDueTime(t *testing.T) {
	c, _ := newTestCore(t, &fixedAlloc{gpus: map[string]int{"a": 1}}, 1)
	if err := c.Submit(t0, spec("a", 1, 1, t0)); err != nil {
		t.Fatal(err)
	}
	real := testingclock.NewFakeClock(t0)
	clk := vodaclock.NewScaled(real, t0, 1)
	loop := NewLoop(c, clk, real)
	loop.Hold = clk.HoldAt
	var mu sync.Mutex
	var times []time.Time
	loop.OnCycle = func(_ context.Context, rep CycleReport, _ error) {
		mu.Lock()
		defer mu.Unlock()
		times = append(times, rep.Time)
	}
	cycles := func() int { mu.Lock(); defer mu.Unlock(); return len(times) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, func() bool { return cycles() == 1 })
	waitFor(t, real.HasWaiters)
	// Three ticks of wall time pass before the loop runs again: the
	// clock stood at the due cycle, and the two ticks late are not
	// counted.
	real.Step(3 * DefaultTick)
	waitFor(t, func() bool { return cycles() == 2 })
	waitFor(t, real.HasWaiters)
	real.Step(DefaultTick)
	waitFor(t, func() bool { return cycles() == 3 })
	var j model.Job
	if err := loop.Do(ctx, func(c *Core) { j, _ = c.Job("a") }); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, at := range times {
		if want := t0.Add(time.Duration(i) * DefaultTick); !at.Equal(want) {
			t.Errorf("cycle %d ran at %v, want its due time %v", i, at, want)
		}
	}
	if want := 2 * DefaultTick.Seconds(); j.State.AttainedService != want {
		t.Errorf("attained service %v after two ticks, want %v", j.State.AttainedService, want)
	}
}
