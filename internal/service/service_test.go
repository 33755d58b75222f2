package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	bolt "go.etcd.io/bbolt"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/store"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

const gpuType = "v100"

// fakeBackend records what the service asks of it and reports job ends
// when a test says so.
type fakeBackend struct {
	mu       sync.Mutex
	nodes    []model.Node
	nodeCh   chan struct{}
	actions  []scheduler.Action
	tracked  map[string]int
	progress map[string]float64
	// block, if not nil, holds every Apply until it is closed.
	block chan struct{}
	// reportOnStop is a job Run reports Completed after its context
	// ended, as a cluster can when an end races the shutdown.
	reportOnStop string
	onDone       func(string, model.Status)
	running      chan struct{}
	// blocked counts Apply calls waiting on block.
	blocked atomic.Int32
	// ended holds the ends EndedAt reports, as the simulated cluster's.
	ended map[string]time.Time
}

func (c *fakeBackend) EndedAt(name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.ended[name]
	return at, ok
}

func newFakeBackend(nodes, gpus int) *fakeBackend {
	c := &fakeBackend{nodeCh: make(chan struct{}, 1), tracked: map[string]int{}, progress: map[string]float64{}, running: make(chan struct{})}
	c.setNodes(nodes, gpus)
	return c
}

func (c *fakeBackend) setNodes(nodes, gpus int) {
	c.mu.Lock()
	c.nodes = nil
	for i := range nodes {
		c.nodes = append(c.nodes, model.Node{Name: fmt.Sprintf("n%d", i), GPUs: gpus})
	}
	c.mu.Unlock()
	select {
	case c.nodeCh <- struct{}{}:
	default:
	}
}

func (c *fakeBackend) Nodes() []model.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

func (c *fakeBackend) NodesChanged() <-chan struct{} { return c.nodeCh }

func (c *fakeBackend) Apply(_ context.Context, a scheduler.Action) error {
	c.mu.Lock()
	block := c.block
	c.mu.Unlock()
	if block != nil {
		c.blocked.Add(1)
		<-block
		c.blocked.Add(-1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tracked[a.Job] == 0 {
		return fmt.Errorf("fake cluster: unknown job %s", a.Job)
	}
	c.actions = append(c.actions, a)
	return nil
}

func (c *fakeBackend) Track(name, _ string, _, _ int, progress float64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tracked[name]++
	c.progress[name] = progress
	return nil
}

func (c *fakeBackend) Forget(string) {}

func (c *fakeBackend) Progress(name string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.progress[name]
}

func (c *fakeBackend) setProgress(name string, p float64) {
	c.mu.Lock()
	c.progress[name] = p
	c.mu.Unlock()
}

func (c *fakeBackend) Run(ctx context.Context, onDone func(string, model.Status)) error {
	c.mu.Lock()
	c.onDone = onDone
	c.mu.Unlock()
	close(c.running)
	<-ctx.Done()
	if c.reportOnStop != "" {
		onDone(c.reportOnStop, model.StatusCompleted)
	}
	return ctx.Err()
}

// finish reports a job's end as the cluster's Run would.
func (c *fakeBackend) finish(name string, st model.Status) {
	<-c.running
	c.mu.Lock()
	onDone := c.onDone
	c.mu.Unlock()
	onDone(name, st)
}

// count returns how many actions of kind the job got.
func (c *fakeBackend) count(job string, kind scheduler.ActionKind) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, a := range c.actions {
		if a.Job == job && a.Kind == kind {
			n++
		}
	}
	return n
}

func (c *fakeBackend) last(job string) (scheduler.Action, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.actions) - 1; i >= 0; i-- {
		if c.actions[i].Job == job {
			return c.actions[i], true
		}
	}
	return scheduler.Action{}, false
}

func (c *fakeBackend) tracks(job string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tracked[job]
}

// faultyStore wraps the real store: a test can freeze ListJobs on an old
// answer, as a list read just before a job ended, or make writes fail.
type faultyStore struct {
	store.Store
	mu        sync.Mutex
	frozen    []store.Job
	failSaves atomic.Bool
	// finalWrites counts the SaveStatus calls that wrote a terminal status.
	finalWrites atomic.Int32
}

var errInjected = errors.New("injected store failure")

func (s *faultyStore) ListJobs(ctx context.Context, opts store.ListOptions) ([]store.Job, error) {
	s.mu.Lock()
	frozen := s.frozen
	s.mu.Unlock()
	if frozen != nil {
		return frozen, nil
	}
	return s.Store.ListJobs(ctx, opts)
}

func (s *faultyStore) freeze(jobs []store.Job) {
	s.mu.Lock()
	s.frozen = jobs
	s.mu.Unlock()
}

func (s *faultyStore) SaveStatus(ctx context.Context, w map[string]store.StatusWrite) (store.SaveResult, error) {
	if s.failSaves.Load() {
		return store.SaveResult{}, errInjected
	}
	for _, sw := range w {
		if sw.Status.State.Status.Done() {
			s.finalWrites.Add(1)
			break
		}
	}
	return s.Store.SaveStatus(ctx, w)
}

// harness runs one Service on a bbolt store in a temporary directory, the
// in-process queue, a fake backend and fake clocks: the scheduler's (no
// rate limit, no tick, so every change cycles at once) and the wall clock
// (resync, wedge detection), which only the test moves.
type harness struct {
	t       *testing.T
	dir     string
	st      *faultyStore
	q       queue.Queue
	backend Backend
	fake    *fakeBackend
	clk     *testingclock.FakeClock
	wall    *testingclock.FakeClock
	m       *metrics.Metrics
	svc     *Service
	// softPersist is Config.SoftPersist: every change at once unless a
	// test says otherwise.
	softPersist time.Duration
	// maxHistories is Config.MaxHistories.
	maxHistories int
	// defaultNamespace is Config.DefaultNamespace.
	defaultNamespace string
	stop             context.CancelFunc
	stopped          chan error
}

func newHarness(t *testing.T, nodes, gpus int) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), fake: newFakeBackend(nodes, gpus), softPersist: -1, defaultNamespace: "default"}
	h.backend = h.fake
	h.open()
	q, err := queue.Open(t.Context(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.q = q
	t.Cleanup(func() { _ = q.Close() })
	h.clk = testingclock.NewFakeClock(t0)
	h.wall = testingclock.NewFakeClock(t0)
	h.m = metrics.New(prometheus.NewRegistry())
	return h
}

func (h *harness) open() {
	st, err := store.Open(context.Background(), "", h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	h.st = &faultyStore{Store: st}
	h.t.Cleanup(func() { _ = st.Close(context.Background()) })
}

// run starts the service and waits until it is ready.
func (h *harness) run() {
	h.t.Helper()
	svc, err := New(Config{
		GPUType: gpuType, Store: h.st, Queue: h.q, Backend: h.backend,
		Algorithms: algorithm.Builtin(), Placer: placement.NewGreedy(),
		DefaultRateLimit: -1, Tick: -1, Clock: h.clk, WallClock: h.wall,
		Metrics: h.m, Resync: time.Hour, SoftPersist: h.softPersist, MaxHistories: h.maxHistories,
		DefaultNamespace: h.defaultNamespace,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.svc = svc
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	h.stopped = make(chan error, 1)
	go func() { h.stopped <- svc.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case <-h.stopped:
		case <-time.After(10 * time.Second):
			h.t.Error("service did not stop within 10 s")
		}
	})
	waitFor(h.t, "service ready", svc.health.ready.Load)
}

// create stores a new job as the API does.
func (h *harness) create(name string, minW, maxW int) {
	h.t.Helper()
	h.put(store.Job{Name: name, Kind: "MPIJob", Spec: jobSpec(name, minW, maxW),
		Status: store.JobStatus{State: model.JobState{Status: model.StatusSubmitted}, Est: model.Estimates{RemainingSeconds: -1}}})
}

func (h *harness) put(j store.Job) {
	h.t.Helper()
	if err := h.st.CreateJob(context.Background(), j); err != nil {
		h.t.Fatal(err)
	}
}

func jobSpec(name string, minW, maxW int) model.JobSpec {
	return model.JobSpec{Name: name, GPUType: gpuType, MinWorkers: minW, MaxWorkers: maxW, RequestedWorkers: minW, Epochs: 1, SubmitTime: t0}
}

func (h *harness) notify(name string) {
	h.t.Helper()
	msg := queue.Message{Verb: queue.VerbJob, Job: name}
	if err := h.q.Publish(context.Background(), queue.SchedulerQueue(gpuType), msg.Encode()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) get(name string) store.Job {
	h.t.Helper()
	j, err := h.st.GetJob(context.Background(), name)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

func (h *harness) waitStatus(name string, want model.Status) store.Job {
	h.t.Helper()
	var j store.Job
	waitFor(h.t, fmt.Sprintf("job %s %s", name, want), func() bool {
		j = h.get(name)
		return j.Status.State.Status == want
	})
	return j
}

// do runs f on the service's loop.
func (h *harness) do(f func()) {
	h.t.Helper()
	if err := h.svc.loop.Do(context.Background(), func(*scheduler.Core) { f() }); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) held(name string) bool {
	var ok bool
	h.do(func() { _, ok = h.svc.jobs[name] })
	return ok
}

func (h *harness) counter(c *prometheus.CounterVec) int {
	return int(testutil.ToFloat64(c.WithLabelValues(gpuType)))
}

// restart stops the service and starts a new one on the same store,
// queue, clocks and metrics, with a new cluster, as a restarted process
// would be.
func (h *harness) restart(fake *fakeBackend) *harness {
	h.t.Helper()
	h.stop()
	<-h.stopped
	h.stopped = make(chan error, 1)
	h.stopped <- nil // for the first run's cleanup
	h2 := &harness{t: h.t, dir: h.dir, fake: fake, backend: fake, softPersist: h.softPersist, st: h.st, q: h.q, clk: h.clk, wall: h.wall, m: h.m}
	h2.run()
	return h2
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A job the service finished must never come back from an older copy of
// its record. The defect: resync listed jobs off the loop, a job completed
// meanwhile, and resync re-admitted it from the stale list as Running, on
// GPUs forever, counting its completion again.
func TestDefect_ResyncDoesNotReadmitFinishedJob(t *testing.T) {
	h := newHarness(t, 2, 4)
	h.create("a", 2, 2)
	h.run()
	h.waitStatus("a", model.StatusRunning)
	stale, err := h.st.ListJobs(context.Background(), store.ListOptions{GPUType: gpuType, Live: true})
	if err != nil {
		t.Fatal(err)
	}
	h.fake.finish("a", model.StatusCompleted)
	h.waitStatus("a", model.StatusCompleted)

	h.st.freeze(stale) // the list read just before a's end
	if err := h.svc.resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	j := h.get("a")
	if st := j.Status.State.Status; st != model.StatusCompleted || j.Status.State.GPUs != 0 {
		t.Fatalf("after resync a is %s on %d GPUs, want Completed on none", st, j.Status.State.GPUs)
	}
	if h.held("a") {
		t.Fatal("the scheduler holds a again")
	}
	if n := h.fake.tracks("a"); n != 1 {
		t.Fatalf("the cluster was told to track a %d times, want once", n)
	}
	if n := h.fake.count("a", scheduler.Start); n != 1 {
		t.Fatalf("a was started %d times, want once", n)
	}
	if n := h.counter(h.m.JobsCompleted); n != 1 {
		t.Fatalf("completed counter %d, want 1", n)
	}
}

// A terminal status the store refused to write stays pending: retried at
// the next persist, reported by Health meanwhile, and the job is never
// re-admitted from its still-live record.
func TestTerminalStatusRetriedUntilStored(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.create("a", 1, 1)
	h.run()
	h.waitStatus("a", model.StatusRunning)
	h.st.failSaves.Store(true)
	h.fake.finish("a", model.StatusCompleted)
	if err := h.svc.Health(); err == nil || !strings.Contains(err.Error(), "store writes failing") {
		t.Fatalf("Health with failing writes = %v", err)
	}
	if n := h.counter(h.m.StoreWriteErrors); n < 1 {
		t.Fatalf("store write errors counter %d, want at least 1", n)
	}
	if st := h.get("a").Status.State.Status; st != model.StatusRunning {
		t.Fatalf("a is %s in the store, want still Running (the write failed)", st)
	}
	if err := h.svc.resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.held("a") || h.fake.tracks("a") != 1 {
		t.Fatal("a was re-admitted while its terminal status was pending")
	}
	h.st.failSaves.Store(false)
	if err := h.svc.resync(context.Background()); err != nil { // persists
		t.Fatal(err)
	}
	h.waitStatus("a", model.StatusCompleted)
	if err := h.svc.Health(); err != nil {
		t.Fatalf("Health after the store recovered: %v", err)
	}
	if n := h.counter(h.m.JobsCompleted); n != 1 {
		t.Fatalf("completed counter %d, want 1", n)
	}
}

// Another writer (a scheduler that took over, say) ended a job: the held
// copy is dropped and halted without a second terminal write or count.
func TestJobEndedElsewhereIsDropped(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.create("a", 2, 2)
	h.run()
	j := h.waitStatus("a", model.StatusRunning)
	done := j.Status
	done.State.Status, done.State.GPUs, done.State.Placement = model.StatusFailed, 0, nil
	res, err := h.st.SaveStatus(context.Background(), map[string]store.StatusWrite{"a": {Status: done, Revision: j.StatusRevision}})
	if err != nil || len(res.Conflicts)+len(res.Missing) > 0 {
		t.Fatalf("the other writer's save: %+v %v", res, err)
	}
	if err := h.svc.resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.held("a") {
		t.Fatal("the scheduler still holds a job that ended elsewhere")
	}
	if n := h.fake.count("a", scheduler.Halt); n != 1 {
		t.Fatalf("a halted %d times, want once", n)
	}
	if got := h.get("a"); got.Status.State.Status != model.StatusFailed || got.StatusRevision != j.StatusRevision+1 {
		t.Fatalf("a = %s at revision %d, want Failed at %d", got.Status.State.Status, got.StatusRevision, j.StatusRevision+1)
	}
	if n := h.counter(h.m.JobsCompleted) + h.counter(h.m.JobsFailed); n != 0 {
		t.Fatalf("%d ends counted for a job that ended elsewhere", n)
	}
}

// A status write over a revision another writer moved is refused; the
// service reads the job again and writes its own status over the newer
// revision.
func TestConflictingStatusWriteIsRebased(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.create("a", 1, 1)
	h.run()
	j := h.waitStatus("a", model.StatusRunning)
	other := j.Status
	other.Progress = 0.1
	if _, err := h.st.SaveStatus(context.Background(), map[string]store.StatusWrite{"a": {Status: other, Revision: j.StatusRevision}}); err != nil {
		t.Fatal(err)
	}
	h.fake.setProgress("a", 0.5)
	h.do(func() { h.svc.persist(context.Background(), h.clk.Now(), nil) })
	h.do(func() { h.svc.persist(context.Background(), h.clk.Now(), nil) })
	got := h.get("a")
	if got.Status.Progress != 0.5 || got.StatusRevision != j.StatusRevision+2 {
		t.Fatalf("a has progress %v at revision %d, want 0.5 at %d", got.Status.Progress, got.StatusRevision, j.StatusRevision+2)
	}
	if !h.held("a") {
		t.Fatal("a was dropped after a conflict with a live status")
	}
}

func TestDeleteRequestedCancelsAndHalts(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.create("a", 2, 2)
	h.run()
	h.waitStatus("a", model.StatusRunning)
	if err := h.st.RequestDelete(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	h.notify("a")
	j := h.waitStatus("a", model.StatusCanceled)
	if j.Status.FinishTime.IsZero() || j.Status.State.GPUs != 0 {
		t.Fatalf("canceled job status %+v", j.Status)
	}
	if n := h.fake.count("a", scheduler.Halt); n != 1 {
		t.Fatalf("a halted %d times, want once", n)
	}
	if h.held("a") {
		t.Fatal("a still held after its deletion")
	}
}

func TestPriorityChangeReachesTheCore(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.create("a", 1, 1)
	h.run()
	h.waitStatus("a", model.StatusRunning)
	if err := h.st.SetPriority(context.Background(), "a", 7); err != nil {
		t.Fatal(err)
	}
	h.notify("a")
	waitFor(t, "priority 7 in the core", func() bool {
		var p int
		h.do(func() { j, _ := h.svc.core.Job("a"); p = j.Spec.Priority })
		return p == 7
	})
}

// A job whose minimum exceeds every GPU of its type waits with a reason
// users can see; the reason goes once nodes make it possible.
func TestImpossibleMinimumIsReported(t *testing.T) {
	h := newHarness(t, 2, 4)
	h.create("big", 10, 12)
	h.run()
	var j store.Job
	waitFor(t, "an Unschedulable reason", func() bool {
		j = h.get("big")
		return j.Status.Reason == store.ReasonUnschedulable
	})
	if st := j.Status.State.Status; st != model.StatusWaiting {
		t.Fatalf("big is %s, want Waiting", st)
	}
	if !strings.Contains(j.Status.Message, "at least 10 GPUs") || !strings.Contains(j.Status.Message, "have 8") {
		t.Fatalf("message %q does not say what is needed and what there is", j.Status.Message)
	}
	if !j.Status.EstimatedStart.IsZero() {
		t.Fatalf("estimated start %v for a job that cannot start", j.Status.EstimatedStart)
	}
	h.fake.setNodes(3, 4)
	j = h.waitStatus("big", model.StatusRunning)
	if j.Status.Reason != "" || j.Status.Message != "" {
		t.Fatalf("a running job keeps reason %q: %q", j.Status.Reason, j.Status.Message)
	}
}

// Records that cannot be restored (undecodable, or an invalid spec) are
// set aside as Failed with their reason, counted and logged; the rest of
// the jobs start as if they were not there.
func TestRecoverySetsAsideWhatCannotBeRestored(t *testing.T) {
	h := newHarness(t, 2, 4)
	running := store.Job{Name: "good", Kind: "MPIJob", Spec: jobSpec("good", 2, 2), StatusRevision: 3,
		Status: store.JobStatus{State: model.JobState{Status: model.StatusRunning, GPUs: 2,
			Placement: model.JobPlacement{{Node: "n1", Workers: 2}}, FirstStart: t0}}}
	h.put(running)
	bad := jobSpec("bad", 3, 2) // min above max
	h.put(store.Job{Name: "bad", Kind: "MPIJob", Spec: bad, Status: store.JobStatus{State: model.JobState{Status: model.StatusWaiting}}})
	// A record no version of Voda could decode.
	if err := h.st.Store.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(h.dir, "voda.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("jobs")).Put([]byte("garbled"), []byte(`{"spec": [`)) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	h.open()

	h.run()
	if !h.held("good") {
		t.Fatal("the good job was not restored")
	}
	if a, ok := h.fake.last("good"); !ok || a.Kind != scheduler.Start || !a.To.Equal(running.Status.State.Placement) {
		t.Fatalf("good was not resumed on its placement: %+v", a)
	}
	for _, name := range []string{"bad", "garbled"} {
		j := h.get(name)
		if j.Status.State.Status != model.StatusFailed || j.Status.Reason != store.ReasonUnrestorable || j.Status.Message == "" {
			t.Errorf("%s = %s (%s: %q), want Failed, Unrestorable, with why", name, j.Status.State.Status, j.Status.Reason, j.Status.Message)
		}
	}
	if n := h.counter(h.m.JobsSetAside); n != 2 {
		t.Fatalf("set-aside counter %d, want 2", n)
	}
	if err := h.svc.Health(); err != nil {
		t.Fatalf("Health after recovery: %v", err)
	}
}

// A speedup curve never reaches past the cluster's GPUs: a job asking for
// 2^31-1 workers used to make the collector allocate 16 GiB and wedge the
// scheduler.
func TestDefect_HugeMaxWorkersCurveStopsAtTheCluster(t *testing.T) {
	h := newHarness(t, 2, 4)
	h.create("huge", 1, math.MaxInt32)
	h.run()
	j := h.waitStatus("huge", model.StatusRunning)
	h.storeProgress("huge", progress.State{Latest: progress.Report{Generation: "g", Workers: 8, Steps: 1, Epoch: 0.5}})
	h.notify("huge")
	waitFor(t, "an estimate", func() bool {
		h.do(func() {
			h.svc.estimate()
			h.svc.persist(context.Background(), h.clk.Now(), nil)
		})
		j = h.get("huge")
		return len(j.Status.Est.Speedup) > 0
	})
	if n := len(j.Status.Est.Speedup); n != 8+1 {
		t.Fatalf("speedup curve of %d points on 8 GPUs, want 9", n)
	}
}

// Losing a node tells the cluster at once: jobs there shrink to what they
// keep elsewhere, or halt.
func TestNodeLossShrinksOrHaltsItsJobs(t *testing.T) {
	h := newHarness(t, 2, 4)
	h.create("wide", 6, 6)
	h.run()
	j := h.waitStatus("wide", model.StatusRunning)
	if len(j.Status.State.Placement) != 2 {
		t.Fatalf("wide placed on %v, want both nodes", j.Status.State.Placement)
	}
	h.fake.setNodes(1, 4) // n1 leaves
	waitFor(t, "a shrink to n0", func() bool {
		a, _ := h.fake.last("wide")
		return a.Kind == scheduler.Shrink || a.Kind == scheduler.Halt
	})
	var nodes []model.Node
	h.do(func() { nodes = h.svc.core.Nodes() })
	if len(nodes) != 1 || nodes[0].Name != "n0" {
		t.Fatalf("core nodes %v, want only n0", nodes)
	}
}

// Health reports a loop stuck in one cycle (here, an Apply that never
// returns) once it has been busy longer than wedgeAfter of wall time.
func TestHealthReportsWedgedScheduler(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.fake.block = make(chan struct{})
	h.create("a", 1, 1)
	h.run()
	waitFor(t, "the loop inside Apply", func() bool { return h.fake.blocked.Load() == 1 })
	if err := h.svc.Health(); err != nil {
		t.Fatalf("Health at the start of a cycle: %v", err)
	}
	h.wall.Step(wedgeAfter + time.Second)
	waitFor(t, "Health to report the wedge", func() bool {
		err := h.svc.Health()
		return err != nil && strings.Contains(err.Error(), "wedged")
	})
	h.fake.mu.Lock()
	close(h.fake.block)
	h.fake.block = nil
	h.fake.mu.Unlock()
	waitFor(t, "Health to recover", func() bool { return h.svc.Health() == nil })
}

// A job end reported while the service stops used to block forever in
// loop.Do after the loop had exited, so SIGTERM never finished and the
// store's file lock was never released.
func TestDefect_EndReportedDuringShutdownDoesNotHang(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.create("a", 1, 1)
	h.fake.reportOnStop = "a"
	h.run()
	h.waitStatus("a", model.StatusRunning)
	h.stop()
	select {
	case err := <-h.stopped:
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
		h.stopped <- err // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("the service did not stop within 5 s")
	}
}

// A change of only what is shown (progress here) waits SoftPersist of
// wall time after the job's last write; a change of state does not.
func TestShownFieldsAreWrittenAtMostEverySoftPersist(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.softPersist = 2 * time.Second
	h.create("a", 1, 1)
	h.run()
	j := h.waitStatus("a", model.StatusRunning)
	persist := func() { h.do(func() { h.svc.persist(context.Background(), h.clk.Now(), nil) }) }
	h.fake.setProgress("a", 0.5)
	persist()
	if got := h.get("a"); got.Status.Progress != j.Status.Progress {
		t.Fatalf("progress %v written before SoftPersist passed", got.Status.Progress)
	}
	h.wall.Step(2 * time.Second)
	persist()
	if got := h.get("a"); got.Status.Progress != 0.5 {
		t.Fatalf("progress %v after SoftPersist, want 0.5", got.Status.Progress)
	}
	// A state change is written at once, shown fields with it.
	h.fake.setProgress("a", 0.6)
	h.clk.Step(time.Minute) // attained service grows: a state change
	persist()
	if got := h.get("a"); got.Status.Progress != 0.6 {
		t.Fatalf("progress %v after a state change, want 0.6 written with it", got.Status.Progress)
	}
}

// The batch size a running job is advised for its workers, and the model
// it is chosen with, are written at once, SoftPersist or not: the job's
// next report is answered with them.
func TestAdvisedBatchIsWrittenAtOnce(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.softPersist = time.Hour
	h.create("a", 1, 1)
	h.run()
	h.waitStatus("a", model.StatusRunning)
	for _, batch := range []int{256, 512} {
		h.do(func() {
			if err := h.svc.core.SetEstimates("a", model.Estimates{RemainingSeconds: 100, Speedup: []float64{0, 1}, Batch: []int{0, batch}}); err != nil {
				t.Fatal(err)
			}
			h.svc.persist(context.Background(), h.clk.Now(), nil)
		})
		if got := h.get("a").Status.Est.BatchAt(1); got != batch {
			t.Fatalf("stored advice %d, want %d written at once", got, batch)
		}
	}
	// So is the model the batch is chosen with.
	fit := goodput.Params{AlphaC: 0.05, BetaC: 0.004, Gamma: 1.5}
	h.do(func() {
		h.svc.jobs["a"].fit = &fit
		h.svc.persist(context.Background(), h.clk.Now(), nil)
	})
	if got := h.get("a").Status.Fit; got == nil || *got != fit {
		t.Fatalf("stored fit %+v, want %+v written at once", got, fit)
	}
	// Other estimates wait for SoftPersist.
	h.do(func() {
		if err := h.svc.core.SetEstimates("a", model.Estimates{RemainingSeconds: 50, Speedup: []float64{0, 1}, Batch: []int{0, 512}}); err != nil {
			t.Fatal(err)
		}
		h.svc.persist(context.Background(), h.clk.Now(), nil)
	})
	if got := h.get("a").Status.Est.RemainingSeconds; got != 100 {
		t.Fatalf("stored remaining %v, want 100 until SoftPersist passes", got)
	}
}

// A scheduler record that cannot be decoded does not stop the start: the
// scheduler runs on its defaults and schedules.
func TestDamagedSettingsRecordUsesDefaults(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.create("a", 1, 1)
	if err := h.st.Store.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(h.dir, "voda.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("schedulers")).Put([]byte(gpuType), []byte(`{"settings": {"algorithm": 7}}`))
	})
	if err = errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	h.open()
	h.run()
	h.waitStatus("a", model.StatusRunning)
	var algo string
	h.do(func() { algo = h.svc.core.Allocator().Name() })
	if algo != algorithm.DefaultName {
		t.Fatalf("algorithm %s, want the default %s", algo, algorithm.DefaultName)
	}
}

// A waiting job's voda_job_waiting_seconds is the scheduler time since it
// last lost (or never had) GPUs, set at every persist; it goes when the
// job starts. The last cycle's wall time is exported from the start.
func TestWaitingSecondsGauge(t *testing.T) {
	h := newHarness(t, 1, 4)
	h.create("a", 4, 4)
	h.run()
	h.waitStatus("a", model.StatusRunning)
	if v := testutil.ToFloat64(h.m.LastReschedule.WithLabelValues(gpuType)); v != unixSeconds(t0) {
		t.Fatalf("last reschedule %v, want the wall clock's %v", v, unixSeconds(t0))
	}
	h.create("b", 4, 4)
	h.notify("b")
	waitFor(t, "b admitted", func() bool { return h.held("b") })
	h.clk.Step(90 * time.Second)
	if err := h.svc.resync(context.Background()); err != nil { // persists
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(h.m.JobWaitingSeconds); n != 1 {
		t.Fatalf("%d waiting-time series, want b's alone", n)
	}
	if v := testutil.ToFloat64(h.m.JobWaitingSeconds.WithLabelValues(gpuType, h.defaultNamespace, "b")); v != 90 {
		t.Fatalf("b waited %v s, want 90", v)
	}
	h.fake.finish("a", model.StatusCompleted)
	h.waitStatus("b", model.StatusRunning)
	if n := testutil.CollectAndCount(h.m.JobWaitingSeconds); n != 0 {
		t.Fatalf("%d waiting-time series once b runs, want none", n)
	}
}

// unreadyBackend is the fake cluster with nodes that are not ready.
type unreadyBackend struct {
	*fakeBackend
	unready []model.Node
}

func (u unreadyBackend) NotReadyNodes() []model.Node { return u.unready }

// The scheduler status lists the nodes (ready ones from the core, the
// backend's unready ones marked) so that an API process without the
// scheduler can show them, and a node change is written before the next
// cycle.
func TestSchedulerStatusListsNodes(t *testing.T) {
	h := newHarness(t, 2, 4)
	h.backend = unreadyBackend{fakeBackend: h.fake, unready: []model.Node{{Name: "m-down", GPUs: 8, Cordoned: true}}}
	h.create("a", 1, 1)
	h.run()
	h.waitStatus("a", model.StatusRunning)
	nodesOf := func() []store.NodeState {
		rec, err := h.st.GetScheduler(context.Background(), gpuType)
		if err != nil {
			return nil
		}
		return rec.Status.NodeStates
	}
	want := []store.NodeState{{Name: "m-down", GPUs: 8, Cordoned: true, NotReady: true}, {Name: "n0", GPUs: 4}, {Name: "n1", GPUs: 4}}
	waitFor(t, "nodes in the scheduler status", func() bool { return slices.Equal(nodesOf(), want) })
	h.fake.setNodes(1, 4)
	want = slices.Delete(want, 2, 3)
	waitFor(t, "n1 gone from the scheduler status", func() bool { return slices.Equal(nodesOf(), want) })
}

// A job's allocation history is written with its status: each new
// placement at the cycle that made it, its end without GPUs, and it
// continues across a restart of the scheduler.
func TestAllocationHistory(t *testing.T) {
	h := newHarness(t, 2, 4)
	h.create("a", 1, 8)
	h.run()
	j := h.waitStatus("a", model.StatusRunning)
	if got := j.Status.Allocations; len(got) != 1 || !got[0].Placement.Equal(j.Status.State.Placement) {
		t.Fatalf("a's allocations after its start: %+v, want its placement %v", got, j.Status.State.Placement)
	}
	started := j.Status.Allocations[0].At

	h.clk.Step(time.Minute)
	h.create("b", 4, 4)
	h.notify("b")
	h.waitStatus("b", model.StatusRunning)
	waitFor(t, "a's shrink in its history", func() bool { return len(h.get("a").Status.Allocations) == 2 })
	j = h.get("a")
	if got := j.Status.Allocations[1]; !got.Placement.Equal(j.Status.State.Placement) || got.Placement.Workers() != 4 || !got.At.After(started) {
		t.Fatalf("a's second allocation %+v, want its 4 workers now (%v) after %v", got, j.Status.State.Placement, started)
	}

	// Restarted, the scheduler resumes b where it was: no new entry;
	// then a's end appends one without GPUs.
	h2 := h.restart(newFakeBackend(2, 4))
	h.clk.Step(time.Minute)
	h2.fake.finish("a", model.StatusCompleted)
	j = h2.waitStatus("a", model.StatusCompleted)
	got := j.Status.Allocations
	if len(got) != 3 || len(got[2].Placement) != 0 || !got[2].At.Equal(j.Status.FinishTime) {
		t.Fatalf("a's allocations after it completed: %+v, want a third without GPUs at %v", got, j.Status.FinishTime)
	}
	if b := h.get("b").Status.Allocations; len(b) != 1 || b[0].Placement.Workers() != 4 {
		t.Fatalf("b's allocations after the restart: %+v, want only its start on 4 GPUs (resumed where it was)", b)
	}
}

// TestJobsDoneTogetherFinishInOneTurn: jobs the cluster reports done at
// once are finished in one turn of the loop with one write of their
// statuses. Before, each report took a turn (behind the cycle the last
// one caused) and a write of its own: with thousands of jobs waiting, a
// few jobs finished a second while the others that were done kept their
// GPUs.
func TestJobsDoneTogetherFinishInOneTurn(t *testing.T) {
	const n = 16
	h := newHarness(t, 4, 4)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("j%02d", i)
		h.create(names[i], 1, 1)
	}
	h.run()
	for _, name := range names {
		h.waitStatus(name, model.StatusRunning)
	}
	// Hold the loop while the reports come in, as a long cycle would.
	hold, held := make(chan struct{}), make(chan struct{})
	go func() {
		_ = h.svc.loop.Do(context.Background(), func(*scheduler.Core) { close(held); <-hold })
	}()
	<-held
	for _, name := range names {
		go h.fake.finish(name, model.StatusCompleted)
	}
	waitFor(t, "every report queued", func() bool {
		h.svc.ended.mu.Lock()
		defer h.svc.ended.mu.Unlock()
		return len(h.svc.ended.m) == n
	})
	before := h.st.finalWrites.Load()
	close(hold)
	for _, name := range names {
		h.waitStatus(name, model.StatusCompleted)
	}
	if got := h.st.finalWrites.Load() - before; got != 1 {
		t.Errorf("%d jobs done together took %d writes of terminal statuses, want 1", n, got)
	}
	if got := h.counter(h.m.JobsCompleted); got != n {
		t.Errorf("completed counter %d, want %d", got, n)
	}
}

// A job's finish time is when the cluster says its work ended, when that
// is known and earlier than the service heard of it (the simulated
// cluster at --speed N, late by a busy process's milliseconds times N),
// but never before the job's last change.
func TestFinishTimeIsWhenTheWorkEnded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ended time.Duration // after the start; 0: unknown
		want  time.Duration // the finish time after the start
	}{
		{"known", 20 * time.Second, 20 * time.Second},
		{"unknown", 0, time.Minute},
		{"before its last change", -time.Second, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 1, 4)
			h.create("a", 1, 4)
			h.run()
			j := h.waitStatus("a", model.StatusRunning)
			started := j.Status.State.LastChange
			if tc.ended != 0 {
				h.fake.mu.Lock()
				h.fake.ended = map[string]time.Time{"a": started.Add(tc.ended)}
				h.fake.mu.Unlock()
			}
			h.clk.Step(time.Minute)
			h.fake.finish("a", model.StatusCompleted)
			j = h.waitStatus("a", model.StatusCompleted)
			if !j.Status.FinishTime.Equal(started.Add(tc.want)) {
				t.Fatalf("finish time %v, want %v after the start at %v", j.Status.FinishTime, tc.want, started)
			}
		})
	}
}

// The per-job series carry the job's namespace: its record's, else the
// service's default namespace. With per-job series off, nothing gathered
// from the registry names a job.
func TestJobSeriesLabels(t *testing.T) {
	tests := []struct {
		name             string
		opts             metrics.Options
		namespace        string // of b's record
		defaultNamespace string // the service's
		want             []string
	}{
		{name: "record's namespace", namespace: "team-b", defaultNamespace: "voda-system",
			want: []string{"voda_job_waiting_seconds{gpu_type=" + gpuType + ",job_name=b,namespace=team-b}"}},
		{name: "server's default namespace", defaultNamespace: "voda-system",
			want: []string{"voda_job_waiting_seconds{gpu_type=" + gpuType + ",job_name=b,namespace=voda-system}"}},
		{name: "record's namespace, no default", namespace: "team-b",
			want: []string{"voda_job_waiting_seconds{gpu_type=" + gpuType + ",job_name=b,namespace=team-b}"}},
		{name: "per-job series off", opts: metrics.Options{NoJobSeries: true}, namespace: "team-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, 1, 4)
			reg := prometheus.NewRegistry()
			h.m = metrics.NewWithOptions(reg, tt.opts)
			h.defaultNamespace = tt.defaultNamespace
			h.create("a", 4, 4)
			h.run()
			h.waitStatus("a", model.StatusRunning)
			b := store.Job{Name: "b", Kind: "MPIJob", Namespace: tt.namespace, Spec: jobSpec("b", 4, 4),
				Status: store.JobStatus{State: model.JobState{Status: model.StatusSubmitted}, Est: model.Estimates{RemainingSeconds: -1}}}
			h.put(b)
			h.notify("b")
			waitFor(t, "b admitted", func() bool { return h.held("b") })
			h.clk.Step(90 * time.Second)
			if err := h.svc.resync(context.Background()); err != nil { // persists
				t.Fatal(err)
			}
			got, named := jobSeries(t, reg, "b")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("per-job series (-want,+got):\n%s", diff)
			}
			if tt.opts.NoJobSeries && len(named) > 0 {
				t.Errorf("per-job series off, yet series name job b: %v", named)
			}
		})
	}
}

// jobSeries gathers reg: the series of the voda_job_ metrics as
// name{label=value,...}, and every series any of whose labels is job.
func jobSeries(t *testing.T, reg prometheus.Gatherer, job string) (series, naming []string) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			names := false
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
				names = names || l.GetValue() == job
			}
			s := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			if strings.HasPrefix(mf.GetName(), "voda_job_") {
				series = append(series, s)
			}
			if names {
				naming = append(naming, s)
			}
		}
	}
	return series, naming
}
