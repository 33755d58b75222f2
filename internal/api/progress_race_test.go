package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vodascheduler/voda/internal/store"
)

// answer is what a report was answered.
type answer struct {
	code       int
	retryAfter string
	reason     Reason
}

// postReport posts a report to the route at url with hc, for goroutines
// (it fails no test itself).
func postReport(hc *http.Client, url, body string) (answer, error) {
	resp, err := hc.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	if a.code != http.StatusOK {
		var e Error
		_ = json.Unmarshal(b, &e)
		a.reason = e.Error.Reason
	}
	return a, nil
}

// TestProgressConcurrentReports: 64 reporters for one job at once, each
// believing it is rank 0 (its own generation), against one API server
// and against two replicas sharing the store: no answer is 5xx; each
// report is applied (200) or refused with a Retry-After (429); the stored
// progress counts every report applied once (its revision) and is the
// last report of one reporter.
func TestProgressConcurrentReports(t *testing.T) {
	const reporters, rounds = 64, 3
	for _, replicas := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d replicas", replicas), func(t *testing.T) {
			f := newFixture(t)
			urls := []string{f.url}
			if replicas == 2 {
				other := newFixtureWith(t, func(c *Config) { c.Store = f.store })
				urls = append(urls, other.url)
				defer func() {
					t.Logf("conflicts met: %v and %v", testutil.ToFloat64(f.srv.cfg.Metrics.ProgressConflicts),
						testutil.ToFloat64(other.srv.cfg.Metrics.ProgressConflicts))
				}()
			}
			j := f.create(mpiJob("raced", "1", "4", "v100"))
			f.running(j.Name, 2)
			path := "/api/v1/jobs/" + j.Name + "/progress"
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: reporters}, Timeout: 30 * time.Second}
			defer hc.CloseIdleConnections()

			var mu sync.Mutex
			codes := map[int]int{}
			last := map[string]int64{} // a generation's last steps answered 200
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range reporters {
				wg.Go(func() {
					<-start
					gen := fmt.Sprint("rank0-", i)
					url := urls[i%len(urls)] + path
					for r := range int64(rounds) {
						steps := 100 * (r + 1)
						a, err := postReport(hc, url, report(gen, 2, steps, float64(r+1)/10))
						mu.Lock()
						codes[a.code]++
						switch {
						case err != nil:
							t.Errorf("%s, report %d: %v", gen, r, err)
						case a.code == http.StatusOK:
							last[gen] = steps
						case a.code == http.StatusTooManyRequests && (a.retryAfter != "1" || a.reason != "TooManyRequests"):
							t.Errorf("%s, report %d: 429 with Retry-After %q and reason %q, want 1 and TooManyRequests", gen, r, a.retryAfter, a.reason)
						case a.code != http.StatusTooManyRequests:
							t.Errorf("%s, report %d: answered %d %s, want 200 or 429", gen, r, a.code, a.reason)
						}
						mu.Unlock()
					}
				})
			}
			close(start)
			wg.Wait()
			t.Logf("answers by status: %v", codes)
			s, rev := f.state(j.Name)
			if s == nil {
				t.Fatal("no progress stored")
			}
			if applied := codes[http.StatusOK]; rev != int64(applied) {
				t.Errorf("progress revision %d after %d reports answered 200: a report was lost or applied twice", rev, applied)
			}
			if want, ok := last[s.Latest.Generation]; !ok || s.Latest.Steps != want {
				t.Errorf("stored %s at %d steps, want the last report of a reporter answered 200 (%d)", s.Latest.Generation, s.Latest.Steps, want)
			}
		})
	}
}

// conflictingStore is a store another replica always writes first: every
// SaveProgress meets a conflict.
type conflictingStore struct{ store.Store }

func (conflictingStore) SaveProgress(_ context.Context, name string, _ []byte, revision int64) (int64, error) {
	return 0, fmt.Errorf("save progress of %s at %d: %w", name, revision, store.ErrConflict)
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestProgressBusyAcrossReplicas: a report whose writes keep losing to
// another replica's is answered 429 with a Retry-After, never 500; the
// conflicts are counted; and the log gets one line, not one a report.
func TestProgressBusyAcrossReplicas(t *testing.T) {
	var logs lockedBuffer
	f := newFixtureWith(t, func(c *Config) {
		c.Store = conflictingStore{c.Store}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	j := f.create(mpiJob("raced", "1", "4", "v100"))
	path := "/api/v1/jobs/" + j.Name + "/progress"
	before := len(logs.String())
	const reports = 20
	for i := range reports {
		code, h, b := f.doWith("", "POST", path, "application/json", report("g1", 2, int64(i), 0))
		var e Error
		_ = json.Unmarshal(b, &e)
		if code != http.StatusTooManyRequests || h.Get("Retry-After") != "1" || e.Error.Reason != "TooManyRequests" || e.Error.Field != "name" {
			t.Fatalf("report %d: %d (Retry-After %q) %s, want 429 TooManyRequests with Retry-After 1", i, code, h.Get("Retry-After"), b)
		}
	}
	if got, want := testutil.ToFloat64(f.srv.cfg.Metrics.ProgressConflicts), float64(reports*5); got != want {
		t.Errorf("conflicts counted %v, want %v (5 tries a report)", got, want)
	}
	if got := logs.String()[before:]; strings.Count(got, "\n") != 1 || !strings.Contains(got, "level=WARN") {
		t.Errorf("%d log lines for %d refused reports, want one warning:\n%s", strings.Count(got, "\n"), reports, got)
	}
}

// TestBusyLogSums: refusals after the first line are summed up in one
// line per period, the last of a burst too.
func TestBusyLogSums(t *testing.T) {
	var logs lockedBuffer
	b := &busyLog{log: slog.New(slog.NewTextHandler(&logs, nil)), every: 50 * time.Millisecond}
	const refusals = 200
	began := time.Now()
	for i := range refusals {
		b.note(fmt.Sprint("job-", i%3), fmt.Errorf("refusal %d", i))
	}
	// The first line, a line per period the burst lasted, and its end.
	maxLines := 2 + int(time.Since(began)/b.every)
	total := func() (lines, counted int) {
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			lines++
			n := 1
			if _, rest, ok := strings.Cut(line, " refused="); ok {
				if _, err := fmt.Sscan(rest, &n); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
			}
			counted += n
		}
		return lines, counted
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, counted := total(); counted < refusals; _, counted = total() {
		if time.Now().After(deadline) {
			t.Fatalf("%d refusals logged of %d:\n%s", counted, refusals, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if lines, counted := total(); counted != refusals || lines > maxLines {
		t.Errorf("%d lines telling %d refusals, want %d in at most %d:\n%s", lines, counted, refusals, maxLines, logs.String())
	}
}
