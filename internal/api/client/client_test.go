package client

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/api"
)

func TestNewBaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		wantErr  string
	}{
		{in: "127.0.0.1:55587", want: "http://127.0.0.1:55587"},
		{in: "  localhost:8080  ", want: "http://localhost:8080"},
		{in: "voda.example.com", want: "http://voda.example.com"},
		{in: "http://127.0.0.1:55587/", want: "http://127.0.0.1:55587"},
		{in: "https://gw.example.com/voda/", want: "https://gw.example.com/voda"},
		{in: "http://[::1]:55587", want: "http://[::1]:55587"},
		{in: "", wantErr: "empty"},
		{in: "ftp://host:21", wantErr: `scheme "ftp"`},
		{in: "http://", wantErr: "no host"},
		{in: ":55587", wantErr: "no host"},
		{in: "host:port", wantErr: "invalid port"},
		{in: "http://user:pw@host:1", wantErr: "user information"},
		{in: "http://host:1/?x=1", wantErr: "query or fragment"},
		{in: "http://host:1/#top", wantErr: "query or fragment"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			c, err := New(tc.in, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%q): %v", tc.in, err)
			}
			if got := c.BaseURL(); got != tc.want {
				t.Errorf("BaseURL() = %q, want %q", got, tc.want)
			}
		})
	}
}

// request is what the test server saw.
type request struct {
	Method, Path, Query, ContentType, Body string
}

// recorder answers every request with status and body and records it.
func recorder(t *testing.T, status int, contentType, body string) (*Client, *request) {
	t.Helper()
	seen := &request{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*seen = request{
			Method:      r.Method,
			Path:        r.URL.EscapedPath(),
			Query:       r.URL.RawQuery,
			ContentType: r.Header.Get("Content-Type"),
			Body:        string(b),
		}
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c, seen
}

const jobJSON = `{"name":"mnist-20250601-100000","kind":"MPIJob","gpuType":"v100","status":"Running",
"workers":2,"minWorkers":1,"maxWorkers":4,"requestedWorkers":2,"priority":0,"epochs":10,
"scheduler":"ElasticFIFO","placement":{"node-a":2},"submitTime":"2025-06-01T10:00:00Z",
"waitingSeconds":5,"runningSeconds":60,"totalSeconds":65,"attainedService":120,
"restarts":1,"priorityQueue":0,"progress":0.25}`

const schedulerJSON = `{"gpuType":"v100","algorithm":"SRJF","params":{"k":"v"},"rateLimitSeconds":10,
"cycles":3,"nodes":2,"gpus":8,"gpusInUse":2,"waiting":0,"running":1}`

const teamJSON = `{"team":"team-a","quota":true,"guarantee":8,"limit":16,"weight":1,"gpusInUse":4,
"entitled":8,"demand":12,"running":1,"waiting":1}`

var wantTeam = api.Team{Team: "team-a", Quota: true, Guarantee: 8, Limit: 16, Weight: 1, GPUsInUse: 4,
	Entitled: 8, Demand: 12, Running: 1, Waiting: 1}

var wantJob = api.Job{
	Name: "mnist-20250601-100000", Kind: "MPIJob", GPUType: "v100", Status: "Running",
	Workers: 2, MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, Epochs: 10,
	Scheduler: "ElasticFIFO", Placement: map[string]int{"node-a": 2},
	SubmitTime:     time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC),
	WaitingSeconds: 5, RunningSeconds: 60, TotalSeconds: 65, AttainedService: 120,
	Restarts: 1, Progress: 0.25,
}

var wantScheduler = api.Scheduler{
	GPUType: "v100", Algorithm: "SRJF", Params: map[string]string{"k": "v"},
	RateLimitSeconds: 10, Cycles: 3, Nodes: 2, GPUs: 8, GPUsInUse: 2, Running: 1,
}

func TestClientCalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		answer string
		call   func(context.Context, *Client) (any, error)
		want   any
		req    request
	}{
		{
			name: "create YAML", status: http.StatusCreated, answer: jobJSON,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.CreateJob(ctx, []byte("kind: MPIJob\nmetadata:\n  name: mnist\n"))
			},
			want: wantJob,
			req:  request{Method: "POST", Path: "/api/v1/jobs", ContentType: "application/yaml", Body: "kind: MPIJob\nmetadata:\n  name: mnist\n"},
		},
		{
			name: "create JSON", status: http.StatusCreated, answer: jobJSON,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.CreateJob(ctx, []byte(` {"kind": "MPIJob"}`+"\n"))
			},
			want: wantJob,
			req:  request{Method: "POST", Path: "/api/v1/jobs", ContentType: "application/json", Body: ` {"kind": "MPIJob"}` + "\n"},
		},
		{
			name: "validate", status: http.StatusOK, answer: jobJSON,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.ValidateJob(ctx, []byte("kind: MPIJob\nmetadata:\n  name: mnist\n"))
			},
			want: wantJob,
			req:  request{Method: "POST", Path: "/api/v1/jobs", Query: "dryRun=All", ContentType: "application/yaml", Body: "kind: MPIJob\nmetadata:\n  name: mnist\n"},
		},
		{
			name: "list all", status: http.StatusOK, answer: `{"items":[` + jobJSON + `]}`,
			call: func(ctx context.Context, c *Client) (any, error) { return c.ListJobs(ctx, ListOptions{}) },
			want: []api.Job{wantJob},
			req:  request{Method: "GET", Path: "/api/v1/jobs"},
		},
		{
			name: "list filtered", status: http.StatusOK, answer: `{"items":[]}`,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.ListJobs(ctx, ListOptions{GPUType: "a100 80g", Status: "Waiting", Live: true})
			},
			want: []api.Job{},
			req:  request{Method: "GET", Path: "/api/v1/jobs", Query: "gpuType=a100+80g&live=true&status=Waiting"},
		},
		{
			name: "get", status: http.StatusOK, answer: jobJSON,
			call: func(ctx context.Context, c *Client) (any, error) { return c.GetJob(ctx, "mnist-20250601-100000") },
			want: wantJob,
			req:  request{Method: "GET", Path: "/api/v1/jobs/mnist-20250601-100000"},
		},
		{
			name: "get escapes the name", status: http.StatusOK, answer: jobJSON,
			call: func(ctx context.Context, c *Client) (any, error) { return c.GetJob(ctx, "a/b c?") },
			want: wantJob,
			req:  request{Method: "GET", Path: "/api/v1/jobs/a%2Fb%20c%3F"},
		},
		{
			name: "delete", status: http.StatusAccepted, answer: jobJSON,
			call: func(ctx context.Context, c *Client) (any, error) { return c.DeleteJob(ctx, "mnist") },
			want: wantJob,
			req:  request{Method: "DELETE", Path: "/api/v1/jobs/mnist", ContentType: "application/json"},
		},
		{
			name: "priority", status: http.StatusOK, answer: jobJSON,
			call: func(ctx context.Context, c *Client) (any, error) { return c.SetPriority(ctx, "mnist", 0) },
			want: wantJob,
			req:  request{Method: "PUT", Path: "/api/v1/jobs/mnist/priority", ContentType: "application/json", Body: `{"priority":0}`},
		},
		{
			name: "schedulers", status: http.StatusOK, answer: `{"items":[` + schedulerJSON + `]}`,
			call: func(ctx context.Context, c *Client) (any, error) { return c.ListSchedulers(ctx) },
			want: []api.Scheduler{wantScheduler},
			req:  request{Method: "GET", Path: "/api/v1/schedulers"},
		},
		{
			name: "scheduler", status: http.StatusOK, answer: schedulerJSON,
			call: func(ctx context.Context, c *Client) (any, error) { return c.GetScheduler(ctx, "v100") },
			want: wantScheduler,
			req:  request{Method: "GET", Path: "/api/v1/schedulers/v100"},
		},
		{
			name: "algorithm", status: http.StatusOK, answer: schedulerJSON,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.SetAlgorithm(ctx, "v100", "SRJF", map[string]string{"k": "v"})
			},
			want: wantScheduler,
			req:  request{Method: "PUT", Path: "/api/v1/schedulers/v100/algorithm", ContentType: "application/json", Body: `{"algorithm":"SRJF","params":{"k":"v"}}`},
		},
		{
			name: "algorithm without params", status: http.StatusOK, answer: schedulerJSON,
			call: func(ctx context.Context, c *Client) (any, error) { return c.SetAlgorithm(ctx, "v100", "FIFO", nil) },
			want: wantScheduler,
			req:  request{Method: "PUT", Path: "/api/v1/schedulers/v100/algorithm", ContentType: "application/json", Body: `{"algorithm":"FIFO"}`},
		},
		{
			name: "rate limit", status: http.StatusOK, answer: schedulerJSON,
			call: func(ctx context.Context, c *Client) (any, error) { return c.SetRateLimit(ctx, "v100", 2.5) },
			want: wantScheduler,
			req:  request{Method: "PUT", Path: "/api/v1/schedulers/v100/ratelimit", ContentType: "application/json", Body: `{"seconds":2.5}`},
		},
		{
			name: "teams", status: http.StatusOK, answer: `{"gpuType":"v100","gpus":16,"default":{"guarantee":0,"limit":0,"weight":1},"items":[` + teamJSON + `]}`,
			call: func(ctx context.Context, c *Client) (any, error) { return c.ListTeams(ctx, "v100") },
			want: api.TeamList{GPUType: "v100", GPUs: 16, Default: api.TeamQuota{Weight: 1}, Items: []api.Team{wantTeam}},
			req:  request{Method: "GET", Path: "/api/v1/schedulers/v100/teams"},
		},
		{
			name: "set quota", status: http.StatusOK, answer: teamJSON,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.SetQuota(ctx, "v100", "team-a", api.QuotaRequest{Guarantee: 8, Limit: 16})
			},
			want: wantTeam,
			req:  request{Method: "PUT", Path: "/api/v1/schedulers/v100/teams/team-a", ContentType: "application/json", Body: `{"guarantee":8,"limit":16}`},
		},
		{
			name: "set quota with a weight, escaped", status: http.StatusOK, answer: teamJSON,
			call: func(ctx context.Context, c *Client) (any, error) {
				w := 0.0
				return c.SetQuota(ctx, "a100 80g", "a/b", api.QuotaRequest{Weight: &w})
			},
			want: wantTeam,
			req:  request{Method: "PUT", Path: "/api/v1/schedulers/a100%2080g/teams/a%2Fb", ContentType: "application/json", Body: `{"weight":0}`},
		},
		{
			name: "delete quota", status: http.StatusNoContent,
			call: func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteQuota(ctx, "v100", "team-a") },
			req:  request{Method: "DELETE", Path: "/api/v1/schedulers/v100/teams/team-a", ContentType: "application/json"},
		},
		{
			name: "algorithms", status: http.StatusOK, answer: `{"items":[{"name":"Tiresias","summary":"2D-LAS","params":["threshold"]}]}`,
			call: func(ctx context.Context, c *Client) (any, error) { return c.ListAlgorithms(ctx) },
			want: []api.Algorithm{{Name: "Tiresias", Summary: "2D-LAS", Params: []string{"threshold"}}},
			req:  request{Method: "GET", Path: "/api/v1/algorithms"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, seen := recorder(t, tc.status, "application/json", tc.answer)
			got, err := tc.call(t.Context(), c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decoded answer (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.req, *seen); diff != "" {
				t.Errorf("request (-want,+got):\n%s", diff)
			}
			// The API refuses a change sent as anything else (415).
			if seen.Method != http.MethodGet && seen.ContentType != "application/json" && seen.ContentType != "application/yaml" {
				t.Errorf("%s sent as %q, want JSON or YAML", seen.Method, seen.ContentType)
			}
		})
	}
}

func TestClientPathPrefix(t *testing.T) {
	t.Parallel()
	c, seen := recorder(t, http.StatusOK, "application/json", `{"items":[]}`)
	c, err := New(c.BaseURL()+"/voda/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListAlgorithms(t.Context()); err != nil {
		t.Fatal(err)
	}
	if seen.Path != "/voda/api/v1/algorithms" {
		t.Errorf("path = %q, want /voda/api/v1/algorithms", seen.Path)
	}
}

func TestClientErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        *APIError
		wantMsg     string
	}{
		{
			name: "api error with field", status: http.StatusBadRequest, contentType: "application/json",
			body:    `{"error":{"code":400,"reason":"Invalid","field":"spec.mpiReplicaSpecs.Worker","message":"MAX_NP must be at least MIN_NP"}}`,
			want:    &APIError{StatusCode: 400, Reason: "Invalid", Field: "spec.mpiReplicaSpecs.Worker", Message: "MAX_NP must be at least MIN_NP"},
			wantMsg: "MAX_NP must be at least MIN_NP (field spec.mpiReplicaSpecs.Worker)",
		},
		{
			name: "api error whose message starts with the field", status: http.StatusBadRequest, contentType: "application/json",
			body:    `{"error":{"code":400,"reason":"Invalid","field":"priority","message":"priority: required"}}`,
			want:    &APIError{StatusCode: 400, Reason: "Invalid", Field: "priority", Message: "priority: required"},
			wantMsg: "priority: required",
		},
		{
			name: "api error without field", status: http.StatusNotFound, contentType: "application/json",
			body:    `{"error":{"code":404,"reason":"NotFound","message":"job mnist not found"}}`,
			want:    &APIError{StatusCode: 404, Reason: "NotFound", Message: "job mnist not found"},
			wantMsg: "job mnist not found",
		},
		{
			name: "api error with reason only", status: http.StatusConflict, contentType: "application/json",
			body:    `{"error":{"code":409,"reason":"Conflict"}}`,
			want:    &APIError{StatusCode: 409, Reason: "Conflict"},
			wantMsg: "Conflict",
		},
		{
			name: "plain text", status: http.StatusInternalServerError, contentType: "text/plain; charset=utf-8",
			body:    "panic: boom\n  goroutine 1\n",
			want:    &APIError{StatusCode: 500, Reason: "Internal Server Error", Message: "panic: boom goroutine 1 (HTTP 500)"},
			wantMsg: "panic: boom goroutine 1 (HTTP 500)",
		},
		{
			name: "html page", status: http.StatusBadGateway, contentType: "text/html",
			body:    "<html><body><h1>502 Bad Gateway</h1></body></html>",
			want:    &APIError{StatusCode: 502, Reason: "Bad Gateway", Message: "Bad Gateway (HTTP 502)"},
			wantMsg: "Bad Gateway (HTTP 502)",
		},
		{
			name: "empty body", status: http.StatusServiceUnavailable,
			want:    &APIError{StatusCode: 503, Reason: "Service Unavailable", Message: "Service Unavailable (HTTP 503)"},
			wantMsg: "Service Unavailable (HTTP 503)",
		},
		{
			name: "other JSON", status: http.StatusMethodNotAllowed, contentType: "application/json",
			body:    `{"detail":"nope"}`,
			want:    &APIError{StatusCode: 405, Reason: "Method Not Allowed", Message: `{"detail":"nope"} (HTTP 405)`},
			wantMsg: `{"detail":"nope"} (HTTP 405)`,
		},
		{
			name: "long body", status: http.StatusBadRequest, contentType: "text/plain",
			body:    strings.Repeat("x", 500),
			want:    &APIError{StatusCode: 400, Reason: "Bad Request", Message: strings.Repeat("x", 200) + "... (HTTP 400)"},
			wantMsg: strings.Repeat("x", 200) + "... (HTTP 400)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := recorder(t, tc.status, tc.contentType, tc.body)
			_, err := c.GetJob(t.Context(), "mnist")
			var got *APIError
			if !errors.As(err, &got) {
				t.Fatalf("error = %#v, want an *APIError", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("APIError (-want,+got):\n%s", diff)
			}
			if err.Error() != tc.wantMsg {
				t.Errorf("Error() = %q, want %q", err.Error(), tc.wantMsg)
			}
		})
	}
}

func TestClientBadAnswer(t *testing.T) {
	t.Parallel()
	c, _ := recorder(t, http.StatusOK, "text/plain", "ok")
	_, err := c.GetJob(t.Context(), "mnist")
	if err == nil || !strings.Contains(err.Error(), "GET /api/v1/jobs/mnist: the server's answer is not the expected JSON") || !strings.Contains(err.Error(), ": ok") {
		t.Errorf("error = %v, want one naming the route and quoting the body", err)
	}
}

func TestClientConnectionError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there any more
	c, err := New(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListJobs(t.Context(), ListOptions{})
	var ce *ConnectionError
	if !errors.As(err, &ce) {
		t.Fatalf("error = %#v, want a *ConnectionError", err)
	}
	for _, want := range []string{"cannot reach the voda server at " + addr + ": ", "connection refused", "is `voda server` running? set --server or VODA_SERVER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestClientCanceled(t *testing.T) {
	t.Parallel()
	c, _ := recorder(t, http.StatusOK, "application/json", `{"items":[]}`)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := c.ListJobs(ctx, ListOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	var ce *ConnectionError
	if errors.As(err, &ce) || strings.Contains(err.Error(), "VODA_SERVER") {
		t.Errorf("a canceled request is reported as unreachable: %v", err)
	}
}

func TestClientRejectsBadInput(t *testing.T) {
	t.Parallel()
	c, seen := recorder(t, http.StatusOK, "application/json", `{}`)
	if _, err := c.CreateJob(t.Context(), []byte(" \n\t")); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("CreateJob(blank) error = %v, want one saying the manifest is empty", err)
	}
	ctx := t.Context()
	for name, call := range map[string]func() error{
		"GetJob":       func() error { _, err := c.GetJob(ctx, ""); return err },
		"DeleteJob":    func() error { _, err := c.DeleteJob(ctx, ""); return err },
		"SetPriority":  func() error { _, err := c.SetPriority(ctx, "", 1); return err },
		"GetScheduler": func() error { _, err := c.GetScheduler(ctx, ""); return err },
		"SetAlgorithm": func() error { _, err := c.SetAlgorithm(ctx, "", "FIFO", nil); return err },
		"SetRateLimit": func() error { _, err := c.SetRateLimit(ctx, "", 1); return err },
		"ListTeams":    func() error { _, err := c.ListTeams(ctx, ""); return err },
		"SetQuota":     func() error { _, err := c.SetQuota(ctx, "v100", "", api.QuotaRequest{}); return err },
		"SetQuota, no GPU type": func() error {
			_, err := c.SetQuota(ctx, "", "team-a", api.QuotaRequest{})
			return err
		},
		"DeleteQuota": func() error { return c.DeleteQuota(ctx, "v100", "") },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "is empty") {
			t.Errorf("%s with an empty name: error %v, want one saying it is empty", name, err)
		}
	}
	for _, s := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := c.SetRateLimit(t.Context(), "v100", s); err == nil {
			t.Errorf("SetRateLimit(%v) succeeded", s)
		}
		if _, err := c.SetQuota(t.Context(), "v100", "team-a", api.QuotaRequest{Weight: &s}); err == nil {
			t.Errorf("SetQuota(weight %v) succeeded", s)
		}
	}
	if seen.Method != "" {
		t.Errorf("a request was sent: %+v", *seen)
	}
}

// A server that ignores dryRun creates the job (201): ValidateJob says so
// rather than passing it off as validated.
func TestValidateJobOnServerWithoutDryRun(t *testing.T) {
	t.Parallel()
	c, _ := recorder(t, http.StatusCreated, "application/json", jobJSON)
	job, err := c.ValidateJob(t.Context(), []byte("kind: MPIJob\n"))
	if !errors.Is(err, ErrNoDryRun) || !strings.Contains(err.Error(), "created job mnist-20250601-100000") || job.Name != wantJob.Name {
		t.Errorf("ValidateJob on a server without dry runs: %+v, %v", job.Name, err)
	}
	if _, err := c.ValidateJob(t.Context(), []byte(" \n")); err == nil {
		t.Error("an empty manifest was sent")
	}
}

// A client with a warning handler hands it the text of each warn-code 299
// Warning header, in order, of answers good and bad; other codes and
// headers that do not parse are left out, and a client without a handler,
// the original of the copy, ignores them.
func TestWarningHandler(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, v := range []string{
			`299 - "unknown field \"spec.slotsPerWorkr\""`,
			`199 - "a miscellaneous warning"`,
			`not a warning`,
			`299 voda "unknown field \"metadata.lables\""`,
		} {
			w.Header().Add("Warning", v)
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("dryRun") == "All" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error": {"code": 400, "reason": "Invalid", "message": "no"}}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"name": "a-1"}`)
	}))
	t.Cleanup(srv.Close)
	plain, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	c := plain.WithWarningHandler(func(text string) { got = append(got, text) })
	want := []string{`unknown field "spec.slotsPerWorkr"`, `unknown field "metadata.lables"`}
	if _, err := c.CreateJob(t.Context(), []byte("kind: MPIJob\n")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings of a 201 (-want,+got):\n%s", diff)
	}
	got = nil
	if _, err := c.ValidateJob(t.Context(), []byte("kind: MPIJob\n")); err == nil {
		t.Fatal("a 400 is no error")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings of a 400 (-want,+got):\n%s", diff)
	}
	got = nil
	if _, err := plain.CreateJob(t.Context(), []byte("kind: MPIJob\n")); err != nil || got != nil {
		t.Errorf("the client without a handler: %v, warnings %q", err, got)
	}
}
