package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/auth"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

// pageJob is a job of a page test: what the filters look at.
type pageJob struct {
	name, namespace, gpuType string
	status                   model.Status
}

// createPageJobs submits n jobs a second apart on the schedulers' clock,
// their namespace, GPU type and status cycling, and returns them in
// submission order.
func createPageJobs(t *testing.T, f *fixture, n int) []pageJob {
	t.Helper()
	namespaces := []string{"default", "team-a", "team-b"}
	gpuTypes := []string{"v100", "a100"}
	statuses := []model.Status{model.StatusWaiting, model.StatusRunning, model.StatusCompleted, model.StatusFailed, model.StatusCanceled}
	var out []pageJob
	for i := range n {
		pj := pageJob{namespace: namespaces[i%3], gpuType: gpuTypes[i%2], status: statuses[i%5]}
		manifest := strings.Replace(inNamespace(fmt.Sprintf("job%02d", i), pj.namespace), "accelerator: v100", "accelerator: "+pj.gpuType, 1)
		pj.name = f.create(manifest).Name
		if pj.status != model.StatusSubmitted {
			f.saveStatus(pj.name, store.JobStatus{State: model.JobState{Status: pj.status}})
		}
		out = append(out, pj)
		f.clock.Step(time.Second)
	}
	return out
}

// listPage is one answer to GET /api/v1/jobs.
type listPage struct {
	code  int
	err   ErrorDetail
	names []string
	next  string
}

func (f *fixture) listPage(token, query string) listPage {
	f.t.Helper()
	code, _, e, b := f.as(token, "GET", RouteJobs+"?"+query, "", "")
	p := listPage{code: code, err: e}
	if code != http.StatusOK {
		return p
	}
	var list JobList
	if err := json.Unmarshal(b, &list); err != nil {
		f.t.Fatal(err)
	}
	for _, j := range list.Items {
		p.names = append(p.names, j.Name)
	}
	p.next = list.Metadata.Continue
	return p
}

// listAll follows a list's pages to its end, and returns each page's
// names.
func (f *fixture) listAll(token, query string) [][]string {
	f.t.Helper()
	var pages [][]string
	cont := ""
	for range 1000 {
		q := query
		if cont != "" {
			q += "&continue=" + url.QueryEscape(cont)
		}
		p := f.listPage(token, q)
		if p.code != http.StatusOK {
			f.t.Fatalf("GET ?%s: %d %+v", q, p.code, p.err)
		}
		pages = append(pages, p.names)
		if cont = p.next; cont == "" {
			return pages
		}
	}
	f.t.Fatalf("GET ?%s: more than 1000 pages", query)
	return nil
}

// TestListPages: whatever the limit and the filters, the pages together
// list every matching job once, in submission order; each page holds at
// most limit jobs, and only the last has no continue token.
func TestListPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "a100", "v100")
	jobs := createPageJobs(t, f, 23)
	cases := []struct {
		query string
		keep  func(pageJob) bool
		pages int
	}{
		{query: "", pages: 1},
		{query: "limit=1", pages: 23},
		{query: "limit=5", pages: 5},
		{query: "limit=23", pages: 1},
		{query: "limit=5000", pages: 1},
		{query: "limit=2&status=Running", keep: func(j pageJob) bool { return j.status == model.StatusRunning }, pages: 3},
		{query: "limit=3&status=Failed", keep: func(j pageJob) bool { return j.status == model.StatusFailed }, pages: 2},
		{query: "limit=3&live=true", keep: func(j pageJob) bool { return !j.status.Done() }, pages: 4},
		{query: "limit=4&namespace=team-a", keep: func(j pageJob) bool { return j.namespace == "team-a" }, pages: 2},
		{query: "limit=4&gpuType=a100", keep: func(j pageJob) bool { return j.gpuType == "a100" }, pages: 3},
		{query: "limit=2&gpuType=v100&namespace=team-b&live=false", keep: func(j pageJob) bool { return j.gpuType == "v100" && j.namespace == "team-b" }, pages: 2},
		{query: "limit=7&status=Canceled&namespace=default", keep: func(j pageJob) bool {
			return j.status == model.StatusCanceled && j.namespace == "default"
		}, pages: 1},
		{query: "status=Submitted", keep: func(pageJob) bool { return false }, pages: 1},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			var want []string
			for _, j := range jobs {
				if c.keep == nil || c.keep(j) {
					want = append(want, j.name)
				}
			}
			limit := DefaultListLimit
			if q, err := url.ParseQuery(c.query); err != nil {
				t.Fatal(err)
			} else if v := q.Get("limit"); v != "" {
				limit, _ = strconv.Atoi(v)
			}
			pages := f.listAll("", c.query)
			var got []string
			for i, p := range pages {
				if len(p) > limit {
					t.Errorf("page %d holds %d jobs, over the limit %d", i+1, len(p), limit)
				}
				got = append(got, p...)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("jobs over the pages (-want,+got):\n%s", diff)
			}
			if len(pages) != c.pages {
				t.Errorf("%d pages %v, want %d", len(pages), pages, c.pages)
			}
		})
	}
}

// TestListPagesSeeOnlyWhatTheCallerMay: the caller's rights apply to every
// page, and a token grants nothing: another user sending it sees only
// their own jobs.
func TestListPagesSeeOnlyWhatTheCallerMay(t *testing.T) {
	t.Parallel()
	tf, err := auth.ParseTokenFile([]byte(adminToken + ",root,0\n" + userToken + ",alice,1,team-a\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, func(c *Config) { c.Authenticator, c.Authorizer = tf, &teamAuthorizer{} })
	var jobs []pageJob
	// Submitted as root, who may submit anywhere.
	for i := range 9 {
		ns := []string{"default", "team-a", "team-b"}[i%3]
		code, _, _, b := f.as(adminToken, "POST", RouteJobs, "application/yaml", inNamespace(fmt.Sprintf("job%d", i), ns))
		var j Job
		if err := json.Unmarshal(b, &j); err != nil || code != http.StatusCreated {
			t.Fatalf("submit: %d %s", code, b)
		}
		jobs = append(jobs, pageJob{name: j.Name, namespace: ns})
		f.clock.Step(time.Second)
	}
	var teamA []string
	for _, j := range jobs {
		if j.namespace == "team-a" {
			teamA = append(teamA, j.name)
		}
	}
	if got := slices.Concat(f.listAll(userToken, "limit=2")...); !slices.Equal(got, teamA) {
		t.Errorf("alice's pages list %v, want %v", got, teamA)
	}
	// Root's first page, whose token alice sends: she sees her jobs after
	// its position, no one else's.
	p := f.listPage(adminToken, "limit=2")
	if !slices.Equal(p.names, []string{jobs[0].name, jobs[1].name}) || p.next == "" {
		t.Fatalf("root's first page %v, continue %q", p.names, p.next)
	}
	if got := f.listPage(userToken, "limit=10&continue="+url.QueryEscape(p.next)); got.code != http.StatusOK || !slices.Equal(got.names, teamA[1:]) {
		t.Errorf("alice with root's token: %d %v, want %v", got.code, got.names, teamA[1:])
	}
}

// TestListPagesBetweenChanges: a job created or removed between two pages
// is listed or not, and no other is listed twice or left out.
func TestListPagesBetweenChanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var names []string
	for i := range 6 {
		names = append(names, f.create(mpiJob(fmt.Sprintf("job%d", i), "1", "2", "v100")).Name)
		f.clock.Step(time.Second)
	}
	p1 := f.listPage("", "limit=3")
	if !slices.Equal(p1.names, names[:3]) || p1.next == "" {
		t.Fatalf("page 1: %v, continue %q", p1.names, p1.next)
	}
	// Between the pages: the last job listed and a job not yet listed
	// are removed, and a job is created.
	for _, name := range []string{names[2], names[4]} {
		if err := f.store.DeleteJob(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	created := f.create(mpiJob("late", "1", "2", "v100")).Name
	p2 := f.listPage("", "limit=3&continue="+url.QueryEscape(p1.next))
	if want := []string{names[3], names[5], created}; !slices.Equal(p2.names, want) || p2.next != "" {
		t.Errorf("page 2: %v, continue %q; want %v and no continue", p2.names, p2.next, want)
	}
}

// TestListPageScanBound: one request reads at most the scan bound of
// records from the store, however few of them match: the page then ends
// early, shorter than its limit (even empty), with a continue token; the
// pages together still list every match.
func TestListPageScanBound(t *testing.T) {
	t.Parallel()
	counter := &recordCountingStore{}
	f := newFixtureWith(t, func(c *Config) { counter.Store = c.Store; c.Store = counter }, "a100", "v100")
	jobs := createPageJobs(t, f, 40)
	var want []string
	for _, j := range jobs {
		if j.status == model.StatusRunning && j.namespace == "team-a" {
			want = append(want, j.name)
		}
	}
	const scan, limit = 7, 3
	q := listQuery{Status: string(model.StatusRunning), Namespace: "team-a"}
	var got []string
	after, pages := store.Position{}, 0
	for {
		counter.reset()
		jobs, next, err := f.srv.page(httptest.NewRequest("GET", RouteJobs, nil), q, limit, after, scan)
		if err != nil {
			t.Fatalf("page: %v", err)
		}
		if n := counter.read(); n > scan {
			t.Errorf("page %d read %d records, over the bound %d", pages+1, n, scan)
		}
		pages++
		for _, j := range jobs {
			got = append(got, j.Name)
		}
		if next == nil {
			break
		}
		after = *next
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("jobs over the pages (-want,+got):\n%s", diff)
	}
	// Status Running is a live status, so the store lists live jobs only
	// (16 of 40), 7 a request.
	if pages != 3 {
		t.Errorf("%d pages, want 3", pages)
	}
}

// recordCountingStore counts the records ListJobs returns.
type recordCountingStore struct {
	store.Store
	mu sync.Mutex
	n  int
}

func (c *recordCountingStore) ListJobs(ctx context.Context, opts store.ListOptions) ([]store.Job, error) {
	jobs, err := c.Store.ListJobs(ctx, opts)
	c.mu.Lock()
	c.n += len(jobs)
	c.mu.Unlock()
	return jobs, err
}

func (c *recordCountingStore) reset() {
	c.mu.Lock()
	c.n = 0
	c.mu.Unlock()
}

func (c *recordCountingStore) read() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestListBadPages: a bad limit or a token the server did not issue is a
// 400 naming the parameter; a token for other filters too; an expired
// token, or one of another version, is 410 Expired.
func TestListBadPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 3 {
		f.create(mpiJob(fmt.Sprintf("job%d", i), "1", "2", "v100"))
	}
	first := f.listPage("", "limit=1&status=Submitted")
	if first.next == "" {
		t.Fatal("no continue token")
	}
	tok, err := parseContinue(first.next)
	if err != nil {
		t.Fatal(err)
	}
	encode := func(edit func(*continueToken)) string {
		c := tok
		edit(&c)
		s, err := encodeContinue(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	cases := []struct {
		name, query  string
		code         int
		reason       Reason
		field, words string
	}{
		{"limit 0", "limit=0", 400, "BadRequest", "limit", `limit: "0" is not a whole number from 1 to 5000`},
		{"limit -1", "limit=-1", 400, "BadRequest", "limit", "from 1 to 5000"},
		{"limit over the maximum", "limit=5001", 400, "BadRequest", "limit", "from 1 to 5000"},
		{"limit not a number", "limit=all", 400, "BadRequest", "limit", "from 1 to 5000"},
		{"limit with a fraction", "limit=1.5", 400, "BadRequest", "limit", "from 1 to 5000"},
		{"token: not base64", "continue=%21%21", 400, "BadRequest", "continue", "not a continue token this server issued"},
		{"token: not JSON", "continue=" + raw("garbage"), 400, "BadRequest", "continue", "not a continue token"},
		{"token: unknown field", "continue=" + raw(`{"v":1,"issued":"2026-11-21T09:30:15Z","name":"x","admin":true}`), 400, "BadRequest", "continue", "unknown field"},
		{"token: trailing data", "continue=" + raw(`{"v":1,"issued":"2026-11-21T09:30:15Z","name":"x"} {}`), 400, "BadRequest", "continue", "trailing data"},
		{"token: no position", "continue=" + encode(func(c *continueToken) { c.Name = "" }), 400, "BadRequest", "continue", "no position"},
		{"token: too long", "continue=" + strings.Repeat("A", maxContinueLen+1), 400, "BadRequest", "continue", "longer than 4096 bytes"},
		{"token for other filters", "continue=" + url.QueryEscape(first.next), 400, "BadRequest", "continue", "send the filters of the first page"},
		{"token of another version", "status=Submitted&continue=" + encode(func(c *continueToken) { c.Version = 2 }), 410, "Expired", "continue", "another version"},
		{"token expired", "status=Submitted&continue=" + encode(func(c *continueToken) { c.Issued = t0.Add(-ContinueTTL - time.Second) }), 410, "Expired", "continue", "more than 15m0s ago"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := f.listPage("", c.query)
			if p.code != c.code || p.err.Reason != c.reason || p.err.Field != c.field || !strings.Contains(p.err.Message, c.words) {
				t.Errorf("GET ?%s: %d %+v; want %d %s naming %s with %q", c.query, p.code, p.err, c.code, c.reason, c.field, c.words)
			}
		})
	}
	// A token is taken until ContinueTTL has passed on the wall clock,
	// whatever the schedulers' clock does.
	f.clock.Step(24 * time.Hour)
	f.nameClock.Step(ContinueTTL)
	if p := f.listPage("", "limit=1&status=Submitted&continue="+url.QueryEscape(first.next)); p.code != http.StatusOK || len(p.names) != 1 {
		t.Errorf("a token %v old: %d %+v", ContinueTTL, p.code, p.err)
	}
	f.nameClock.Step(time.Second)
	if p := f.listPage("", "limit=1&status=Submitted&continue="+url.QueryEscape(first.next)); p.code != http.StatusGone || p.err.Reason != "Expired" {
		t.Errorf("a token %v old: %d %+v, want 410 Expired", ContinueTTL+time.Second, p.code, p.err)
	}
	// A token with a position the server never issued only starts the
	// list there.
	forged := encode(func(c *continueToken) {
		c.Issued, c.SubmitTime, c.Name = f.nameClock.Now(), time.Time{}, "a"
	})
	if p := f.listPage("", "status=Submitted&continue="+forged); p.code != http.StatusOK || len(p.names) != 3 {
		t.Errorf("a forged token before every job: %d %v, want the 3 jobs", p.code, p.names)
	}
}

// FuzzParseContinue: whatever a client sends as a continue token, the
// parser neither panics nor takes what it did not issue: a token it
// takes encodes back to a token that parses the same.
func FuzzParseContinue(f *testing.F) {
	good, err := encodeContinue(continueToken{Version: continueVersion, Issued: t0, SubmitTime: t0, Name: "mnist-20261121-093015",
		Query: listQuery{GPUType: "v100", Status: "Running", Live: true, Namespace: "team-a"}})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{good, "", "e30", "!!", base64.RawURLEncoding.EncodeToString([]byte(`{"v":1,"issued":"0001-01-01T00:00:00Z","name":"x"}`))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := parseContinue(s)
		if err != nil {
			return
		}
		if tok.Name == "" || tok.Issued.IsZero() {
			t.Fatalf("parsed %q into %+v, with no position or issue time", s, tok)
		}
		again, err := encodeContinue(tok)
		if err != nil {
			return // a time JSON cannot hold: never issued
		}
		back, err := parseContinue(again)
		if err != nil {
			t.Fatalf("re-encoded token %q does not parse: %v", again, err)
		}
		if !back.Issued.Equal(tok.Issued) || !back.SubmitTime.Equal(tok.SubmitTime) || back.Name != tok.Name || back.Query != tok.Query || back.Version != tok.Version {
			t.Fatalf("round trip changed %+v into %+v", tok, back)
		}
	})
}
