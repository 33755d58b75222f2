package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/api"
)

// pagedServer serves GET /api/v1/jobs in pages of its jobs, with the
// index of the next page's first job as the continue token, and records
// each request's query.
type pagedServer struct {
	jobs []api.Job
	// answer, if set, answers the request of page n (1-based) instead.
	answer func(w http.ResponseWriter, n int) bool

	mu      sync.Mutex
	queries []string
}

func (p *pagedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.queries = append(p.queries, r.URL.RawQuery)
	n := len(p.queries)
	p.mu.Unlock()
	if p.answer != nil && p.answer(w, n) {
		return
	}
	q := r.URL.Query()
	limit := 2
	if v := q.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	start, _ := strconv.Atoi(q.Get("continue"))
	end := min(start+limit, len(p.jobs))
	list := api.JobList{Items: p.jobs[start:end]}
	if end < len(p.jobs) {
		list.Metadata.Continue = strconv.Itoa(end)
	}
	writeJSONAnswer(w, http.StatusOK, list)
}

func writeJSONAnswer(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// TestListJobsPages: ListJobs reads every page, sending back each page's
// token with the same filters and page size, and returns the jobs as one
// list; a page that fails fails the list, saying which page.
func TestListJobsPages(t *testing.T) {
	t.Parallel()
	var jobs []api.Job
	for i := range 5 {
		jobs = append(jobs, api.Job{Name: fmt.Sprintf("job%d", i), Status: "Running"})
	}
	expired := func(w http.ResponseWriter, n int) bool {
		if n < 2 {
			return false
		}
		writeJSONAnswer(w, http.StatusGone, api.Error{Error: api.ErrorDetail{Code: 410, Reason: "Expired", Field: "continue", Message: "continue: the token was issued more than 15m0s ago"}})
		return true
	}
	repeats := func(w http.ResponseWriter, n int) bool {
		writeJSONAnswer(w, http.StatusOK, api.JobList{Metadata: api.ListMeta{Continue: "same"}, Items: jobs[:1]})
		return true
	}
	cases := []struct {
		name    string
		opts    ListOptions
		answer  func(http.ResponseWriter, int) bool
		want    []api.Job
		queries []string
		err     string
	}{
		{
			name: "the server's page size", want: jobs,
			queries: []string{"", "continue=2", "continue=4"},
		},
		{
			name: "a page size and filters", opts: ListOptions{Status: "Running", Live: true, PageSize: 3}, want: jobs,
			queries: []string{"limit=3&live=true&status=Running", "continue=3&limit=3&live=true&status=Running"},
		},
		{
			name: "one page", opts: ListOptions{PageSize: 5}, want: jobs,
			queries: []string{"limit=5"},
		},
		{
			name: "an expired token", answer: expired,
			queries: []string{"", "continue=2"}, err: "list jobs, page 2: continue: the token was issued more than 15m0s ago",
		},
		{
			name: "a server that answers the token it was sent", answer: repeats,
			queries: []string{"", "continue=same"}, err: "list jobs, page 2: the server answered the continue token it was sent",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := &pagedServer{jobs: jobs, answer: c.answer}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			cl, err := New(hs.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cl.ListJobs(t.Context(), c.opts)
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("ListJobs error %v, want one containing %q", err, c.err)
			case c.err == "" && err != nil:
				t.Errorf("ListJobs: %v", err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("jobs (-want,+got):\n%s", diff)
			}
			var queries []string
			for _, q := range srv.queries {
				v, err := url.ParseQuery(q)
				if err != nil {
					t.Fatal(err)
				}
				queries = append(queries, v.Encode())
			}
			if diff := cmp.Diff(c.queries, queries); diff != "" {
				t.Errorf("queries (-want,+got):\n%s", diff)
			}
		})
	}
	// An expired token is an *APIError with its status, for callers that
	// list again.
	srv := &pagedServer{jobs: jobs, answer: expired}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	cl, err := New(hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.ListJobs(t.Context(), ListOptions{})
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusGone || ae.Reason != "Expired" {
		t.Errorf("expired token: %v, want an *APIError 410 Expired", err)
	}
}

// Removed tells DeleteJob's two answers apart by the job's status.
func TestRemoved(t *testing.T) {
	t.Parallel()
	for status, want := range map[api.Status]bool{
		"Submitted": false, "Waiting": false, "Running": false,
		"Completed": true, "Failed": true, "Canceled": true,
	} {
		if got := Removed(api.Job{Status: status}); got != want {
			t.Errorf("Removed(%s) = %v, want %v", status, got, want)
		}
	}
}
