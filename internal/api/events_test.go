package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/eventhub"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/retention"
	"github.com/vodascheduler/voda/internal/store"
)

// sse is one server-sent event, or a comment line (name empty).
type sse struct{ name, data, comment string }

// stream is an open GET /api/v1/events.
type stream struct {
	t      *testing.T
	events chan sse
	cancel context.CancelFunc
}

// openStream opens the stream as token's caller (none when empty) on
// base and fails the test unless it is answered 200.
func openStream(t *testing.T, base, token string) *stream {
	t.Helper()
	resp, cancel := requestStream(t, base, token)
	if resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET %s: %d", RouteEvents, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	s := &stream{t: t, events: make(chan sse, 4096), cancel: cancel}
	t.Cleanup(cancel)
	go func() {
		defer close(s.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		var ev sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev != (sse{}) {
					s.events <- ev
				}
				ev = sse{}
			case strings.HasPrefix(line, ": "):
				ev.comment = line[2:]
			case strings.HasPrefix(line, "event: "):
				ev.name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[len("data: "):]
			}
		}
	}()
	return s
}

func requestStream(t *testing.T, base, token string) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", base+RouteEvents, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return resp, cancel
}

// next waits up to within for the first event that want accepts,
// skipping the others.
func (s *stream) next(what string, within time.Duration, want func(sse) bool) sse {
	s.t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.t.Fatalf("stream ended waiting for %s", what)
			}
			if want(ev) {
				return ev
			}
		case <-timeout:
			s.t.Fatalf("no %s within %v", what, within)
		}
	}
}

func (s *stream) snapshot() Snapshot {
	s.t.Helper()
	ev := s.next("snapshot", 5*time.Second, func(ev sse) bool { return ev.name != "" })
	if ev.name != eventhub.EventSnapshot {
		s.t.Fatalf("first event %q, want snapshot", ev.name)
	}
	var snap Snapshot
	if err := json.Unmarshal([]byte(ev.data), &snap); err != nil {
		s.t.Fatalf("snapshot %s: %v", ev.data, err)
	}
	return snap
}

// jobEvent waits for a job event about name that want accepts.
func (s *stream) jobEvent(name string, want func(JobEvent) bool) JobEvent {
	s.t.Helper()
	var je JobEvent
	s.next("job event of "+name, 2*time.Second, func(ev sse) bool {
		if ev.name != eventhub.EventJob {
			return false
		}
		je = JobEvent{}
		if err := json.Unmarshal([]byte(ev.data), &je); err != nil {
			s.t.Fatalf("job event %s: %v", ev.data, err)
		}
		return (je.Name == name || je.Job != nil && je.Job.Name == name) && want(je)
	})
	return je
}

// streamed is a fixture whose streams poll every 20 ms.
func streamed(t *testing.T, edit func(*Config)) *fixture {
	return newFixtureWith(t, func(c *Config) {
		c.Streams = StreamLimits{Poll: 20 * time.Millisecond, Heartbeat: 50 * time.Millisecond}
		if edit != nil {
			edit(c)
		}
	})
}

// A job shows in the stream within 2 s of its submission, then each
// change of its status, its GPUs on the nodes, and its end, after which a
// new stream's snapshot lacks it; a scheduler setting change is an event
// too, and so is the removal of a live job's record.
func TestEventStreamFollowsAJob(t *testing.T) {
	f := streamed(t, func(c *Config) { c.ClockRate = 60 })
	ctx := context.Background()
	if err := f.store.PutStatus(ctx, "v100", store.SchedulerStatus{Now: t0, Nodes: 1, GPUs: 4,
		NodeStates: []store.NodeState{{Name: "n0", GPUs: 4}, {Name: "n1", GPUs: 2, NotReady: true, Cordoned: true}}}); err != nil {
		t.Fatal(err)
	}
	s := openStream(t, f.url, "")
	snap := s.snapshot()
	if len(snap.Jobs) != 0 || len(snap.Schedulers) != 1 || len(snap.Nodes) != 1 || len(snap.Nodes[0].Nodes) != 2 {
		t.Fatalf("snapshot %+v, want no job, one scheduler, v100's two nodes", snap)
	}
	if n := snap.Nodes[0].Nodes[1]; n.Ready || !n.Cordoned {
		t.Errorf("n1 %+v, want not ready and cordoned", n)
	}
	if !snap.Now.Equal(t0) || snap.ClockRate != 60 {
		t.Errorf("snapshot at %v, clock rate %v: want %v and 60", snap.Now, snap.ClockRate, t0)
	}

	start := time.Now()
	job := f.create(mpiJob("train", "1", "2", "v100"))
	je := s.jobEvent(job.Name, func(JobEvent) bool { return true })
	t.Logf("submission to event: %v", time.Since(start))
	if je.Job.Status != "Submitted" {
		t.Errorf("first event of %s: %+v, want Submitted", job.Name, je.Job)
	}

	f.clock.Step(time.Minute)
	placed := t0.Add(time.Minute)
	f.saveStatus(job.Name, store.JobStatus{State: model.JobState{Status: model.StatusRunning, GPUs: 2,
		Placement: model.JobPlacement{{Node: "n0", Workers: 2}}}, Updated: placed,
		Allocations: []store.Allocation{{At: placed, Placement: model.JobPlacement{{Node: "n0", Workers: 2}}}}})
	je = s.jobEvent(job.Name, func(je JobEvent) bool { return je.Job.Status == "Running" && je.Job.Workers == 2 })
	wantAlloc := []Allocation{{Time: placed, Workers: 2, GPUs: 2, Placement: map[string]int{"n0": 2}}}
	if !cmp.Equal(je.Job.Allocations, wantAlloc) || !je.Job.AsOf.Equal(placed) || je.Job.WaitingSeconds != 60 {
		t.Errorf("running: allocations %+v as of %v, waiting %v s; want %+v as of %v, 60 s", je.Job.Allocations, je.Job.AsOf,
			je.Job.WaitingSeconds, wantAlloc, placed)
	}
	ev := s.next("nodes event", 2*time.Second, func(ev sse) bool { return ev.name == eventhub.EventNodes })
	var nodes GPUTypeNodes
	if err := json.Unmarshal([]byte(ev.data), &nodes); err != nil {
		t.Fatal(err)
	}
	want := []NodeJob{{Name: job.Name, Namespace: "default", Workers: 2, GPUs: 2, JobWorkers: 2}}
	if n := nodes.Nodes[0]; !slices.Equal(n.Jobs, want) || n.FreeGPUs != 2 {
		t.Errorf("n0 %+v, want %+v and 2 free", n, want)
	}

	f.saveStatus(job.Name, store.JobStatus{State: model.JobState{Status: model.StatusCompleted}, FinishTime: t0.Add(time.Hour), Updated: t0})
	s.jobEvent(job.Name, func(je JobEvent) bool { return je.Job.Status == "Completed" })
	// Finished, it left the live jobs: a new stream's snapshot lacks it.
	later := openStream(t, f.url, "")
	if snap := later.snapshot(); len(snap.Jobs) != 0 {
		t.Errorf("a snapshot after %s completed holds %+v, want no job", job.Name, snap.Jobs)
	}
	later.cancel()

	if code, b := f.do("PUT", "/api/v1/schedulers/v100/ratelimit", "application/json", `{"seconds": 5}`); code != http.StatusOK {
		t.Fatalf("ratelimit: %d %s", code, b)
	}
	s.next("scheduler event", 2*time.Second, func(ev sse) bool {
		return ev.name == eventhub.EventScheduler && strings.Contains(ev.data, `"rateLimitSeconds":5`)
	})

	// A live job's record removed from the store: its removal.
	gone := f.create(mpiJob("gone", "1", "2", "v100"))
	s.jobEvent(gone.Name, func(JobEvent) bool { return true })
	if err := f.store.DeleteJob(ctx, gone.Name); err != nil {
		t.Fatal(err)
	}
	s.jobEvent(gone.Name, func(je JobEvent) bool { return je.Deleted && je.Namespace == "default" })

	_, b := f.do("GET", RouteMetrics, "", "")
	m := string(b)
	for _, want := range []string{"\nvoda_events_sent_total{event=\"snapshot\"} 2\n", "\nvoda_events_sent_total{event=\"job\"} ",
		"\nvoda_event_bytes_sent_total{event=\"snapshot\"} ", "\nvoda_event_bytes_sent_total{event=\"job\"} "} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", strings.TrimSpace(want))
		}
	}
}

// A caller sees in the stream only the jobs of namespaces where it may
// list them; the GPUs the others hold are busy, without names.
func TestEventStreamNamespaces(t *testing.T) {
	tf, err := auth.ParseTokenFile([]byte(adminToken + ",root,0\n" + userToken + ",alice,1,team-a\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := streamed(t, func(c *Config) { c.Authenticator, c.Authorizer = tf, &teamAuthorizer{} })
	if err := f.store.PutStatus(context.Background(), "v100", store.SchedulerStatus{Now: t0,
		NodeStates: []store.NodeState{{Name: "n0", GPUs: 4}}}); err != nil {
		t.Fatal(err)
	}
	submit := func(manifest string) string {
		code, _, _, b := f.as(adminToken, "POST", RouteJobs, "application/yaml", manifest)
		if code != http.StatusCreated {
			t.Fatalf("submit: %d %s", code, b)
		}
		var j Job
		_ = json.Unmarshal(b, &j)
		return j.Name
	}
	mine := submit(inNamespace("mine", "team-a"))
	theirs := submit(inNamespace("theirs", "team-b"))
	f.saveStatus(theirs, store.JobStatus{State: model.JobState{Status: model.StatusRunning, GPUs: 3,
		Placement: model.JobPlacement{{Node: "n0", Workers: 3}}}, Updated: t0})

	alice, root := openStream(t, f.url, userToken), openStream(t, f.url, adminToken)
	for _, c := range []struct {
		name     string
		s        *stream
		wantJobs []string
		wantN0   []NodeJob
	}{
		{"alice", alice, []string{mine}, []NodeJob{{Workers: 3, GPUs: 3, Busy: true}}},
		{"root", root, []string{mine, theirs}, []NodeJob{{Name: theirs, Namespace: "team-b", Workers: 3, GPUs: 3, JobWorkers: 3}}},
	} {
		snap := c.s.snapshot()
		var names []string
		for _, j := range snap.Jobs {
			names = append(names, j.Name)
		}
		if !slices.Equal(names, c.wantJobs) {
			t.Errorf("%s's snapshot has %v, want %v", c.name, names, c.wantJobs)
		}
		if got := snap.Nodes[0].Nodes[0].Jobs; !slices.Equal(got, c.wantN0) {
			t.Errorf("%s's snapshot: n0 held by %+v, want %+v", c.name, got, c.wantN0)
		}
	}
	code, _, _, b := f.as(userToken, "GET", RouteNodes, "", "")
	var list NodeList
	if err := json.Unmarshal(b, &list); err != nil || code != http.StatusOK {
		t.Fatalf("alice's GET %s: %d %s", RouteNodes, code, b)
	}
	if got, want := list.Items[0].Nodes[0].Jobs, []NodeJob{{Workers: 3, GPUs: 3, Busy: true}}; !slices.Equal(got, want) {
		t.Errorf("alice's GET %s: n0 held by %+v, want %+v", RouteNodes, got, want)
	}

	later := submit(inNamespace("later", "team-b"))
	mine2 := submit(inNamespace("mine2", "team-a"))
	root.jobEvent(later, func(JobEvent) bool { return true })
	alice.next("alice's new job", 2*time.Second, func(ev sse) bool {
		if ev.name == eventhub.EventJob && strings.Contains(ev.data, later) {
			t.Errorf("alice was sent team-b's job: %s", ev.data)
		}
		return ev.name == eventhub.EventJob && strings.Contains(ev.data, mine2)
	})
}

// Streams beyond MaxStreams are answered 503; a closed stream frees its
// place.
func TestEventStreamLimit(t *testing.T) {
	f := streamed(t, func(c *Config) { c.Streams.MaxStreams = 1 })
	s := openStream(t, f.url, "")
	s.snapshot()
	if _, b := f.do("GET", RouteMetrics, "", ""); !strings.Contains(string(b), "\nvoda_event_streams 1\n") {
		t.Errorf("metrics do not count the open stream")
	}
	resp, cancel := requestStream(t, f.url, "")
	resp.Body.Close()
	cancel()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("second stream: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	s.cancel()
	waitFor(t, "the stream's place freed", func() bool { return f.srv.hub.Subscribers() == 0 })
	openStream(t, f.url, "").snapshot()
}

// A stream that does not take its events is dropped when its buffer is
// full, without holding up the others.
func TestEventStreamDropsSlowConsumer(t *testing.T) {
	f := streamed(t, func(c *Config) { c.Streams.Buffer = 2 })
	h := f.srv.hub
	slow, _, err := h.Subscribe(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	fast := openStream(t, f.url, "")
	fast.snapshot()
	for i := range 4 { // one event a poll: the fast stream keeps up, the slow one's buffer fills
		name := f.create(mpiJob(fmt.Sprintf("j%d", i), "1", "1", "v100")).Name
		fast.jobEvent(name, func(JobEvent) bool { return true })
	}
	select {
	case <-slow.Gone():
	case <-time.After(2 * time.Second):
		t.Fatal("the slow stream was not dropped")
	}
	if _, b := f.do("GET", RouteMetrics, "", ""); !strings.Contains(string(b), "\nvoda_event_streams_dropped_total 1\n") {
		t.Errorf("metrics do not count the dropped stream")
	}
}

// An idle stream gets heartbeats, even past the HTTP server's read and
// write timeouts, and ends when the server shuts down.
func TestEventStreamHeartbeatTimeoutsAndShutdown(t *testing.T) {
	f := streamed(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(f.srv.Handler(), Limits{ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	hs.RegisterOnShutdown(f.srv.CloseStreams)
	go func() { _ = hs.Serve(ln) }()
	s := openStream(t, "http://"+ln.Addr().String(), "")
	s.snapshot()
	deadline := time.Now().Add(time.Second) // five times the timeouts
	for time.Now().Before(deadline) {
		s.next("heartbeat", time.Second, func(ev sse) bool { return ev.comment == "heartbeat" })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v (the stream held it)", err)
	}
	for range s.events { // drains, then ends
	}
}

// waitFor polls cond every 10 ms for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// jobsOnly lets everyone list jobs and nothing else.
type jobsOnly struct{}

func (jobsOnly) Authorize(_ context.Context, _ auth.User, a auth.Attributes) (bool, string, error) {
	return a.Resource == auth.ResourceJobs, "jobs only", nil
}

// A caller who may list jobs but not schedulers gets the jobs, and no
// nodes or schedulers.
func TestEventStreamWithoutSchedulerRights(t *testing.T) {
	tf, err := auth.ParseTokenFile([]byte(userToken + ",alice,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := streamed(t, func(c *Config) { c.Authenticator, c.Authorizer = tf, jobsOnly{} })
	s := openStream(t, f.url, userToken)
	if snap := s.snapshot(); len(snap.Nodes)+len(snap.Schedulers) != 0 {
		t.Errorf("snapshot %+v, want no nodes or schedulers", snap)
	}
	code, _, _, b := f.as(userToken, "POST", RouteJobs, "application/yaml", mpiJob("train", "1", "2", "v100"))
	if code != http.StatusCreated {
		t.Fatalf("submit: %d %s", code, b)
	}
	if err := f.store.PutSettings(context.Background(), "v100", store.Settings{Algorithm: "FIFO"}); err != nil {
		t.Fatal(err)
	}
	s.next("the job's event", 2*time.Second, func(ev sse) bool {
		if ev.name == eventhub.EventNodes || ev.name == eventhub.EventScheduler {
			t.Errorf("sent a %s event: %s", ev.name, ev.data)
		}
		return ev.name == eventhub.EventJob && strings.Contains(ev.data, `"scheduler":"FIFO"`)
	})
	if code, _, _, _ := f.as(userToken, "GET", RouteNodes, "", ""); code != http.StatusForbidden {
		t.Errorf("GET %s: %d, want 403", RouteNodes, code)
	}
}

// seedJobs creates n jobs named prefix-NNNNNN straight in st, 64 at a
// time so that they share commits: Completed ones that held two GPUs for
// an hour when done, else Waiting ones with benchHistory's allocations,
// the size of views a busy cluster's dashboard gets.
func seedJobs(tb testing.TB, st store.Store, prefix string, n int, done bool) {
	tb.Helper()
	seedJobsWith(tb, st, prefix, n, done, 8)
}

// seedJobsWith is seedJobs with allocation histories of changes entries
// for the live jobs.
func seedJobsWith(tb testing.TB, st store.Store, prefix string, n int, done bool, changes int) {
	tb.Helper()
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		name := fmt.Sprintf("%s-%06d", prefix, i)
		submit := t0.Add(-time.Duration(n-i) * time.Minute)
		j := store.Job{Name: name, Kind: "MPIJob", Namespace: "default",
			Spec: model.JobSpec{Name: name, GPUType: "v100", MinWorkers: 1, MaxWorkers: 4, SubmitTime: submit},
			Status: store.JobStatus{State: model.JobState{Status: model.StatusWaiting}, Est: model.Estimates{RemainingSeconds: -1},
				Allocations: allocHistory(i, changes)}}
		if done {
			finish := submit.Add(time.Hour)
			j.Status = store.JobStatus{State: model.JobState{Status: model.StatusCompleted, FirstStart: submit, RunSeconds: 3600},
				FinishTime: finish, Updated: finish, Allocations: []store.Allocation{
					{At: submit, Placement: model.JobPlacement{{Node: "node-00", Workers: 2}}}, {At: finish}}}
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := st.CreateJob(context.Background(), j); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// countingStore counts the hub's polls (each counts the jobs), its lists
// of jobs (and those of every job, without Live) and its single reads.
type countingStore struct {
	store.Store
	mu                sync.Mutex
	polls, lists, all int
	gets              []string
}

func (c *countingStore) CountJobs(ctx context.Context) (int, int, error) {
	c.mu.Lock()
	c.polls++
	c.mu.Unlock()
	return c.Store.CountJobs(ctx)
}

func (c *countingStore) ListJobs(ctx context.Context, opts store.ListOptions) ([]store.Job, error) {
	c.mu.Lock()
	c.lists++
	if !opts.Live {
		c.all++
	}
	c.mu.Unlock()
	return c.Store.ListJobs(ctx, opts)
}

func (c *countingStore) GetJob(ctx context.Context, name string) (store.Job, error) {
	c.mu.Lock()
	c.gets = append(c.gets, name)
	c.mu.Unlock()
	return c.Store.GetJob(ctx, name)
}

func (c *countingStore) counts() (polls, lists, all int, gets []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.polls, c.lists, c.all, slices.Clone(c.gets)
}

// The hub lists only live jobs, never every job, and holds only them; a
// job that finishes is read once more, for its final event, and
// forgotten. Idle, it lists them every eventhub.FullPollEvery polls.
func TestEventStreamReadsLiveJobsOnly(t *testing.T) {
	var cs *countingStore
	f := streamed(t, func(c *Config) { cs = &countingStore{Store: c.Store}; c.Store = cs })
	seedJobs(t, f.store, "done", 200, true)
	seedJobs(t, f.store, "live", 3, false)
	s := openStream(t, f.url, "")
	if snap := s.snapshot(); len(snap.Jobs) != 3 {
		t.Fatalf("snapshot holds %d jobs, want the 3 live ones", len(snap.Jobs))
	}
	f.saveStatus("live-000001", store.JobStatus{State: model.JobState{Status: model.StatusCompleted}, FinishTime: t0, Updated: t0})
	s.jobEvent("live-000001", func(je JobEvent) bool { return je.Job.Status == "Completed" })
	_, lists0, _, _ := cs.counts()
	// 60 polls: more than the 30 after which the hub once listed every job.
	waitFor(t, "60 polls", func() bool { polls, _, _, _ := cs.counts(); return polls > 60 })
	polls, lists, all, gets := cs.counts()
	// saveStatus reads the job too, before the hub does.
	if all != 0 || !slices.Equal(gets, []string{"live-000001", "live-000001"}) {
		t.Errorf("in %d lists, %d of every job, and reads of %q: want none of every job, and one read of live-000001 besides saveStatus's",
			lists, all, gets)
	}
	// Nothing changed since live-000001's end: one list in eventhub.FullPollEvery
	// polls, give or take the first and the last.
	if idle, want := lists-lists0, polls/eventhub.FullPollEvery; idle < want-2 || idle > want+2 {
		t.Errorf("%d lists of the jobs in %d polls with nothing changed, want about %d", idle, polls, want)
	}
	held := f.srv.hub.Held()
	if want := []string{"live-000000", "live-000002"}; !slices.Equal(held, want) {
		t.Errorf("the hub holds %q, want %q", held, want)
	}
}

// rawStream opens GET /api/v1/events on a bare connection, with token
// unless empty, and reads its first byte, so that the server is writing
// the snapshot; it reads nothing more. Its receive buffer is 4 KiB, so
// that what the server writes stays in the server, as with a client far
// away, rather than in the kernel's buffers (which loopback lets grow to
// megabytes).
func rawStream(t testing.TB, base, token string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := "GET " + RouteEvents + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(base, "http://") + "\r\n"
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("the stream's first byte: %v", err)
	}
	return c
}

// heapInUse is the heap's live bytes after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// 100 streams whose clients never read cost a bounded heap, whatever the
// number of finished jobs, and share the live jobs' encodings rather than
// copy them. Measured under -race: with 5,000 finished jobs the heap grew
// by 289 MiB when each stream's snapshot held every job, with 1,000 live
// ones by 615 MiB when each stream copied them; now by 2.4 MiB and 13 to
// 17 MiB, most of it the hub's own views and a poll's jobs in flight.
func TestEventStreamsThatNeverRead(t *testing.T) {
	const streams, bound = 100, 40 << 20
	for _, c := range []struct {
		name           string
		finished, live int
	}{
		{"5000 finished", 5000, 0},
		// Jobs resized 64 times: a snapshot of 7 MB, more than the
		// kernel's buffers hold.
		{"1000 live", 0, 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := streamed(t, func(c *Config) { c.Streams.MaxStreams, c.Streams.MaxPerCaller = streams, streams })
			seedJobs(t, f.store, "done", c.finished, true)
			seedJobsWith(t, f.store, "live", c.live, false, store.MaxAllocations)
			before := heapInUse()
			for range streams {
				rawStream(t, f.url, "")
			}
			grown := int64(heapInUse()) - int64(before)
			t.Logf("%d streams that do not read: heap grew %.1f MiB", streams, float64(grown)/(1<<20))
			if n := f.srv.hub.Subscribers(); n != streams {
				t.Errorf("%d streams open, want %d", n, streams)
			}
			if grown > bound {
				t.Errorf("heap grew %.1f MiB with %d streams that do not read, want at most %d MiB", float64(grown)/(1<<20), streams, bound>>20)
			}
		})
	}
}

// ends waits up to within for the stream to end, skipping its events.
func (s *stream) ends(within time.Duration) {
	s.t.Helper()
	timeout := time.After(within)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-timeout:
			s.t.Fatalf("the stream did not end within %v", within)
		}
	}
}

// streamCode opens the stream as token's caller and returns its status
// and error body, closing it.
func streamCode(t *testing.T, base, token string) (int, http.Header, Error) {
	t.Helper()
	resp, cancel := requestStream(t, base, token)
	defer cancel()
	defer resp.Body.Close()
	var e Error
	if resp.StatusCode != http.StatusOK {
		_ = json.NewDecoder(resp.Body).Decode(&e)
	}
	return resp.StatusCode, resp.Header, e
}

// A caller who may list no jobs (the documented metrics-only token, in
// no group) is refused the stream, rather than take one of its places
// for an empty snapshot; a user gets it.
func TestEventStreamRefusesCallersWhoListNoJobs(t *testing.T) {
	tf, err := auth.ParseTokenFile([]byte("metrics-token-0123456789,prometheus,2\n" + userToken + ",alice,1,voda:users\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := streamed(t, func(c *Config) { c.Authenticator, c.Authorizer = tf, auth.NewRoles("", "") })
	for _, c := range []struct {
		token  string
		want   int
		reason Reason
	}{
		{"metrics-token-0123456789", http.StatusForbidden, "Forbidden"},
		{userToken, http.StatusOK, ""},
	} {
		code, _, e := streamCode(t, f.url, c.token)
		if code != c.want || e.Error.Reason != c.reason {
			t.Errorf("%s: %d %+v, want %d %s", c.token, code, e.Error, c.want, c.reason)
		}
	}
	waitFor(t, "no stream open", func() bool { return f.srv.hub.Subscribers() == 0 })
}

// One caller holds at most MaxPerCaller streams (10 by default): more are
// answered 429, while another caller still gets one; without
// authentication the caller is the client's address.
func TestEventStreamPerCallerLimit(t *testing.T) {
	tf, err := auth.ParseTokenFile([]byte(userToken + ",alice,1,voda:users\nbob-token-0123456789,bob,2,voda:users\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name         string
		edit         func(*Config)
		token, other string
	}{
		{"users", func(c *Config) { c.Authenticator, c.Authorizer = tf, auth.NewRoles("", "") }, userToken, "bob-token-0123456789"},
		{"anonymous", nil, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := streamed(t, c.edit)
			var mine []*stream
			for range DefaultMaxStreamsPerCaller {
				s := openStream(t, f.url, c.token)
				s.snapshot()
				mine = append(mine, s)
			}
			code, h, e := streamCode(t, f.url, c.token)
			if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(e.Error.Message, "--max-event-streams-per-user") {
				t.Errorf("stream %d of one caller: %d (Retry-After %q) %+v, want 429 naming the flag, with Retry-After",
					DefaultMaxStreamsPerCaller+1, code, h.Get("Retry-After"), e.Error)
			}
			if c.other != "" {
				openStream(t, f.url, c.other).snapshot()
			}
			mine[0].cancel()
			waitFor(t, "a place of the caller freed", func() bool {
				code, _, _ := streamCode(t, f.url, c.token)
				return code == http.StatusOK
			})
		})
	}
}

// switchAuthorizer allows listing jobs and schedulers as its switches say,
// and everything else.
type switchAuthorizer struct{ jobs, schedulers atomic.Bool }

func (z *switchAuthorizer) Authorize(_ context.Context, _ auth.User, a auth.Attributes) (bool, string, error) {
	switch a.Resource {
	case auth.ResourceJobs:
		return z.jobs.Load(), "jobs switched off", nil
	case auth.ResourceSchedulers:
		return z.schedulers.Load(), "schedulers switched off", nil
	}
	return true, "", nil
}

// The rights are asked again at every heartbeat: when the right to list
// the schedulers (and so to see the nodes) or the jobs changes, the stream
// ends, and the client's reconnection gets a snapshot of what it may see
// now, or a 403.
func TestEventStreamRechecksRights(t *testing.T) {
	tf, err := auth.ParseTokenFile([]byte(userToken + ",alice,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                   string
		schedulers             bool   // at first; then switched
		jobs                   bool   // then switched, if switchJobs
		switchJobs             bool   // else switch schedulers
		wantCode, wantClusters int    // after: status, and GPU types with nodes and schedulers
		wantReason             Reason // of a refusal
	}{
		{name: "schedulers revoked", schedulers: true, jobs: true, wantCode: http.StatusOK},
		{name: "schedulers granted", jobs: true, wantCode: http.StatusOK, wantClusters: 1},
		{name: "jobs revoked", schedulers: true, jobs: true, switchJobs: true, wantCode: http.StatusForbidden, wantReason: "Forbidden"},
	} {
		t.Run(c.name, func(t *testing.T) {
			z := &switchAuthorizer{}
			z.jobs.Store(c.jobs)
			z.schedulers.Store(c.schedulers)
			f := streamed(t, func(cfg *Config) { cfg.Authenticator, cfg.Authorizer = tf, z })
			seedJobs(t, f.store, "live", 1, false)
			s := openStream(t, f.url, userToken)
			if snap := s.snapshot(); len(snap.Jobs) != 1 || len(snap.Nodes) != len(snap.Schedulers) || (len(snap.Nodes) == 1) != c.schedulers {
				t.Fatalf("snapshot with schedulers %v: %d jobs, %d GPU types' nodes, %d schedulers", c.schedulers, len(snap.Jobs), len(snap.Nodes), len(snap.Schedulers))
			}
			if c.switchJobs {
				z.jobs.Store(!c.jobs)
			} else {
				z.schedulers.Store(!c.schedulers)
			}
			s.ends(2 * time.Second) // 40 heartbeats
			code, _, e := streamCode(t, f.url, userToken)
			if code != c.wantCode || e.Error.Reason != c.wantReason {
				t.Fatalf("reconnected: %d %+v, want %d %s", code, e.Error, c.wantCode, c.wantReason)
			}
			if code != http.StatusOK {
				return
			}
			snap := openStream(t, f.url, userToken).snapshot()
			if len(snap.Nodes) != c.wantClusters || len(snap.Schedulers) != c.wantClusters || len(snap.Jobs) != 1 {
				t.Errorf("reconnected: %d jobs, %d GPU types' nodes, %d schedulers; want 1, %d, %d",
					len(snap.Jobs), len(snap.Nodes), len(snap.Schedulers), c.wantClusters, c.wantClusters)
			}
		})
	}
}

// A poll reads the jobs only when the scheduler records or the job counts
// changed since the last read of the jobs (or when forced): a creation, an
// end, a scheduler's cycle or setting; not a progress report, which the
// periodic read of the jobs finds.
// A finished job's record removed while a stream is open (DELETE of the
// finished job, or a retention pass) gives the stream the job's removal
// when the hub still held it live, and nothing when the hub already sent
// it finished and forgot it; the stream goes on either way. The streams
// poll only when kicked, so that each step decides what the hub saw.
func TestEventStreamFinishedJobRemoved(t *testing.T) {
	f := streamed(t, func(c *Config) { c.Streams.Poll, c.Streams.Heartbeat = time.Hour, time.Hour })
	ctx := context.Background()
	s := openStream(t, f.url, "")
	s.snapshot()
	// seen returns the events about name up to now: it submits a job,
	// whose poll reads the store after every change made so far, and
	// then another, whose event comes after every event of that poll.
	marks := 0
	seen := func(t *testing.T, name string) []JobEvent {
		t.Helper()
		var got []JobEvent
		for range 2 {
			marks++
			mark := f.create(mpiJob(fmt.Sprintf("mark-%d", marks), "1", "1", "v100"))
			s.next("job event of "+mark.Name, 5*time.Second, func(ev sse) bool {
				if ev.name != eventhub.EventJob {
					return false
				}
				var je JobEvent
				if err := json.Unmarshal([]byte(ev.data), &je); err != nil {
					t.Fatalf("job event %s: %v", ev.data, err)
				}
				if je.Job != nil && je.Job.Name == mark.Name {
					return true
				}
				if je.Name == name || je.Job != nil && je.Job.Name == name {
					got = append(got, je)
				}
				return false
			})
		}
		return got
	}
	del := func(t *testing.T, name string) {
		t.Helper()
		if code, b := f.do("DELETE", RouteJobs+"/"+name, "", ""); code != http.StatusOK {
			t.Fatalf("DELETE %s: %d %s, want 200", name, code, b)
		}
	}
	ret, err := retention.New(retention.Config{Store: f.store, MaxAge: time.Minute, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	prune := func(t *testing.T, _ string) {
		t.Helper()
		if res, err := ret.Pass(ctx); err != nil || res.ByAge != 1 {
			t.Fatalf("retention pass: %+v %v, want one job removed", res, err)
		}
	}
	for _, tc := range []struct {
		name   string
		remove func(t *testing.T, name string)
		// sentFinished: the hub saw the job finished before its removal.
		sentFinished bool
		want         []string // the events about the job after its finish
	}{
		{"DELETE after it was sent finished", del, true, nil},
		{"DELETE before the hub saw it finish", del, false, []string{"deleted"}},
		{"retention after it was sent finished", prune, true, nil},
		{"retention before the hub saw it finish", prune, false, []string{"deleted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := f.create(mpiJob("job", "1", "1", "v100"))
			s.jobEvent(job.Name, func(je JobEvent) bool { return je.Job != nil && je.Job.Status == "Submitted" })
			// Every poll the submission triggered has run before the job
			// finishes in the store: a late one would otherwise read it
			// finished before its removal, which is the other case (a busy
			// machine made it so once, for "retention before the hub saw it
			// finish").
			seen(t, job.Name)
			f.saveStatus(job.Name, store.JobStatus{State: model.JobState{Status: model.StatusCompleted},
				FinishTime: t0.Add(-time.Hour), Updated: t0})
			if tc.sentFinished {
				got := seen(t, job.Name)
				if len(got) != 1 || got[0].Job == nil || got[0].Job.Status != "Completed" {
					t.Fatalf("events of %s as it completed: %+v, want one, Completed", job.Name, got)
				}
			}
			tc.remove(t, job.Name)
			var got []string
			for _, je := range seen(t, job.Name) {
				switch {
				case je.Deleted:
					got = append(got, "deleted")
				case je.Job != nil:
					got = append(got, string(je.Job.Status))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("events of %s after its removal: %q, want %q", job.Name, got, tc.want)
			}
		})
	}
	// The marks are live: a new stream's snapshot holds them and no
	// removed job, and the first stream is still open.
	later := openStream(t, f.url, "")
	if snap := later.snapshot(); len(snap.Jobs) != marks {
		t.Errorf("snapshot holds %d jobs, want the %d marks", len(snap.Jobs), marks)
	}
	seen(t, "")
}
