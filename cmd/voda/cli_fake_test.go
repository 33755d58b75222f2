package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/jobspec"
)

// fakeAPI is an in-memory stand-in for the Voda API, enough to unit-test
// the client commands: it keeps jobs and schedulers in slices, names
// created jobs with a fixed timestamp and records every request. The
// end-to-end tests run the commands against the real server.
type fakeAPI struct {
	URL string

	mu       sync.Mutex
	jobs     []api.Job
	scheds   []api.Scheduler
	algos    []api.Algorithm
	requests []fakeRequest
}

// fakeRequest is a request as the fake saw it.
type fakeRequest struct {
	Method, Path, Query, ContentType, Body string
}

// fakeStamp is the suffix the fake gives created jobs' names.
const fakeStamp = "-20250601-101000"

func newFakeAPI(t *testing.T, jobs []api.Job, scheds []api.Scheduler) *fakeAPI {
	t.Helper()
	f := &fakeAPI{
		jobs:   slices.Clone(jobs),
		scheds: slices.Clone(scheds),
		algos: []api.Algorithm{
			{Name: "ElasticFIFO", Summary: "FIFO order; min first, then spare GPUs round-robin"},
			{Name: "Tiresias", Summary: "discretized 2D-LAS with two queues", Params: []string{"threshold", "starvation"}},
		},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+api.RouteJobs, f.create)
	mux.HandleFunc("GET "+api.RouteJobs, f.list)
	mux.HandleFunc("GET "+api.RouteJob, f.get)
	mux.HandleFunc("DELETE "+api.RouteJob, f.delete)
	mux.HandleFunc("PUT "+api.RouteJobPriority, f.priority)
	mux.HandleFunc("GET "+api.RouteSchedulers, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, api.SchedulerList{Items: f.scheds})
	})
	mux.HandleFunc("GET "+api.RouteScheduler, func(w http.ResponseWriter, r *http.Request) {
		if i := f.scheduler(w, r); i >= 0 {
			writeJSON(w, http.StatusOK, f.scheds[i])
		}
	})
	mux.HandleFunc("PUT "+api.RouteAlgorithm, f.algorithm)
	mux.HandleFunc("PUT "+api.RouteRateLimit, f.rateLimit)
	mux.HandleFunc("GET "+api.RouteAlgorithms, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, api.AlgorithmList{Items: f.algos})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests = append(f.requests, fakeRequest{
			Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			ContentType: r.Header.Get("Content-Type"), Body: string(b),
		})
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Creates returns the requests that created jobs (not dry runs).
func (f *fakeAPI) Creates() []fakeRequest {
	var out []fakeRequest
	for _, r := range f.Requests() {
		if r.Method == http.MethodPost && r.Path == api.RouteJobs && r.Query == "" {
			out = append(out, r)
		}
	}
	return out
}

// Requests returns the requests seen so far.
func (f *fakeAPI) Requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// Jobs returns the jobs as they are now.
func (f *fakeAPI) Jobs() []api.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.jobs)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, field, format string, args ...any) {
	reason := map[int]api.Reason{400: api.ReasonInvalid, 404: api.ReasonNotFound, 409: api.ReasonConflict}[status]
	writeJSON(w, status, api.Error{Error: api.ErrorDetail{
		Code: status, Reason: reason, Field: field, Message: fmt.Sprintf(format, args...),
	}})
}

func (f *fakeAPI) create(w http.ResponseWriter, r *http.Request) {
	ct := r.Header.Get("Content-Type")
	if ct != "application/yaml" && ct != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "", "content type %q", ct)
		return
	}
	var m struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := yaml.Unmarshal(b, &m); err != nil {
		writeError(w, http.StatusBadRequest, "", "manifest: %v", err)
		return
	}
	// Top-level keys other than a manifest's are unknown fields, warned
	// of as the server does.
	var top map[string]any
	_ = yaml.Unmarshal(b, &top)
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if !slices.Contains([]string{"apiVersion", "kind", "metadata", "spec"}, k) {
			w.Header().Add("Warning", fmt.Sprintf(`299 - "unknown field \"%s\""`, k))
		}
	}
	if m.Kind != "MPIJob" && m.Kind != "PyTorchJob" {
		writeError(w, http.StatusBadRequest, "kind", "kind %q is not MPIJob or PyTorchJob", m.Kind)
		return
	}
	if m.Metadata.Name == "" {
		writeError(w, http.StatusBadRequest, "metadata.name", "a job needs a name")
		return
	}
	dryRun := false
	if vals, ok := r.URL.Query()["dryRun"]; ok {
		if len(vals) != 1 || vals[0] != "All" {
			writeError(w, http.StatusBadRequest, "dryRun", "dryRun: %q is not All", vals)
			return
		}
		dryRun = true
	}
	name := m.Metadata.Name + fakeStamp
	for n := 2; f.find(name) >= 0 && !dryRun; n++ {
		name = fmt.Sprintf("%s%s-%d", m.Metadata.Name, fakeStamp, n)
	}
	job := api.Job{
		Name: name, Kind: jobspec.Kind(m.Kind), GPUType: "v100", Status: "Submitted",
		MinWorkers: 1, MaxWorkers: 1, RequestedWorkers: 1, Scheduler: "ElasticFIFO",
		SubmitTime: time.Date(2025, 6, 1, 10, 10, 0, 0, time.UTC),
	}
	if dryRun {
		writeJSON(w, http.StatusOK, job)
		return
	}
	f.jobs = append(f.jobs, job)
	w.Header().Set("Location", api.RouteJobs+"/"+name)
	writeJSON(w, http.StatusCreated, job)
}

// fakePage is the fake's page size when a list names no limit: small,
// so that the commands' lists take several pages.
const fakePage = 3

// list answers a page of the jobs, as the server does: limit and
// continue, whose token here is the index the next page starts from.
func (f *fakeAPI) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := fakePage
	if v := q.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	start := 0
	if v := q.Get("continue"); v != "" {
		var err error
		if start, err = strconv.Atoi(strings.TrimPrefix(v, "from-")); err != nil || start > len(f.jobs) {
			writeError(w, http.StatusBadRequest, "continue", "continue: %q is not a token of this server", v)
			return
		}
	}
	out := api.JobList{Items: []api.Job{}}
	for i, j := range f.jobs[start:] {
		if len(out.Items) == limit {
			out.Metadata.Continue = fmt.Sprintf("from-%d", start+i)
			break
		}
		if (q.Get("gpuType") == "" || j.GPUType == q.Get("gpuType")) &&
			(q.Get("status") == "" || string(j.Status) == q.Get("status")) &&
			(q.Get("live") != "true" || !finished(j.Status)) {
			out.Items = append(out.Items, j)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (f *fakeAPI) find(name string) int {
	return slices.IndexFunc(f.jobs, func(j api.Job) bool { return j.Name == name })
}

// job finds the job of the request's path, or answers 404.
func (f *fakeAPI) job(w http.ResponseWriter, r *http.Request) int {
	i := f.find(r.PathValue("name"))
	if i < 0 {
		writeError(w, http.StatusNotFound, "", "job %s not found", r.PathValue("name"))
	}
	return i
}

func (f *fakeAPI) get(w http.ResponseWriter, r *http.Request) {
	if i := f.job(w, r); i >= 0 {
		writeJSON(w, http.StatusOK, f.jobs[i])
	}
}

func (f *fakeAPI) delete(w http.ResponseWriter, r *http.Request) {
	i := f.job(w, r)
	if i < 0 {
		return
	}
	if j := f.jobs[i]; finished(j.Status) {
		// Removed, as the server removes a finished job's record.
		f.jobs = slices.Delete(f.jobs, i, i+1)
		writeJSON(w, http.StatusOK, j)
		return
	}
	f.jobs[i].DeleteRequested = true
	writeJSON(w, http.StatusAccepted, f.jobs[i])
}

func (f *fakeAPI) priority(w http.ResponseWriter, r *http.Request) {
	i := f.job(w, r)
	if i < 0 {
		return
	}
	var req api.PriorityRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Priority == nil || *req.Priority < 0 {
		writeError(w, http.StatusBadRequest, "priority", "priority must be a non-negative integer")
		return
	}
	f.jobs[i].Priority = *req.Priority
	writeJSON(w, http.StatusOK, f.jobs[i])
}

func (f *fakeAPI) scheduler(w http.ResponseWriter, r *http.Request) int {
	gt := r.PathValue("gpuType")
	i := slices.IndexFunc(f.scheds, func(s api.Scheduler) bool { return s.GPUType == gt })
	if i < 0 {
		writeError(w, http.StatusNotFound, "", "no scheduler for GPU type %s", gt)
	}
	return i
}

func (f *fakeAPI) algorithm(w http.ResponseWriter, r *http.Request) {
	i := f.scheduler(w, r)
	if i < 0 {
		return
	}
	var req api.AlgorithmRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	k := slices.IndexFunc(f.algos, func(a api.Algorithm) bool { return strings.EqualFold(a.Name, req.Algorithm) })
	if k < 0 {
		writeError(w, http.StatusBadRequest, "algorithm", "unknown algorithm %q", req.Algorithm)
		return
	}
	f.scheds[i].Algorithm = f.algos[k].Name
	f.scheds[i].Params = req.Params
	writeJSON(w, http.StatusOK, f.scheds[i])
}

func (f *fakeAPI) rateLimit(w http.ResponseWriter, r *http.Request) {
	i := f.scheduler(w, r)
	if i < 0 {
		return
	}
	var req api.RateLimitRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Seconds == nil || *req.Seconds < 0 {
		writeError(w, http.StatusBadRequest, "seconds", "seconds must be a non-negative number")
		return
	}
	f.scheds[i].RateLimitSeconds = *req.Seconds
	writeJSON(w, http.StatusOK, f.scheds[i])
}

// cliCase is a voda command line and its whole expected output.
type cliCase struct {
	name string
	args []string
	want string
}

// checkCLI runs each case's command line against the server at url, in
// parallel subtests, and compares the output.
func checkCLI(t *testing.T, url string, cases []cliCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := mustVoda(t, append(tc.args, "--server", url)...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("voda %s (-want,+got):\n%s", strings.Join(tc.args, " "), diff)
			}
		})
	}
}
