package livecluster

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	vodaclock "github.com/vodascheduler/voda/internal/clock"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/scheduler"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func newSimPool(t *testing.T, nodes, gpus int, restart time.Duration) (*SimPool, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	c, err := New(Options{GPUType: "v100", Nodes: nodes, GPUsPerNode: gpus, RestartCost: restart, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return c, clk
}

func start(t *testing.T, c *SimPool, job string, to ...model.NodeWorkers) {
	t.Helper()
	if err := c.Apply(context.Background(), scheduler.Action{Kind: scheduler.Start, Job: job, To: to}); err != nil {
		t.Fatal(err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestNewRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{GPUType: "", Nodes: 1, GPUsPerNode: 1},
		{GPUType: "v100", Nodes: 0, GPUsPerNode: 1},
		{GPUType: "v100", Nodes: 1, GPUsPerNode: 0},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v): no error", o)
		}
	}
}

func TestNodesAreNamedAndIndexed(t *testing.T) {
	c, _ := newSimPool(t, 3, 4, 0)
	nodes := c.Nodes()
	if len(nodes) != 3 || nodes[2].Name != "v100-node-02" || nodes[2].GPUs != 4 || nodes[2].Index != 2 {
		t.Fatalf("nodes = %+v", nodes)
	}
	nodes[0].GPUs = 99
	if c.Nodes()[0].GPUs != 4 {
		t.Fatal("Nodes returned the cluster's own slice")
	}
}

func TestTrackValidatesModelAndKeepsProgress(t *testing.T) {
	c, _ := newSimPool(t, 1, 4, 0)
	err := c.Track("a", "no-such-model", 1, 1, 0)
	if err == nil || !strings.Contains(err.Error(), "unknown model") {
		t.Fatalf("Track with an unknown model: %v", err)
	}
	if err := c.Track("b", "linear", 10, 1, 0.25); err != nil {
		t.Fatal(err)
	}
	if got := c.Progress("b"); !near(got, 0.25) {
		t.Fatalf("progress %v, want 0.25", got)
	}
	// Tracking again changes nothing.
	if err := c.Track("b", "linear", 10, 1, 0.9); err != nil {
		t.Fatal(err)
	}
	if got := c.Progress("b"); !near(got, 0.25) {
		t.Fatalf("progress after a second Track %v, want 0.25", got)
	}
}

// A started job makes no progress during the restart cost, then at its
// model's rate; a halted one stops.
func TestProgressWaitsForTheRestartCost(t *testing.T) {
	c, clk := newSimPool(t, 2, 4, 30*time.Second)
	if err := c.Track("a", "linear", 10, 1, 0); err != nil { // 600 one-GPU seconds
		t.Fatal(err)
	}
	start(t, c, "a", model.NodeWorkers{Node: "v100-node-00", Workers: 2})
	clk.Step(30 * time.Second)
	if got := c.Progress("a"); got != 0 {
		t.Fatalf("progress %v during the restart, want 0", got)
	}
	clk.Step(60 * time.Second) // 2 GPUs x 60 s = 120 of 600
	if got := c.Progress("a"); !near(got, 0.2) {
		t.Fatalf("progress %v, want 0.2", got)
	}
	if err := c.Apply(context.Background(), scheduler.Action{Kind: scheduler.Halt, Job: "a"}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Hour)
	if got := c.Progress("a"); !near(got, 0.2) {
		t.Fatalf("progress %v after a halt, want it to stay 0.2", got)
	}
	if reps := c.Reports(); len(reps) != 0 {
		t.Fatalf("a halted job reports: %+v", reps)
	}
}

// A job whose workers hold G GPUs trains on workers x G of them, and
// reports them as its processes.
func TestMultiGPUWorkersTrainOnTheirGPUs(t *testing.T) {
	c, clk := newSimPool(t, 2, 8, 30*time.Second)
	if err := c.Track("a", "linear", 10, 4, 0); err != nil { // 600 one-GPU seconds
		t.Fatal(err)
	}
	start(t, c, "a", model.NodeWorkers{Node: "v100-node-00", Workers: 2})
	clk.Step(30*time.Second + 15*time.Second) // the restart, then 8 GPUs x 15 s = 120 of 600
	if got := c.Progress("a"); !near(got, 0.2) {
		t.Fatalf("progress %v, want 0.2 (two workers of four GPUs)", got)
	}
	reps := c.Reports()
	if len(reps) != 1 || reps[0].Report.Workers != 8 {
		t.Fatalf("reports %+v, want one counting 8 processes", reps)
	}
}

// Training jobs report as their rank 0 would: cumulative epochs and
// steps, workers and nodes, and a new generation with every placement;
// a job restarting does not report.
func TestReports(t *testing.T) {
	c, clk := newSimPool(t, 2, 4, 30*time.Second)
	if err := c.Track("a", "linear", 10, 1, 0); err != nil { // 600 one-GPU seconds
		t.Fatal(err)
	}
	start(t, c, "a", model.NodeWorkers{Node: "v100-node-00", Workers: 2})
	if reps := c.Reports(); len(reps) != 0 {
		t.Fatalf("reports during the restart: %+v", reps)
	}
	clk.Step(90 * time.Second) // 60 s on 2 GPUs: 120 of 600, 2 of 10 epochs
	reps := c.Reports()
	want := progress.Report{Generation: c.boot + "-1", Workers: 2, Nodes: 1, Steps: 200, Epoch: 2, TotalEpochs: 10}
	if len(reps) != 1 || reps[0].Job != "a" || !near(reps[0].Report.Epoch, want.Epoch) || reps[0].Report.Steps != want.Steps ||
		reps[0].Report.Generation != want.Generation || reps[0].Report.Workers != 2 || reps[0].Report.Nodes != 1 || reps[0].Report.TotalEpochs != 10 {
		t.Fatalf("reports %+v, want a's %+v", reps, want)
	}
	a := scheduler.Action{Kind: scheduler.Grow, Job: "a", To: model.JobPlacement{{Node: "v100-node-00", Workers: 4}, {Node: "v100-node-01", Workers: 2}}}
	if err := c.Apply(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	clk.Step(31 * time.Second)
	if reps := c.Reports(); len(reps) != 1 || reps[0].Report.Generation != c.boot+"-2" || reps[0].Report.Workers != 6 || reps[0].Report.Nodes != 2 {
		t.Fatalf("after a resize: %+v, want generation 2 on 6 workers, 2 nodes", reps)
	}
}

func TestApplyRejectsUnknownJobsAndNodes(t *testing.T) {
	c, _ := newSimPool(t, 1, 4, 0)
	a := scheduler.Action{Kind: scheduler.Start, Job: "ghost", To: model.JobPlacement{{Node: "v100-node-00", Workers: 1}}}
	if err := c.Apply(context.Background(), a); err == nil {
		t.Error("Apply to an unknown job: no error")
	}
	if err := c.Track("a", "", 1, 1, 0); err != nil {
		t.Fatal(err)
	}
	a = scheduler.Action{Kind: scheduler.Start, Job: "a", To: model.JobPlacement{{Node: "elsewhere", Workers: 1}}}
	if err := c.Apply(context.Background(), a); err == nil {
		t.Error("Apply to an unknown node: no error")
	}
}

// Run reports every finished job exactly once, and never with its lock
// held (the callback may call back into the cluster).
func TestRunReportsEachFinishOnce(t *testing.T) {
	c, clk := newSimPool(t, 1, 4, -1) // no restart cost
	for _, name := range []string{"a", "b"} {
		if err := c.Track(name, "linear", 1, 1, 0); err != nil { // 60 one-GPU seconds
			t.Fatal(err)
		}
	}
	start(t, c, "a", model.NodeWorkers{Node: "v100-node-00", Workers: 2}) // done after 30 s
	start(t, c, "b", model.NodeWorkers{Node: "v100-node-00", Workers: 1}) // done after 60 s
	var mu sync.Mutex
	var done []string
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		ended <- c.Run(ctx, func(name string, st model.Status) {
			_ = c.Progress(name) // would deadlock if called with the lock held
			mu.Lock()
			done = append(done, name+":"+string(st))
			mu.Unlock()
		})
	}()
	reported := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), done...)
	}
	waitUntil(t, clk.HasWaiters)
	clk.Step(30 * time.Second)
	waitUntil(t, func() bool { return len(reported()) == 1 })
	waitUntil(t, clk.HasWaiters)
	clk.Step(30 * time.Second)
	waitUntil(t, func() bool { return len(reported()) == 2 })
	// Nothing more is reported while the finished jobs keep their GPUs.
	c.signal()
	clk.Step(time.Hour)
	time.Sleep(20 * time.Millisecond)
	if got := reported(); len(got) != 2 || got[0] != "a:Completed" || got[1] != "b:Completed" {
		t.Fatalf("reports %v, want a then b Completed once each", got)
	}
	cancel()
	if err := <-ended; err != context.Canceled {
		t.Fatalf("Run returned %v", err)
	}
}

func TestModelsAreSortedAndIncludeTheDefault(t *testing.T) {
	m := Models()
	found := false
	for i, name := range m {
		if i > 0 && m[i-1] >= name {
			t.Fatalf("models not sorted: %v", m)
		}
		found = found || name == DefaultModel
	}
	if !found {
		t.Fatalf("models %v lack the default %s", m, DefaultModel)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRunReportsJobsDoneTogetherAtOnce: jobs whose work ends at the same
// time are reported together, each from a goroutine of its own, so that
// a scheduler can finish them in one turn. Reported one after another,
// each waiting for the last, the first report here would wait forever for
// the others (until the test's deadline).
func TestRunReportsJobsDoneTogetherAtOnce(t *testing.T) {
	c, clk := newSimPool(t, 1, 4, -1)
	names := []string{"a", "b", "c", "d"}
	for _, name := range names {
		if err := c.Track(name, "linear", 1, 1, 0); err != nil {
			t.Fatal(err)
		}
		start(t, c, name, model.NodeWorkers{Node: "v100-node-00", Workers: 1}) // all done after 60 s
	}
	var arrived sync.WaitGroup
	arrived.Add(len(names))
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var together atomic.Int32
	go func() {
		_ = c.Run(ctx, func(string, model.Status) {
			arrived.Done()
			select { // every report waits for all of them, as a scheduler's turn would
			case <-all:
				together.Add(1)
			case <-time.After(30 * time.Second):
			}
		})
	}()
	waitUntil(t, clk.HasWaiters)
	clk.Step(time.Minute)
	waitUntil(t, func() bool { return together.Load() == int32(len(names)) })
}

// A job that ended while nobody looked (a busy process wakes late) ends
// at the instant its work was done, not when the cluster noticed.
func TestEndedAtIsWhenTheWorkEnded(t *testing.T) {
	c, clk := newSimPool(t, 1, 4, 30*time.Second)
	if err := c.Track("a", "linear", 1, 1, 0); err != nil { // 60 one-GPU seconds
		t.Fatal(err)
	}
	start(t, c, "a", model.NodeWorkers{Node: "v100-node-00", Workers: 2}) // the restart, then 30 s
	if _, ok := c.EndedAt("a"); ok {
		t.Fatal("EndedAt of a running job")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reported := make(chan string, 1)
	go func() { _ = c.Run(ctx, func(name string, _ model.Status) { reported <- name }) }()
	waitUntil(t, clk.HasWaiters)
	clk.Step(10 * time.Minute) // woken 9 minutes late
	select {
	case <-reported:
	case <-time.After(10 * time.Second):
		t.Fatal("the job's end was not reported")
	}
	if at, ok := c.EndedAt("a"); !ok || !at.Equal(t0.Add(60*time.Second)) {
		t.Fatalf("EndedAt = %v, %v; want %v", at, ok, t0.Add(60*time.Second))
	}
	if _, ok := c.EndedAt("ghost"); ok {
		t.Error("EndedAt of an unknown job")
	}

	// Another caller (here a progress read; on the server, the reports)
	// steps the job past its end before Run looks: the end stays exact.
	c, clk = newSimPool(t, 1, 4, 30*time.Second)
	if err := c.Track("b", "linear", 1, 1, 0); err != nil {
		t.Fatal(err)
	}
	start(t, c, "b", model.NodeWorkers{Node: "v100-node-00", Workers: 2})
	clk.Step(10 * time.Minute)
	if p := c.Progress("b"); p != 1 {
		t.Fatalf("progress %v 10 minutes on, want 1", p)
	}
	if at, ok := c.EndedAt("b"); !ok || !at.Equal(t0.Add(60*time.Second)) {
		t.Fatalf("EndedAt after a progress read = %v, %v; want %v", at, ok, t0.Add(60*time.Second))
	}
}

// On a clock that can be held (the server's), Run stops it at the next
// job's end: woken late, it reports the end with the clock still there,
// so the scheduler frees the job's GPUs at that instant.
func TestRunHoldsTheClockAtTheNextEnd(t *testing.T) {
	real := testingclock.NewFakeClock(t0)
	clk := vodaclock.NewScaled(real, t0, 1)
	c, err := New(Options{GPUType: "v100", Nodes: 1, GPUsPerNode: 4, RestartCost: 30 * time.Second, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Track("a", "linear", 1, 1, 0); err != nil { // 60 one-GPU seconds
		t.Fatal(err)
	}
	start(t, c, "a", model.NodeWorkers{Node: "v100-node-00", Workers: 2}) // the restart, then 30 s
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan time.Time, 1)
	go func() { _ = c.Run(ctx, func(string, model.Status) { seen <- clk.Now() }) }()
	waitUntil(t, real.HasWaiters)
	real.Step(10 * time.Minute) // woken 9 minutes late
	select {
	case at := <-seen:
		if want := t0.Add(60 * time.Second); !at.Equal(want) {
			t.Errorf("the clock read %v when the end was reported, want it held at the end, %v", at, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job's end was not reported")
	}
}

// Nodes of one GPU type may differ in size: More's follow the first
// group's, named and indexed on; a group of no node or no GPU is refused.
func TestNodesOfSeveralSizes(t *testing.T) {
	c, err := New(Options{GPUType: "v100", Nodes: 1, GPUsPerNode: 8, More: []NodeSize{{Nodes: 2, GPUs: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range c.Nodes() {
		got = append(got, fmt.Sprintf("%s:%d:%d", n.Name, n.GPUs, n.Index))
	}
	if want := "[v100-node-00:8:0 v100-node-01:4:1 v100-node-02:4:2]"; fmt.Sprint(got) != want {
		t.Errorf("nodes %v, want %s", got, want)
	}
	if _, err := New(Options{GPUType: "v100", Nodes: 1, GPUsPerNode: 8, More: []NodeSize{{Nodes: 2, GPUs: 0}}}); err == nil || !strings.Contains(err.Error(), "2 x 0") {
		t.Errorf("a group of nodes without GPUs: %v, want an error naming it", err)
	}
}
