package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
)

var t0 = time.Unix(1_000_000, 0).UTC()

// fixedAlloc hands out the GPUs in its table, in name order.
type fixedAlloc struct {
	gpus    map[string]int
	changes []model.QueueChange
}

func (f *fixedAlloc) Name() string { return "fixed" }

func (f *fixedAlloc) Allocate(s *model.Snapshot) (model.Allocation, error) {
	a := model.Allocation{GPUs: make(map[string]int, len(s.Jobs))}
	for _, j := range s.Jobs {
		a.Order = append(a.Order, j.Spec.Name)
	}
	for name, g := range f.gpus {
		if g > 0 {
			a.GPUs[name] = g
		}
	}
	return a, nil
}

func (f *fixedAlloc) Requeue(*model.Snapshot) []model.QueueChange { return f.changes }

type recordPort struct {
	mu      sync.Mutex
	actions []Action
	fail    map[string]bool
}

func (p *recordPort) Apply(_ context.Context, a Action) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail[a.Job] {
		return errors.New("injected failure")
	}
	p.actions = append(p.actions, a)
	return nil
}

func (p *recordPort) kinds() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, a := range p.actions {
		out = append(out, a.Kind.String()+":"+a.Job)
	}
	return out
}

func newTestCore(t *testing.T, alloc *fixedAlloc, nodes int) (*Core, *recordPort) {
	t.Helper()
	port := &recordPort{}
	c, err := NewCore(Config{GPUType: "v100", Allocator: alloc, Placer: placement.NewGreedy(), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < nodes; i++ {
		if err := c.AddNode(t0, model.Node{Name: fmt.Sprintf("n%d", i), GPUs: 4}); err != nil {
			t.Fatal(err)
		}
	}
	return c, port
}

func spec(name string, minW, maxW int, at time.Time) model.JobSpec {
	return model.JobSpec{Name: name, GPUType: "v100", MinWorkers: minW, MaxWorkers: maxW, RequestedWorkers: minW, SubmitTime: at}
}

func equal(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestCycleAppliesHaltShrinkMigrateStartGrow(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 4, "b": 4, "c": 2}}
	c, port := newTestCore(t, alloc, 3)
	for i, n := range []string{"a", "b", "c"} {
		if err := c.Submit(t0, spec(n, 1, 8, t0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Cycle(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	if got, want := port.kinds(), []string{"start:a", "start:b", "start:c"}; !equal(got, want) {
		t.Fatalf("first cycle actions = %v, want %v", got, want)
	}
	port.actions = nil
	// a halts, b shrinks, c grows, d starts.
	alloc.gpus = map[string]int{"b": 2, "c": 6, "d": 2}
	if err := c.Submit(t0.Add(time.Minute), spec("d", 2, 2, t0.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Cycle(context.Background(), t0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := port.kinds(), []string{"halt:a", "shrink:b", "start:d", "grow:c"}; !equal(got, want) {
		t.Fatalf("second cycle actions = %v, want %v", got, want)
	}
	if rep.Allocated != 10 {
		t.Errorf("allocated = %d, want 10", rep.Allocated)
	}
	a, _ := c.Job("a")
	if a.State.Status != model.StatusWaiting || a.State.GPUs != 0 || a.State.Placement != nil {
		t.Errorf("halted job state = %+v", a.State)
	}
	// a held 4 GPUs for 2 minutes.
	if a.State.AttainedService != 480 {
		t.Errorf("attained service = %v, want 480", a.State.AttainedService)
	}
	b, _ := c.Job("b")
	if b.State.Restarts != 1 || b.State.GPUs != 2 {
		t.Errorf("shrunk job: restarts %d gpus %d, want 1 and 2", b.State.Restarts, b.State.GPUs)
	}
}

func TestUnchangedAllocationCausesNoActions(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 3, "b": 5}}
	c, port := newTestCore(t, alloc, 2)
	c.Submit(t0, spec("a", 1, 8, t0))
	c.Submit(t0, spec("b", 1, 8, t0.Add(time.Second)))
	for i := 0; i < 5; i++ {
		if _, err := c.Cycle(context.Background(), t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(port.actions); n != 2 {
		t.Fatalf("%d actions over five identical cycles, want the 2 starts: %v", n, port.kinds())
	}
}

func TestInvariantViolationAppliesNothing(t *testing.T) {
	tests := map[string]map[string]int{
		"more GPUs than the cluster": {"a": 8, "b": 8},
		"above max":                  {"a": 9},
		"below min":                  {"b": 1},
		"unknown job":                {"ghost": 1},
	}
	for name, gpus := range tests {
		t.Run(name, func(t *testing.T) {
			c, port := newTestCore(t, &fixedAlloc{gpus: gpus}, 2)
			c.Submit(t0, spec("a", 1, 8, t0))
			c.Submit(t0, spec("b", 2, 8, t0))
			_, err := c.Cycle(context.Background(), t0)
			var inv *model.InvariantError
			if !errors.As(err, &inv) {
				t.Fatalf("err = %v, want an InvariantError", err)
			}
			if len(port.actions) != 0 {
				t.Fatalf("applied %v despite the violation", port.kinds())
			}
		})
	}
}

func TestFailedActionIsRetried(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 2}}
	c, port := newTestCore(t, alloc, 1)
	c.Submit(t0, spec("a", 1, 4, t0))
	port.fail = map[string]bool{"a": true}
	rep, err := c.Cycle(context.Background(), t0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.FailedActions != 1 || !c.Dirty() {
		t.Fatalf("failed actions %d, dirty %v; want 1 and true", rep.FailedActions, c.Dirty())
	}
	port.fail = nil
	if _, err := c.Cycle(context.Background(), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if j, _ := c.Job("a"); j.State.GPUs != 2 {
		t.Fatalf("job holds %d GPUs after the retry, want 2", j.State.GPUs)
	}
}

func TestDueHonoursRateLimitAndTick(t *testing.T) {
	alloc := &fixedAlloc{}
	c, _ := newTestCore(t, alloc, 1)
	if at, ok := c.Due(); !ok || !at.Equal(t0) {
		t.Fatalf("node added: due %v %v, want now", at, ok)
	}
	c.Cycle(context.Background(), t0)
	if _, ok := c.Due(); ok {
		t.Fatal("due with no jobs and no event")
	}
	// A job that cannot start on the free GPUs waits for the rate limit.
	c.Submit(t0.Add(time.Second), spec("a", 8, 8, t0))
	if at, _ := c.Due(); !at.Equal(t0.Add(DefaultRateLimit)) {
		t.Fatalf("after an event due at %v, want the rate limit %v", at, t0.Add(DefaultRateLimit))
	}
	c.Cycle(context.Background(), t0.Add(DefaultRateLimit))
	if at, _ := c.Due(); !at.Equal(t0.Add(DefaultRateLimit + DefaultTick)) {
		t.Fatalf("idle due at %v, want one tick later", at)
	}
	c.SetRateLimit(-1)
	c.Submit(t0.Add(time.Minute), spec("b", 1, 1, t0))
	if at, _ := c.Due(); !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("without rate limit due at %v, want now", at)
	}
}

func TestRequeueMovesQueues(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 1}, changes: []model.QueueChange{{Job: "a", Queue: 1}}}
	c, _ := newTestCore(t, alloc, 1)
	c.Submit(t0, spec("a", 1, 1, t0))
	rep, err := c.Cycle(context.Background(), t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	j, _ := c.Job("a")
	if rep.QueueChanges != 1 || j.State.Queue != 1 || !j.State.QueueSince.Equal(t0.Add(time.Minute)) {
		t.Fatalf("queue changes %d, job queue %d since %v", rep.QueueChanges, j.State.Queue, j.State.QueueSince)
	}
	alloc.changes = []model.QueueChange{{Job: "ghost", Queue: 0}}
	if _, err := c.Cycle(context.Background(), t0.Add(2*time.Minute)); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("requeue of an unknown job: err = %v", err)
	}
}

func TestRemoveNodeReplacesItsWorkers(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 6}}
	c, port := newTestCore(t, alloc, 3)
	c.Submit(t0, spec("a", 1, 8, t0))
	c.Cycle(context.Background(), t0)
	j, _ := c.Job("a")
	lost := j.State.Placement[0].Node
	if err := c.RemoveNode(t0.Add(time.Minute), lost); err != nil {
		t.Fatal(err)
	}
	port.actions = nil
	c.Cycle(context.Background(), t0.Add(time.Minute))
	j, _ = c.Job("a")
	if j.State.GPUs != 6 {
		t.Fatalf("after node loss job holds %d GPUs, want 6", j.State.GPUs)
	}
	for _, nw := range j.State.Placement {
		if nw.Node == lost {
			t.Fatalf("workers still on removed node %s: %v", lost, j.State.Placement)
		}
	}
	if got := port.kinds(); !equal(got, []string{"grow:a"}) {
		t.Fatalf("actions %v, want the job grown back", got)
	}
}

// TestCordonedNodeKeepsWorkersTakesNoNew: a cordoned node keeps the
// workers it runs, and a new job is placed elsewhere even when the
// cordoned node has free GPUs.
func TestCordonedNodeKeepsWorkersTakesNoNew(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 2, "c": 3}}
	c, port := newTestCore(t, alloc, 2)
	c.Submit(t0, spec("a", 1, 8, t0))
	c.Submit(t0, spec("c", 1, 8, t0))
	c.Cycle(context.Background(), t0)
	ja, _ := c.Job("a")
	if len(ja.State.Placement) != 1 {
		t.Fatalf("placement %v: want one node", ja.State.Placement)
	}
	home := ja.State.Placement[0].Node
	now := t0.Add(time.Minute)
	if err := c.AddNode(now, model.Node{Name: home, GPUs: 4, Cordoned: true}); err != nil {
		t.Fatal(err)
	}
	if n := c.Nodes(); len(n) != 2 || n[0].GPUs != 4 {
		t.Fatalf("Nodes() = %v: want both, with all their GPUs", n)
	}
	// Uncordoned, the home node (2 free) would be the placer's choice
	// over the other (1 free).
	alloc.gpus["b"] = 1
	c.Submit(now, spec("b", 1, 8, now))
	port.actions = nil
	c.Cycle(context.Background(), now)
	ja, _ = c.Job("a")
	jb, _ := c.Job("b")
	if !ja.State.Placement.Equal(model.JobPlacement{{Node: home, Workers: 2}}) {
		t.Errorf("job a moved off the cordoned node: %v", ja.State.Placement)
	}
	for _, nw := range jb.State.Placement {
		if nw.Node == home {
			t.Errorf("new job b placed on cordoned node %s: %v", home, jb.State.Placement)
		}
	}
	if got := port.kinds(); !equal(got, []string{"start:b"}) {
		t.Errorf("actions %v, want only b started", got)
	}
	if snap := c.Snapshot(now); snap.Nodes[0].GPUs+snap.Nodes[1].GPUs != 6 {
		t.Errorf("snapshot nodes %v: want the cordoned node at the 2 GPUs in use", snap.Nodes)
	}
}

func TestFinishFreesGPUs(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 4, "b": 4}}
	c, port := newTestCore(t, alloc, 1)
	c.Submit(t0, spec("a", 4, 4, t0))
	c.Submit(t0, spec("b", 4, 4, t0.Add(time.Second)))
	alloc.gpus = map[string]int{"a": 4}
	c.Cycle(context.Background(), t0)
	if _, err := c.Finish(t0.Add(time.Minute), "a", model.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Finish(t0.Add(time.Minute), "a", model.StatusCompleted); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("second finish: err = %v, want ErrUnknownJob", err)
	}
	alloc.gpus = map[string]int{"b": 4}
	c.Cycle(context.Background(), t0.Add(time.Minute))
	if got := port.kinds(); !equal(got, []string{"start:a", "start:b"}) {
		t.Fatalf("actions %v", got)
	}
}

func TestSubmitRejectsBadAndDuplicateJobs(t *testing.T) {
	c, _ := newTestCore(t, &fixedAlloc{}, 1)
	if err := c.Submit(t0, spec("a", 3, 2, t0)); err == nil {
		t.Fatal("min > max accepted")
	}
	if err := c.Submit(t0, spec("a", 1, 2, t0)); err != nil {
		t.Fatal(err)
	}
	if err := c.Submit(t0, spec("a", 1, 2, t0)); !errors.Is(err, ErrDuplicateJob) {
		t.Fatalf("duplicate: err = %v", err)
	}
}

func TestMoved(t *testing.T) {
	p := func(kv ...any) model.JobPlacement {
		var out model.JobPlacement
		for i := 0; i < len(kv); i += 2 {
			out = append(out, model.NodeWorkers{Node: kv[i].(string), Workers: kv[i+1].(int)})
		}
		return out
	}
	tests := []struct {
		name     string
		from, to model.JobPlacement
		want     int
	}{
		{"start", nil, p("a", 2), 0},
		{"same", p("a", 2, "b", 2), p("b", 2, "a", 2), 0},
		{"grow in place", p("a", 2), p("a", 4), 0},
		{"grow elsewhere", p("a", 2), p("a", 2, "b", 2), 0},
		{"shrink", p("a", 2, "b", 2), p("a", 2), 0},
		{"migrate one", p("a", 2, "b", 2), p("a", 3, "b", 1), 1},
		{"migrate all", p("a", 4), p("b", 4), 4},
		{"grow with a move", p("a", 2, "b", 2), p("c", 6), 4},
	}
	for _, tt := range tests {
		if got := moved(tt.from, tt.to); got != tt.want {
			t.Errorf("%s: moved = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// The original leaked the GPUs of a job deleted behind its back; here a
// deletion event frees them for the next cycle.
func TestDefect_DeletionFreesGPUs(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{"a": 4}}
	c, _ := newTestCore(t, alloc, 1)
	c.Submit(t0, spec("a", 4, 4, t0))
	c.Submit(t0, spec("b", 4, 4, t0.Add(time.Second)))
	c.Cycle(context.Background(), t0)
	if _, err := c.Finish(t0.Add(time.Minute), "a", model.StatusCanceled); err != nil {
		t.Fatal(err)
	}
	alloc.gpus = map[string]int{"b": 4}
	rep, err := c.Cycle(context.Background(), t0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Allocated != 4 {
		t.Fatalf("allocated %d after the deletion, want b's 4", rep.Allocated)
	}
	if j, _ := c.Job("b"); j.State.GPUs != 4 {
		t.Fatalf("b holds %d GPUs, want 4", j.State.GPUs)
	}
}

// The original lost queues, attained service and time metrics on restart;
// a restored job keeps them (durable storage is the job service's part).
func TestDefect_RestoreKeepsQueueAndService(t *testing.T) {
	c, _ := newTestCore(t, &fixedAlloc{}, 1)
	j := model.Job{
		Spec: spec("a", 1, 4, t0),
		State: model.JobState{Status: model.StatusRunning, GPUs: 2,
			Placement:       model.JobPlacement{{Node: "n0", Workers: 2}},
			AttainedService: 7200, Queue: 1, QueueSince: t0.Add(time.Hour),
			FirstStart: t0, Restarts: 3},
	}
	if err := c.Restore(j); err != nil {
		t.Fatal(err)
	}
	got, _ := c.Job("a")
	if got.State.Queue != 1 || got.State.AttainedService != 7200 || got.State.Restarts != 3 ||
		!got.State.FirstStart.Equal(t0) || got.State.Placement.Workers() != 2 {
		t.Fatalf("restored state %+v", got.State)
	}
	if err := c.Restore(j); !errors.Is(err, ErrDuplicateJob) {
		t.Fatalf("second restore: err = %v", err)
	}
}

// TestParallelApplyKeepsKindOrder applies many starts and halts with
// ApplyParallelism: every action reaches the port once, all halts before
// any start, and the failed ones are those the port failed.
func TestParallelApplyKeepsKindOrder(t *testing.T) {
	alloc := &fixedAlloc{gpus: map[string]int{}}
	port := &recordPort{fail: map[string]bool{"j07": true}}
	c, err := NewCore(Config{GPUType: "v100", Allocator: alloc, Placer: placement.NewGreedy(), Port: port, ApplyParallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		c.AddNode(t0, model.Node{Name: fmt.Sprintf("n%d", i), GPUs: 4})
	}
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("j%02d", i)
		c.Submit(t0, spec(name, 1, 1, t0))
		if i < 10 {
			alloc.gpus[name] = 1
		}
	}
	c.Cycle(context.Background(), t0)
	// The first ten stop, the other ten start.
	alloc.gpus = map[string]int{}
	for i := 10; i < 20; i++ {
		alloc.gpus[fmt.Sprintf("j%02d", i)] = 1
	}
	port.actions = nil
	rep, err := c.Cycle(context.Background(), t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	kinds := port.kinds()
	if len(kinds) != 19 { // j07 failed in the first cycle, so it has nothing to halt
		t.Fatalf("%d actions reached the port: %v", len(kinds), kinds)
	}
	seenStart := false
	for _, k := range kinds {
		if strings.HasPrefix(k, "start:") {
			seenStart = true
		} else if seenStart {
			t.Fatalf("%s after a start: %v", k, kinds)
		}
	}
	if rep.FailedActions != 0 || len(rep.Actions) != 19 {
		t.Errorf("report: %d actions, %d failed", len(rep.Actions), rep.FailedActions)
	}
}
