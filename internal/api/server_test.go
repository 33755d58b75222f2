package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/store"
)

// fixture is an API server on the embedded store and the in-process queue,
// with no scheduler consuming: tests look at what the API stores and sends.
type fixture struct {
	t     testing.TB
	url   string
	srv   *Server
	store store.Store
	queue queue.Queue
	// clock is the scheduler's clock (submit times, ages); nameClock the
	// wall clock that stamps names. Both start at t0.
	clock, nameClock *clocktesting.FakeClock
}

var t0 = time.Date(2026, 11, 21, 9, 30, 15, 0, time.UTC)

func newFixture(t *testing.T, gpuTypes ...string) *fixture {
	t.Helper()
	return newFixtureWith(t, nil, gpuTypes...)
}

// newFixtureWith is newFixture with the Config changed by edit (if not
// nil) before the server is built.
func newFixtureWith(t testing.TB, edit func(*Config), gpuTypes ...string) *fixture {
	t.Helper()
	if len(gpuTypes) == 0 {
		gpuTypes = []string{"v100"}
	}
	ctx := context.Background()
	st, err := store.Open(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(ctx) })
	q, err := queue.Open(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	reg := prometheus.NewRegistry()
	clk, nameClk := clocktesting.NewFakeClock(t0), clocktesting.NewFakeClock(t0)
	cfg := Config{
		Store: st, Queue: q, GPUTypes: gpuTypes, Algorithms: algorithm.Builtin(),
		DefaultAlgorithm: algorithm.DefaultName, DefaultRateLimit: 30 * time.Second,
		Models: []string{"amdahl", "linear"}, Clock: clk, NameClock: nameClk, Metrics: metrics.New(reg), Gatherer: reg,
		OpenAPI: []byte("openapi: 3.0.3\n"),
	}
	if edit != nil {
		edit(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &fixture{t: t, url: hs.URL, srv: srv, store: cfg.Store, queue: q, clock: clk, nameClock: nameClk}
}

// do sends a request and returns the status and body.
func (f *fixture) do(method, path, contentType, body string) (int, []byte) {
	f.t.Helper()
	code, _, b := f.doWith("", method, path, contentType, body)
	return code, b
}

// doWith is do with a bearer token (none when empty), also returning the
// answer's headers.
func (f *fixture) doWith(token, method, path, contentType, body string) (int, http.Header, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// saveStatus writes a job's status as its scheduler would, over the
// revision stored.
func (f *fixture) saveStatus(name string, st store.JobStatus) {
	f.t.Helper()
	j, err := f.store.GetJob(context.Background(), name)
	if err != nil {
		f.t.Fatal(err)
	}
	res, err := f.store.SaveStatus(context.Background(), map[string]store.StatusWrite{name: {Status: st, Revision: j.StatusRevision}})
	if err != nil || len(res.Missing)+len(res.Conflicts) > 0 {
		f.t.Fatalf("save status of %s: %+v %v", name, res, err)
	}
}

func (f *fixture) create(body string) Job {
	f.t.Helper()
	code, b := f.do("POST", RouteJobs, "application/yaml", body)
	if code != http.StatusCreated {
		f.t.Fatalf("create: %d %s", code, b)
	}
	var j Job
	if err := json.Unmarshal(b, &j); err != nil {
		f.t.Fatal(err)
	}
	return j
}

// received drains the GPU type's queue.
func (f *fixture) received(gpuType string) []queue.Message {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	ch, err := f.queue.Consume(ctx, queue.SchedulerQueue(gpuType))
	if err != nil {
		f.t.Fatal(err)
	}
	var out []queue.Message
	for d := range ch {
		m, err := queue.DecodeMessage(d.Body())
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, m)
		_ = d.Ack()
	}
	return out
}

func mpiJob(name, minNP, maxNP, gpuType string) string {
	return fmt.Sprintf(`apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: %s}
spec:
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
          - name: launcher
            env:
            - {name: MIN_NUM_PROC, value: "%s"}
            - {name: MAX_NUM_PROC, value: "%s"}
            - {name: EPOCHS, value: "5"}
    Worker:
      template:
        spec:
          nodeSelector: {vodascheduler/accelerator: %s}
          containers: [{name: worker}]
`, name, minNP, maxNP, gpuType)
}

func TestCreateStoresNamesAndNotifies(t *testing.T) {
	f := newFixture(t)
	j := f.create(mpiJob("mnist", "1", "4", "v100"))
	if want := "mnist-20261121-093015"; j.Name != want {
		t.Errorf("name = %s, want %s", j.Name, want)
	}
	if j.Status != "Submitted" || j.MinWorkers != 1 || j.MaxWorkers != 4 || j.RequestedWorkers != 1 || j.Epochs != 5 || j.Scheduler != algorithm.DefaultName {
		t.Errorf("created job = %+v", j)
	}
	stored, err := f.store.GetJob(context.Background(), j.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !stored.Spec.SubmitTime.Equal(t0) || !strings.Contains(string(stored.Manifest), `"value":"`+j.Name+`"`) {
		t.Errorf("stored job: submit %v, manifest %s", stored.Spec.SubmitTime, stored.Manifest)
	}
	msgs := f.received("v100")
	if len(msgs) != 1 || msgs[0] != (queue.Message{Verb: queue.VerbJob, Job: j.Name}) {
		t.Errorf("messages = %+v", msgs)
	}
}

// Names stay unique when many submissions of one name land in the same
// second, as the original's did not.
func TestNamesUniqueWithinOneSecond(t *testing.T) {
	f := newFixture(t)
	const n = 60
	names := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, b := f.do("POST", RouteJobs, "application/yaml", mpiJob("burst", "1", "2", "v100"))
			if code != http.StatusCreated {
				t.Errorf("create: %d %s", code, b)
				return
			}
			var j Job
			_ = json.Unmarshal(b, &j)
			names <- j.Name
		}()
	}
	wg.Wait()
	close(names)
	seen := map[string]bool{}
	for name := range names {
		if seen[name] {
			t.Errorf("name %s given twice", name)
		}
		seen[name] = true
	}
	if len(seen) != n || !seen["burst-20261121-093015"] || !seen[fmt.Sprintf("burst-20261121-093015-%d", n)] {
		t.Errorf("got %d names; want burst-20261121-093015 and -2 .. -%d", len(seen), n)
	}
}

func TestDeletePriorityAndSettings(t *testing.T) {
	f := newFixture(t)
	j := f.create(mpiJob("a", "1", "2", "v100"))
	f.received("v100")

	code, b := f.do("PUT", "/api/v1/jobs/"+j.Name+"/priority", "application/json", `{"priority": 7}`)
	if code != http.StatusOK || !strings.Contains(string(b), `"priority": 7`) {
		t.Errorf("set priority: %d %s", code, b)
	}
	code, b = f.do("DELETE", "/api/v1/jobs/"+j.Name, "", "")
	if code != http.StatusAccepted || !strings.Contains(string(b), `"deleteRequested": true`) {
		t.Errorf("delete: %d %s", code, b)
	}
	stored, _ := f.store.GetJob(context.Background(), j.Name)
	if stored.Spec.Priority != 7 || !stored.DeleteRequested {
		t.Errorf("stored after priority and delete: priority %d, deleteRequested %v", stored.Spec.Priority, stored.DeleteRequested)
	}
	if msgs := f.received("v100"); len(msgs) != 2 {
		t.Errorf("want a notification per change, got %+v", msgs)
	}
	// Deleting again while the scheduler halts the job answers the same.
	if code, b := f.do("DELETE", "/api/v1/jobs/"+j.Name, "", ""); code != http.StatusAccepted {
		t.Errorf("delete again: %d %s", code, b)
	}
	if msgs := f.received("v100"); len(msgs) != 1 {
		t.Errorf("delete again: want the scheduler told again, got %+v", msgs)
	}
	// Once the deleted job is Canceled, deleting it again is done: 200.
	st := stored.Status
	st.State.Status = "Canceled"
	f.saveStatus(j.Name, st)
	if code, b := f.do("DELETE", "/api/v1/jobs/"+j.Name, "", ""); code != http.StatusOK || !strings.Contains(string(b), `"status": "Canceled"`) {
		t.Errorf("delete a deleted, Canceled job: %d %s", code, b)
	}
	if msgs := f.received("v100"); len(msgs) != 0 {
		t.Errorf("delete a Canceled job: the scheduler was told %+v", msgs)
	}

	code, b = f.do("PUT", "/api/v1/schedulers/v100/algorithm", "application/json", `{"algorithm": "tiresias", "params": {"threshold": "1800"}}`)
	if code != http.StatusOK || !strings.Contains(string(b), `"algorithm": "Tiresias"`) {
		t.Errorf("set algorithm: %d %s", code, b)
	}
	code, b = f.do("PUT", "/api/v1/schedulers/v100/ratelimit", "application/json", `{"seconds": 0}`)
	if code != http.StatusOK || !strings.Contains(string(b), `"rateLimitSeconds": 0`) {
		t.Errorf("set rate limit: %d %s", code, b)
	}
	rec, err := f.store.GetScheduler(context.Background(), "v100")
	if err != nil || rec.Settings.Algorithm != "Tiresias" || rec.Settings.RateLimit >= 0 {
		t.Errorf("stored settings = %+v, %v", rec.Settings, err)
	}
	if msgs := f.received("v100"); len(msgs) != 2 || msgs[0].Verb != queue.VerbSettings {
		t.Errorf("want two settings notifications, got %+v", msgs)
	}
}

func TestLegacyRoutes(t *testing.T) {
	f := newFixture(t)
	code, b := f.do("POST", RouteLegacyJobs, "", mpiJob("old", "1", "2", "v100"))
	if code != http.StatusCreated || string(b) != "Training job created: old-20261121-093015\n" {
		t.Errorf("POST /training: %d %q", code, b)
	}
	code, b = f.do("GET", RouteLegacyJobs, "", "")
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if code != http.StatusOK || len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME STATUS WORKERS SCHEDULER WAITING RUNNING TOTAL" ||
		strings.Join(strings.Fields(lines[1]), " ") != "old-20261121-093015 Submitted 0 ElasticFIFO 0s 0s 0s" {
		t.Errorf("GET /training: %d\n%s", code, b)
	}
	code, b = f.do("PUT", RouteLegacyAlgo, "", "SRJF")
	if code != http.StatusOK || !strings.Contains(string(b), "SRJF") {
		t.Errorf("PUT /algorithm: %d %s", code, b)
	}
	code, b = f.do("PUT", RouteLegacyLimit, "", "15")
	if code != http.StatusOK {
		t.Errorf("PUT /ratelimit: %d %s", code, b)
	}
	code, b = f.do("DELETE", RouteLegacyJobs, "", "old-20261121-093015")
	if code != http.StatusOK || string(b) != "Training job deleted: old-20261121-093015\n" {
		t.Errorf("DELETE /training: %d %q", code, b)
	}
}

func TestTimesAndViews(t *testing.T) {
	f := newFixture(t)
	j := f.create(mpiJob("t", "1", "2", "v100"))
	// The scheduler recorded, 100 s after submission, that the job has
	// run 40 s; 10 s later the API adds the 10 s it has been running since.
	st := store.JobStatus{Updated: t0.Add(100 * time.Second)}
	st.State.Status, st.State.GPUs, st.State.RunSeconds = "Running", 2, 40
	st.State.Placement = model.JobPlacement{{Node: "n0", Workers: 2}}
	f.saveStatus(j.Name, st)
	f.clock.SetTime(t0.Add(110 * time.Second))
	code, b := f.do("GET", "/api/v1/jobs/"+j.Name, "", "")
	var got Job
	if err := json.Unmarshal(b, &got); err != nil || code != http.StatusOK {
		t.Fatalf("get: %d %s", code, b)
	}
	if got.TotalSeconds != 110 || got.RunningSeconds != 50 || got.WaitingSeconds != 60 || got.Workers != 2 || got.Placement["n0"] != 2 {
		t.Errorf("view = total %v running %v waiting %v workers %d placement %v", got.TotalSeconds, got.RunningSeconds, got.WaitingSeconds, got.Workers, got.Placement)
	}
	code, b = f.do("GET", RouteJobs+"?status=Running", "", "")
	if code != http.StatusOK || !strings.Contains(string(b), j.Name) {
		t.Errorf("list running: %d %s", code, b)
	}
	code, b = f.do("GET", RouteJobs+"?status=Completed", "", "")
	if code != http.StatusOK || strings.Contains(string(b), j.Name) {
		t.Errorf("list completed: %d %s", code, b)
	}
}

func TestHealthReadyMetricsOpenAPI(t *testing.T) {
	f := newFixture(t)
	f.create(mpiJob("m", "1", "2", "v100"))
	for _, c := range []struct{ path, want string }{
		{RouteHealthz, "ok"},
		{RouteReadyz, "ok"},
		{RouteOpenAPI, "openapi: 3.0.3"},
		{RouteMetrics, `voda_jobs_created_total{gpu_type="v100"} 1`},
		{RouteMetrics, `voda_http_requests_total{code="201",route="POST /api/v1/jobs"} 1`},
	} {
		code, b := f.do("GET", c.path, "", "")
		if code != http.StatusOK || !strings.Contains(string(b), c.want) {
			t.Errorf("GET %s: %d, want body containing %q; got\n%.400s", c.path, code, c.want, b)
		}
	}
}

// The API shows the schedulers' defaults and cannot know them otherwise.
func TestNewRequiresTheSchedulersDefaults(t *testing.T) {
	t.Parallel()
	cfg := newFixture(t).srv.cfg
	for _, edit := range []func(*Config){
		func(c *Config) { c.DefaultAlgorithm = "" },
		func(c *Config) { c.DefaultRateLimit = 0 },
	} {
		c := cfg
		edit(&c)
		if _, err := New(c); err == nil {
			t.Errorf("New with default algorithm %q and rate limit %v succeeded", c.DefaultAlgorithm, c.DefaultRateLimit)
		}
	}
}

// A scheduler's time is the server's clock as the request is answered,
// not when its status was last written: an idle scheduler writes none for
// hours of a simulated cluster's clock, and `voda workload replay` times
// its submissions by this clock. Before its first status it shows none.
func TestSchedulerNowIsTheClocks(t *testing.T) {
	f := newFixture(t)
	read := func() Scheduler {
		t.Helper()
		code, body := f.do("GET", "/api/v1/schedulers/v100", "", "")
		if code != http.StatusOK {
			t.Fatalf("GET scheduler: %d %s", code, body)
		}
		var s Scheduler
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := read(); s.Now != nil {
		t.Errorf("before its first status the scheduler says its time is %v, want none", s.Now)
	}
	written := f.clock.Now()
	if err := f.store.PutStatus(t.Context(), "v100", store.SchedulerStatus{Now: written, Nodes: 1, GPUs: 4}); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(2000 * time.Second)
	s := read()
	if s.Now == nil || !s.Now.Equal(f.clock.Now()) {
		t.Errorf("scheduler's time %v, want the clock's %v (its status was written at %v)", s.Now, f.clock.Now(), written)
	}
}
