package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/metrics"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

// Names come from the wall clock even when the scheduler's clock runs
// ahead of it (a simulated cluster after a --speed run); the submit time
// stays on the scheduler's clock.
func TestNamesFromWallClock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sched := t0.Add(5*time.Hour + 38*time.Minute)
	f.clock.SetTime(sched)
	j := f.create(mpiJob("wall", "1", "2", "v100"))
	if want := "wall-20261121-093015"; j.Name != want {
		t.Errorf("name = %s, want %s from the wall clock", j.Name, want)
	}
	if !j.SubmitTime.Equal(sched) {
		t.Errorf("submitTime = %v, want the scheduler's clock %v", j.SubmitTime, sched)
	}
}

// The name stamp is UTC whatever the clock's zone.
func TestNameStampIsUTC(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.nameClock.SetTime(t0.In(time.FixedZone("UTC+9", 9*3600)))
	if j := f.create(mpiJob("utc", "1", "2", "v100")); j.Name != "utc-20261121-093015" {
		t.Errorf("name = %s, want the UTC stamp", j.Name)
	}
}

// The answer to a submission names the algorithm in force for the job's
// GPU type, not the server's default.
func TestCreateAnswersAlgorithmOfGPUType(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "a100", "v100")
	if code, b := f.do("PUT", "/api/v1/schedulers/a100/algorithm", "application/json", `{"algorithm": "Tiresias"}`); code != http.StatusOK {
		t.Fatalf("set algorithm: %d %s", code, b)
	}
	for _, c := range []struct{ gpuType, want string }{{"a100", "Tiresias"}, {"v100", algorithm.DefaultName}} {
		for _, route := range []string{RouteJobs, RouteJobs + "?dryRun=All"} {
			code, b := f.do("POST", route, "application/yaml", mpiJob("algo", "1", "2", c.gpuType))
			var j Job
			if err := json.Unmarshal(b, &j); err != nil || code/100 != 2 || j.Scheduler != c.want {
				t.Errorf("POST %s on %s: %d scheduler %q, want %q (%s)", route, c.gpuType, code, j.Scheduler, c.want, b)
			}
		}
	}
}

// A dry run validates with the server's options and answers the job as
// it would be created, storing and notifying nothing.
func TestDryRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, b := f.do("POST", RouteJobs+"?dryRun=All", "application/yaml", mpiJob("dry", "1", "4", "v100"))
	if code != http.StatusOK {
		t.Fatalf("dry run: %d %s", code, b)
	}
	var got Job
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := Job{
		Name: "dry-20261121-093015", Namespace: "default", Kind: "MPIJob", GPUType: "v100", Status: "Submitted",
		MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 1, GPUsPerWorker: 1, Epochs: 5, Scheduler: algorithm.DefaultName, SubmitTime: t0, AsOf: t0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dry-run job (-want,+got):\n%s", diff)
	}
	if jobs, err := f.store.ListJobs(context.Background(), store.ListOptions{}); err != nil || len(jobs) != 0 {
		t.Errorf("a dry run stored %d jobs (%v)", len(jobs), err)
	}
	if msgs := f.received("v100"); len(msgs) != 0 {
		t.Errorf("a dry run notified the scheduler: %+v", msgs)
	}
	// The GPU types are the server's.
	if code, b := f.do("POST", RouteJobs+"?dryRun=All", "application/yaml", mpiJob("dry", "1", "4", "k80")); code != http.StatusBadRequest {
		t.Errorf("dry run of an unknown GPU type: %d %s", code, b)
	}
	for _, q := range []string{"dryRun=", "dryRun=all", "dryRun=All&dryRun=All"} {
		code, b := f.do("POST", RouteJobs+"?"+q, "application/yaml", mpiJob("dry", "1", "4", "v100"))
		var e Error
		_ = json.Unmarshal(b, &e)
		if code != http.StatusBadRequest || e.Error.Field != "dryRun" {
			t.Errorf("?%s: %d field %q, want 400 naming dryRun", q, code, e.Error.Field)
		}
	}
}

func TestMaxWorkersPassedToParser(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ cfg, want int }{{0, 0}, {16, 16}} {
		f := newFixtureWith(t, func(cfg *Config) { cfg.MaxWorkers = c.cfg })
		if got := f.srv.spec.MaxWorkers; got != c.want {
			t.Errorf("Config.MaxWorkers %d: parser's MaxWorkers %d, want %d", c.cfg, got, c.want)
		}
	}
	if jobspec.DefaultMaxWorkers < 1 {
		t.Fatal("jobspec.DefaultMaxWorkers is not positive")
	}
}

// TestPodSecurityPassedToParser: the level and the service account
// switch reach the parser, a bad level is refused, and a manifest the
// level forbids is a 400 naming the pod template.
func TestPodSecurityPassedToParser(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, func(cfg *Config) { cfg.PodSecurity, cfg.AllowServiceAccount = jobspec.PodSecurityRestricted, true })
	if got := f.srv.spec; got.PodSecurity != jobspec.PodSecurityRestricted || !got.AllowServiceAccount {
		t.Errorf("parser's options %+v, want restricted with service accounts", got)
	}
	cfg := f.srv.cfg
	cfg.PodSecurity = "Baseline"
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), `pod security level "Baseline" is not one of`) {
		t.Errorf("New with level Baseline: %v", err)
	}
	f = newFixture(t)
	privileged := strings.Replace(mpiJob("root", "1", "4", "v100"), "[{name: worker}]", "[{name: worker, securityContext: {privileged: true}}]", 1)
	code, b := f.do("POST", RouteJobs, "application/yaml", privileged)
	var e Error
	_ = json.Unmarshal(b, &e)
	if code != http.StatusBadRequest || e.Error.Field != "spec.mpiReplicaSpecs.Worker.template.spec" || !strings.Contains(e.Error.Message, `violates PodSecurity "baseline:latest": privileged`) {
		t.Errorf("privileged worker: %d %s", code, b)
	}
}

// overlayStore returns some jobs as given, over a real store: records
// the store cannot produce here (unreadable ones, statuses with reasons).
type overlayStore struct {
	store.Store
	jobs map[string]store.Job
}

func (o overlayStore) GetJob(ctx context.Context, name string) (store.Job, error) {
	if j, ok := o.jobs[name]; ok {
		return j, nil
	}
	return o.Store.GetJob(ctx, name)
}

func (o overlayStore) ListJobs(ctx context.Context, opts store.ListOptions) ([]store.Job, error) {
	jobs, err := o.Store.ListJobs(ctx, opts)
	for _, j := range o.jobs {
		jobs = append(jobs, j)
	}
	return jobs, err
}

func TestReasonsAndUnreadableRecords(t *testing.T) {
	t.Parallel()
	waiting := store.Job{Name: "big-20261121-093015", Kind: "MPIJob", Spec: model.JobSpec{GPUType: "v100", MinWorkers: 1000, MaxWorkers: 1000, SubmitTime: t0}}
	waiting.Status.State.Status = "Waiting"
	waiting.Status.Reason = store.ReasonUnschedulable
	waiting.Status.Message = "needs at least 1000 GPUs; the v100 nodes have 32 in all"
	broken := store.Job{Name: "broken-20261121-093015", Unreadable: "status.updated: not a time"}
	f := newFixtureWith(t, func(cfg *Config) {
		cfg.Store = overlayStore{Store: cfg.Store, jobs: map[string]store.Job{waiting.Name: waiting, broken.Name: broken}}
	})
	type view struct{ Status, Reason, Message string }
	for _, c := range []struct {
		name string
		want view
	}{
		{waiting.Name, view{"Waiting", "Unschedulable", waiting.Status.Message}},
		{broken.Name, view{"Failed", "Unreadable", "status.updated: not a time"}},
	} {
		code, b := f.do("GET", "/api/v1/jobs/"+c.name, "", "")
		var j Job
		if err := json.Unmarshal(b, &j); err != nil || code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", c.name, code, b)
		}
		if diff := cmp.Diff(c.want, view{string(j.Status), j.Reason, j.Message}); diff != "" {
			t.Errorf("GET %s (-want,+got):\n%s", c.name, diff)
		}
	}
	code, b := f.do("GET", RouteJobs+"?status=Failed", "", "")
	if code != http.StatusOK || !strings.Contains(string(b), `"reason": "Unreadable"`) || strings.Contains(string(b), waiting.Name) {
		t.Errorf("list Failed: %d %s", code, b)
	}
	// An unreadable record is finished: it cannot be reprioritised, like
	// any other finished job, nor removed before its scheduler set it
	// aside (the store does not see its status as finished).
	for _, req := range [][3]string{
		{"DELETE", "/api/v1/jobs/" + broken.Name, ""},
		{"PUT", "/api/v1/jobs/" + broken.Name + "/priority", `{"priority": 1}`},
		{"DELETE", RouteLegacyJobs, broken.Name},
	} {
		if code, b := f.do(req[0], req[1], "application/json", req[2]); code != http.StatusConflict {
			t.Errorf("%s %s of an unreadable job: %d %s, want 409", req[0], req[1], code, b)
		}
	}
	// An ordinary job shows no reason at all.
	j := f.create(mpiJob("plain", "1", "2", "v100"))
	if _, b := f.do("GET", "/api/v1/jobs/"+j.Name, "", ""); strings.Contains(string(b), `"reason"`) || strings.Contains(string(b), `"message"`) {
		t.Errorf("a job without a reason shows one: %s", b)
	}
}

// An estimated start whose time has passed while the job still waits is
// shown as now (the job is expected at the next cycle), never in the past;
// a future one as the scheduler made it.
func TestEstimatedStartNeverInThePast(t *testing.T) {
	t.Parallel()
	waiting := func(name string, start time.Time) store.Job {
		j := store.Job{Name: name, Kind: "MPIJob", Spec: model.JobSpec{GPUType: "v100", MinWorkers: 1, MaxWorkers: 2, SubmitTime: t0.Add(-time.Hour)}}
		j.Status.State.Status = model.StatusWaiting
		j.Status.QueuePosition = 1
		j.Status.EstimatedStart = start
		return j
	}
	past, future := waiting("past-20261121-093015", t0.Add(-6*time.Second)), waiting("future-20261121-093015", t0.Add(time.Hour))
	f := newFixtureWith(t, func(cfg *Config) {
		cfg.Store = overlayStore{Store: cfg.Store, jobs: map[string]store.Job{past.Name: past, future.Name: future}}
	})
	for name, want := range map[string]time.Time{past.Name: t0, future.Name: t0.Add(time.Hour)} {
		code, b := f.do("GET", "/api/v1/jobs/"+name, "", "")
		var j Job
		if err := json.Unmarshal(b, &j); err != nil || code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", name, code, b)
		}
		if j.EstimatedStart == nil || !j.EstimatedStart.Equal(want) || j.EstimatedStart.Before(j.AsOf) {
			t.Errorf("%s: estimatedStart %v (asOf %v), want %v", name, j.EstimatedStart, j.AsOf, want)
		}
	}
}

// TestLegacyClients replays the original Voda's clients: its Go CLI
// (net/http, no Content-Type: the raw YAML, the raw name) and the curl
// calls of its documentation, which send JSON strings and curl's form
// Content-Type.
func TestLegacyClients(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const form = "application/x-www-form-urlencoded"
	steps := []struct {
		what                      string
		method, path, ctype, body string
		code                      int
		want                      string
	}{
		{"CLI: create", "POST", RouteLegacyJobs, "", mpiJob("cli", "1", "2", "v100"), 201, "Training job created: cli-20261121-093015\n"},
		{"curl --data-binary @job.yaml", "POST", RouteLegacyJobs, form, mpiJob("curl", "1", "2", "v100"), 201, "Training job created: curl-20261121-093015\n"},
		{"CLI: list", "GET", RouteLegacyJobs, "", "", 200, "cli-20261121-093015"},
		{"CLI: delete", "DELETE", RouteLegacyJobs, "", "cli-20261121-093015", 200, "Training job deleted: cli-20261121-093015\n"},
		{"curl -X DELETE --data '\"name\"'", "DELETE", RouteLegacyJobs, form, `"curl-20261121-093015"`, 200, "Training job deleted: curl-20261121-093015\n"},
		{"curl -X PUT /algorithm --data '\"ElasticFIFO\"'", "PUT", RouteLegacyAlgo, form, `"ElasticFIFO"`, 200, "Algorithm of v100 set to ElasticFIFO\n"},
		{"curl -X PUT /algorithm --data '\"ElasticSRJF\"'", "PUT", RouteLegacyAlgo, form, `"ElasticSRJF"`, 200, "Algorithm of v100 set to ElasticSRJF\n"},
		{"raw algorithm name", "PUT", RouteLegacyAlgo, "", "Tiresias\n", 200, "Algorithm of v100 set to Tiresias\n"},
		{"curl -X PUT /ratelimit --data 30", "PUT", RouteLegacyLimit, form, "30", 200, "Rate limit of v100 set to 30s\n"},
		{"rate limit as a JSON string", "PUT", RouteLegacyLimit, form, `"15"`, 200, "Rate limit of v100 set to 15s\n"},
	}
	for _, s := range steps {
		code, b := f.do(s.method, s.path, s.ctype, s.body)
		if code != s.code || !strings.Contains(string(b), s.want) {
			t.Errorf("%s: %d %q, want %d with %q", s.what, code, b, s.code, s.want)
		}
	}
	for _, name := range []string{"cli-20261121-093015", "curl-20261121-093015"} {
		if j, err := f.store.GetJob(context.Background(), name); err != nil || !j.DeleteRequested {
			t.Errorf("%s: deleteRequested %v, %v", name, j.DeleteRequested, err)
		}
	}
}

func TestLegacyText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"name", "name"},
		{" name\n", "name"},
		{`"name"`, "name"},
		{` "ElasticFIFO" ` + "\n", "ElasticFIFO"},
		{`"30"`, "30"},
		{`"unterminated`, `"unterminated`},
		{`"a" "b"`, `"a" "b"`},
		{"", ""},
	} {
		if got := legacyText([]byte(c.in)); got != c.want {
			t.Errorf("legacyText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Deleting a live job asks its scheduler to halt it, 202 however often
// it is deleted while halted; deleting a finished job, whether deleted
// before or not, removes its record: 200 with its last view, then 404.
// Both routes alike.
func TestDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := []struct {
		name    string
		deleted bool
		status  model.Status
		code    int // DELETE /api/v1/jobs/{name}
		removed bool
	}{
		{name: "live", status: model.StatusRunning, code: http.StatusAccepted},
		{name: "waiting", status: model.StatusWaiting, code: http.StatusAccepted},
		{name: "being halted", deleted: true, status: model.StatusRunning, code: http.StatusAccepted},
		{name: "deleted and canceled", deleted: true, status: model.StatusCanceled, code: http.StatusOK, removed: true},
		{name: "deleted as it completed", deleted: true, status: model.StatusCompleted, code: http.StatusOK, removed: true},
		{name: "completed", status: model.StatusCompleted, code: http.StatusOK, removed: true},
		{name: "failed", status: model.StatusFailed, code: http.StatusOK, removed: true},
		{name: "canceled outside Voda", status: model.StatusCanceled, code: http.StatusOK, removed: true},
	}
	for i, c := range cases {
		for _, route := range []string{"v1", "legacy"} {
			j := f.create(mpiJob(fmt.Sprintf("d%d-%s", i, route), "1", "2", "v100"))
			if c.deleted {
				if err := f.store.RequestDelete(context.Background(), j.Name); err != nil {
					t.Fatal(err)
				}
			}
			stored, err := f.store.GetJob(context.Background(), j.Name)
			if err != nil {
				t.Fatal(err)
			}
			st := stored.Status
			st.State.Status = c.status
			f.saveStatus(j.Name, st)

			for try := range 2 {
				var code, want int
				var b []byte
				if route == "v1" {
					code, b = f.do("DELETE", "/api/v1/jobs/"+j.Name, "", "")
					want = c.code
				} else {
					code, b = f.do("DELETE", RouteLegacyJobs, "text/plain", j.Name)
					want = http.StatusOK
				}
				if try == 1 && c.removed {
					want = http.StatusNotFound
				}
				if code != want {
					t.Errorf("%s, %s route, delete #%d: %d %s, want %d", c.name, route, try+1, code, b, want)
				}
				if route == "v1" && code == http.StatusOK {
					var v Job
					if err := json.Unmarshal(b, &v); err != nil || v.Name != j.Name || v.Status != Status(c.status) {
						t.Errorf("%s: the answer is not the job's last view: %s", c.name, b)
					}
				}
			}
			_, err = f.store.GetJob(context.Background(), j.Name)
			if gone := errors.Is(err, store.ErrNotFound); gone != c.removed {
				t.Errorf("%s, %s route: record gone %v (%v), want %v", c.name, route, gone, err, c.removed)
			}
		}
	}
	removed := 0
	for _, c := range cases {
		if c.removed {
			removed += 2
		}
	}
	if got := testutil.ToFloat64(f.srv.cfg.Metrics.JobsRemoved.WithLabelValues(metrics.RemovedDeleted)); got != float64(removed) {
		t.Errorf("voda_jobs_removed_total{reason=deleted} = %v, want %d", got, removed)
	}
}

// Deleting a finished job takes the right to delete it, as a live one
// does: a caller who may not is refused and the record stays.
func TestRemoveNeedsTheRightToDelete(t *testing.T) {
	t.Parallel()
	tf, err := auth.ParseTokenFile([]byte(adminToken + ",root,0\n" + userToken + ",alice,1,team-a\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, func(c *Config) { c.Authenticator, c.Authorizer = tf, &teamAuthorizer{} })
	code, _, _, b := f.as(adminToken, "POST", RouteJobs, "application/yaml", inNamespace("theirs", "team-b"))
	var j Job
	if err := json.Unmarshal(b, &j); err != nil || code != http.StatusCreated {
		t.Fatalf("submit: %d %s", code, b)
	}
	f.saveStatus(j.Name, store.JobStatus{State: model.JobState{Status: model.StatusCompleted}})
	if code, _, e, _ := f.as(userToken, "DELETE", "/api/v1/jobs/"+j.Name, "", ""); code != http.StatusForbidden {
		t.Errorf("alice removes team-b's finished job: %d %+v, want 403", code, e)
	}
	if _, err := f.store.GetJob(context.Background(), j.Name); err != nil {
		t.Errorf("the record after a refused delete: %v", err)
	}
	if code, _, e, _ := f.as(adminToken, "DELETE", "/api/v1/jobs/"+j.Name, "", ""); code != http.StatusOK {
		t.Errorf("root removes it: %d %+v, want 200", code, e)
	}
}

// A manifest's unknown fields come back as kube-apiserver writes them: a
// Warning header each, and the answer's warnings, on every route that
// takes a manifest, accepted or rejected; they are not stored.
func TestUnknownFieldWarnings(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	typo := func(name string) string {
		return strings.Replace(mpiJob(name, "1", "2", "v100"), "spec:\n", "spec:\n  slotsPerWorkr: 1\n", 1)
	}
	const text = `unknown field "spec.slotsPerWorkr"`
	const header = `299 - "unknown field \"spec.slotsPerWorkr\""`
	cases := []struct {
		name, method, path, body string
		code                     int
		headers, warnings        []string
	}{
		{name: "create", method: "POST", path: RouteJobs, body: typo("c"), code: http.StatusCreated, headers: []string{header}, warnings: []string{text}},
		{name: "dry run", method: "POST", path: RouteJobs + "?dryRun=All", body: typo("d"), code: http.StatusOK, headers: []string{header}, warnings: []string{text}},
		{name: "legacy create: headers only", method: "POST", path: RouteLegacyJobs, body: typo("l"), code: http.StatusCreated, headers: []string{header}},
		{name: "clean manifest", method: "POST", path: RouteJobs, body: mpiJob("clean", "1", "2", "v100"), code: http.StatusCreated},
		{
			name: "rejected: the misspelt field may be why", method: "POST", path: RouteJobs,
			body: strings.Replace(mpiJob("r", "1", "2", "v100"), "mpiReplicaSpecs:", "mpiReplicaSpec:", 1), code: http.StatusBadRequest,
			headers: []string{`299 - "unknown field \"spec.mpiReplicaSpec\""`}, warnings: []string{`unknown field "spec.mpiReplicaSpec"`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, h, b := f.doWith("", c.method, c.path, "application/yaml", c.body)
			if code != c.code {
				t.Fatalf("%d %s, want %d", code, b, c.code)
			}
			if diff := cmp.Diff(c.headers, h.Values("Warning")); diff != "" {
				t.Errorf("Warning headers (-want,+got):\n%s", diff)
			}
			var got []string
			switch {
			case c.path == RouteLegacyJobs:
				if !strings.HasPrefix(string(b), "Training job created: l-") || strings.Contains(string(b), "unknown") {
					t.Errorf("legacy answer %q, want the original's text alone", b)
				}
			case code == http.StatusBadRequest:
				var e Error
				if err := json.Unmarshal(b, &e); err != nil {
					t.Fatal(err)
				}
				got = e.Error.Warnings
			default:
				var j Job
				if err := json.Unmarshal(b, &j); err != nil {
					t.Fatal(err)
				}
				got = j.Warnings
				// The warnings belong to the answer, not to the job.
				if _, b := f.do("GET", "/api/v1/jobs/"+j.Name, "", ""); c.path == RouteJobs && strings.Contains(string(b), "warnings") {
					t.Errorf("GET after create shows warnings: %s", b)
				}
			}
			if diff := cmp.Diff(c.warnings, got); diff != "" {
				t.Errorf("warnings (-want,+got):\n%s", diff)
			}
		})
	}

	// Thousands of unknown fields: 20 headers and one that counts the rest.
	var many strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&many, "  x%04d: 1\n", i)
	}
	_, h, _ := f.doWith("", "POST", RouteJobs+"?dryRun=All", "application/yaml", strings.Replace(mpiJob("many", "1", "2", "v100"), "spec:\n", "spec:\n"+many.String(), 1))
	if ws := h.Values("Warning"); len(ws) != 21 || ws[20] != `299 - "2980 more unknown fields not listed"` {
		t.Errorf("%d Warning headers, the last %q; want 21, the last counting the rest", len(ws), ws[len(ws)-1])
	}
}
