package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/internal/store"
)

// running gives a stored job an allocation of workers since now, as its
// scheduler would.
func (f *fixture) running(name string, workers int) {
	f.t.Helper()
	f.runningWith(name, workers, model.Estimates{RemainingSeconds: -1})
}

// runningWith is running with the scheduler's estimates est.
func (f *fixture) runningWith(name string, workers int, est model.Estimates) {
	f.t.Helper()
	ctx := context.Background()
	j, err := f.store.GetJob(ctx, name)
	if err != nil {
		f.t.Fatal(err)
	}
	st := j.Status
	st.State.Status, st.State.GPUs, st.State.LastChange = model.StatusRunning, workers, f.clock.Now()
	st.Est = est
	res, err := f.store.SaveStatus(ctx, map[string]store.StatusWrite{name: {Status: st, Revision: j.StatusRevision}})
	if err != nil || len(res.Conflicts) > 0 || len(res.Missing) > 0 {
		f.t.Fatalf("save status: %v %+v", err, res)
	}
}

func (f *fixture) state(name string) (*progress.State, int64) {
	f.t.Helper()
	j, err := f.store.GetJob(context.Background(), name)
	if err != nil {
		f.t.Fatal(err)
	}
	s, err := progress.Decode(j.Progress)
	if err != nil {
		f.t.Fatal(err)
	}
	return s, j.ProgressRevision
}

func report(gen string, workers int, steps int64, epoch float64) string {
	b, _ := json.Marshal(map[string]any{"generation": gen, "workers": workers, "nodes": 1, "steps": steps, "epoch": epoch, "totalEpochs": 10})
	return string(b)
}

// TestProgressReports follows a job's reports through the route: the
// first and the warm-up are kept but not measured, the next ones are, and
// the stored state holds the measured throughput.
func TestProgressReports(t *testing.T) {
	f := newFixture(t)
	j := f.create(mpiJob("mnist", "1", "4", "v100"))
	path := "/api/v1/jobs/" + j.Name + "/progress"
	f.clock.Step(10 * time.Second)
	f.running(j.Name, 2)
	for i, c := range []struct {
		body    string
		after   time.Duration
		used    bool
		reason  string
		workers int
	}{
		{report("g1", 2, 0, 0), 30 * time.Second, false, progress.ReasonFirst, 2},
		{report("g1", 2, 100, 0.5), 30 * time.Second, false, progress.ReasonWarmUp, 2},
		{report("g1", 2, 200, 1.0), 30 * time.Second, true, "", 2},
		{report("g1", 2, 300, 1.5), 30 * time.Second, true, "", 2},
	} {
		f.clock.Step(c.after)
		code, b := f.do("POST", path, "application/json", c.body)
		if code != http.StatusOK {
			t.Fatalf("report %d: %d %s", i, code, b)
		}
		var reply progress.Reply
		if err := json.Unmarshal(b, &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Job != j.Name || reply.Used != c.used || reply.Reason != c.reason || reply.Allocation.Workers != c.workers || reply.ReportIntervalSeconds != progress.DefaultInterval {
			t.Errorf("report %d: reply %+v, want used %v reason %q workers %d", i, reply, c.used, c.reason, c.workers)
		}
	}
	s, rev := f.state(j.Name)
	if rev != 4 || s.Latest.Epoch != 1.5 || s.Generations != 1 || s.Measured.Restarts != 1 || s.Measured.RestartSeconds != 30 {
		t.Errorf("stored state (revision %d): %+v", rev, s)
	}
	if p := s.Measured.Placements; len(p) != 1 || p[0].Workers != 2 || p[0].Nodes != 1 || p[0].Work != 1 || p[0].Seconds != 60 || p[0].Intervals != 2 {
		t.Errorf("measured placements %+v, want 1 epoch in 60 s over 2 intervals on (2 workers, 1 node)", p)
	}
	if got, want := testutil.ToFloat64(f.srv.cfg.Metrics.ProgressReports.WithLabelValues("v100", "used")), 2.0; got != want {
		t.Errorf("used reports counted %v, want %v", got, want)
	}
}

// TestProgressRefused: a report that is malformed, contradicts the
// earlier ones, or names no live job is refused and changes nothing.
func TestProgressRefused(t *testing.T) {
	f := newFixture(t)
	j := f.create(mpiJob("mnist", "1", "4", "v100"))
	done := f.create(mpiJob("done", "1", "4", "v100"))
	path := "/api/v1/jobs/" + j.Name + "/progress"
	f.running(j.Name, 2)
	if code, b := f.do("POST", path, "application/json", report("g1", 2, 100, 1)); code != 200 {
		t.Fatalf("first report: %d %s", code, b)
	}
	ctx := context.Background()
	dj, _ := f.store.GetJob(ctx, done.Name)
	st := dj.Status
	st.State.Status = model.StatusCompleted
	if _, err := f.store.SaveStatus(ctx, map[string]store.StatusWrite{done.Name: {Status: st, Revision: dj.StatusRevision}}); err != nil {
		t.Fatal(err)
	}
	big := `{"generation": "g1", "workers": 2, "steps": 1, "epoch": 1, "metrics": {"x": 1}, "pad": "` + strings.Repeat("x", 70<<10) + `"}`
	for _, c := range []struct {
		name, path, contentType, body string
		code                          int
		field, message                string
	}{
		{"steps decreased", path, "application/json", report("g1", 2, 99, 1), 400, "steps", `99 is below 100, reported earlier in generation \"g1\"`},
		{"workers changed within a generation", path, "application/json", report("g1", 3, 100, 1), 400, "workers", "changed from 2 to 3"},
		{"missing epoch", path, "application/json", `{"generation": "g1", "workers": 2, "steps": 100}`, 400, "epoch", "required"},
		{"unknown field", path, "application/json", `{"generation": "g1", "workers": 2, "steps": 100, "epoch": 1, "loss": 3}`, 400, "loss", "unknown field"},
		{"key twice", path, "application/json", `{"generation": "g1", "generation": "g2", "workers": 2, "steps": 100, "epoch": 1}`, 400, "generation", "given twice"},
		{"float workers", path, "application/json", `{"generation": "g1", "workers": 2.5, "steps": 100, "epoch": 1}`, 400, "workers", "must be an integer"},
		{"absurd epoch", path, "application/json", report("g1", 2, 100, 1e9), 400, "epoch", "outside"},
		{"too many workers", path, "application/json", report("g1", 5000, 100, 1), 400, "workers", "outside [1, 1024]"},
		{"not JSON", path, "text/plain", report("g1", 2, 100, 1), 415, "Content-Type", ""},
		{"too large", path, "application/json", big, 413, "body", "at most 65536"},
		{"no such job", "/api/v1/jobs/nosuch/progress", "application/json", report("g1", 2, 100, 1), 404, "name", "no job"},
		{"finished job", "/api/v1/jobs/" + done.Name + "/progress", "application/json", report("g1", 2, 100, 1), 409, "name", "has finished"},
	} {
		code, b := f.do("POST", c.path, c.contentType, c.body)
		var e Error
		_ = json.Unmarshal(b, &e)
		if code != c.code || e.Error.Field != c.field || !strings.Contains(string(b), c.message) {
			t.Errorf("%s: %d %s, want %d naming %s with %q", c.name, code, b, c.code, c.field, c.message)
		}
	}
	if s, rev := f.state(j.Name); rev != 1 || s.Latest.Steps != 100 {
		t.Errorf("after the refusals: revision %d, latest %+v; want the first report alone", rev, s.Latest)
	}
	if s, _ := f.state(done.Name); s != nil {
		t.Errorf("the finished job kept a report: %+v", s)
	}
}

// podAuthorizer allows reports from the token of "pod-of-<job>".
type podAuthorizer struct{}

func (podAuthorizer) Authorize(_ context.Context, u auth.User, a auth.Attributes) (bool, string, error) {
	if a.Subresource == auth.SubresourceProgress && u.Name == "pod-of-"+a.Name {
		return true, "", nil
	}
	return false, "not a pod of job " + a.Name, nil
}

// TestProgressAuthentication: with report credentials of their own (on
// Kubernetes: the job's pods), the progress route takes those and no
// others, and the other routes do not take them.
func TestProgressAuthentication(t *testing.T) {
	users, err := auth.ParseTokenFile([]byte(userToken + ",alice,1,voda:users\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, func(c *Config) {
		c.Authenticator, c.Authorizer = users, auth.NewRoles("", "")
	})
	j := f.create2(userToken, mpiJob("mnist", "1", "4", "v100"))
	pods, err := auth.ParseTokenFile([]byte("pod-token-0123456789,pod-of-" + j + ",p1\nother-pod-token-0123456789,pod-of-someone-else,p2\n"))
	if err != nil {
		t.Fatal(err)
	}
	f.srv.cfg.ReportAuthenticator, f.srv.cfg.ReportAuthorizer = pods, podAuthorizer{}
	path := "/api/v1/jobs/" + j + "/progress"
	for _, c := range []struct {
		name, token, method, path, body string
		code                            int
	}{
		{"the job's pod reports", "pod-token-0123456789", "POST", path, report("g1", 1, 0, 0), 200},
		{"another job's pod reports", "other-pod-token-0123456789", "POST", path, report("g1", 1, 0, 0), 403},
		{"a user reports", userToken, "POST", path, report("g1", 1, 0, 0), 401},
		{"no token", "", "POST", path, report("g1", 1, 0, 0), 401},
		{"the pod lists jobs", "pod-token-0123456789", "GET", RouteJobs, "", 401},
		{"the pod deletes its job", "pod-token-0123456789", "DELETE", "/api/v1/jobs/" + j, "", 401},
	} {
		contentType := ""
		if c.body != "" {
			contentType = "application/json"
		}
		code, _, b := f.doWith(c.token, c.method, c.path, contentType, c.body)
		if code != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, code, b, c.code)
		}
	}
}

// create2 submits a manifest with a token and returns the job's name.
func (f *fixture) create2(token, manifest string) string {
	f.t.Helper()
	code, _, b := f.doWith(token, "POST", RouteJobs, "application/yaml", manifest)
	if code != http.StatusCreated {
		f.t.Fatalf("create: %d %s", code, b)
	}
	var j Job
	if err := json.Unmarshal(b, &j); err != nil {
		f.t.Fatal(err)
	}
	return j.Name
}

// TestProgressBatchAdvice: a job that declares an adaptive batch gets
// the batch size the scheduler's estimates chose for its allocation in
// the reply, split within its bounds; a job with a fixed batch gets none.
func TestProgressBatchAdvice(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name   string
		bounds map[string]any
		advice bool
	}{
		{"adaptive", map[string]any{"initBatchSize": 128, "maxBatchSize": 4096, "maxLocalBatchSize": 256}, true},
		{"fixed: equal bounds", map[string]any{"initBatchSize": 128, "maxBatchSize": 128}, false},
		{"fixed: no bounds", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := f.create(mpiJob("batch", "1", "4", "v100"))
			path := "/api/v1/jobs/" + j.Name + "/progress"
			f.runningWith(j.Name, 2, model.Estimates{RemainingSeconds: 100, Speedup: []float64{0, 1, 1.8}, Batch: []int{0, 256, 512}})
			var reply map[string]any
			for i := range 4 {
				body := map[string]any{"generation": "g1", "workers": 2, "nodes": 1, "steps": 100 * i, "epoch": float64(i) / 4,
					"globalBatchSize": 128, "localBatchSize": 64, "stepSeconds": 0.25, "gradSqNorm": 1, "gradVariance": 50}
				for k, v := range c.bounds {
					body[k] = v
				}
				raw, _ := json.Marshal(body)
				f.clock.Step(30 * time.Second)
				code, b := f.do("POST", path, "application/json", string(raw))
				if code != http.StatusOK {
					t.Fatalf("report %d: %d %s", i, code, b)
				}
				reply = nil
				if err := json.Unmarshal(b, &reply); err != nil {
					t.Fatal(err)
				}
				if _, ok := reply["hints"]; ok {
					t.Errorf("report %d: a reply with hints: %s", i, b)
				}
			}
			batch, ok := reply["batch"].(map[string]any)
			if ok != c.advice {
				t.Fatalf("reply %v: batch %v, want one: %v", reply, reply["batch"], c.advice)
			}
			if !ok {
				return
			}
			size, local, accum, scale := batch["size"].(float64), batch["localSize"].(float64), batch["accumulationSteps"].(float64), batch["lrScale"].(float64)
			if size != 512 || size != 2*local*(accum+1) || local > 256 || scale < 1 {
				t.Errorf("advice %v: want the estimates' 512 on 2 workers x localSize x (accumulationSteps+1), lrScale at least 1", batch)
			}
			s, _ := f.state(j.Name)
			if s.Goodput == nil || s.Goodput.Advice == nil || float64(s.Goodput.Advice.Size) != size {
				t.Errorf("stored goodput state %+v does not hold the advice %v", s.Goodput, batch)
			}
		})
	}
}
