package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
)

// raceSteps is the steps between two reports of one racing reporter.
const raceSteps = 100

// raceRun is what a phase of racing reporters saw.
type raceRun struct {
	// codes counts the answers by status.
	codes map[int]int
	// noRetryAfter counts the 429 and 409 answers without a Retry-After
	// of a whole number of seconds; sendErrs the requests that got no
	// answer.
	noRetryAfter, sendErrs int
	// last is each reporter's last report answered 200 (0: none).
	last []int64
	wall time.Duration
}

// accepted is the reports answered 200.
func (r raceRun) accepted() int { return r.codes[http.StatusOK] }

// fivexx is the answers 500 and above.
func (r raceRun) fivexx() int {
	n := 0
	for code, c := range r.codes {
		if code >= 500 {
			n += c
		}
	}
	return n
}

// raceGeneration is reporter i's generation in the phase of n reporters:
// each believes it is the job's rank 0, as two processes can after a
// Horovod reset.
func raceGeneration(n, i int) string { return fmt.Sprintf("race%d-%d", n, i) }

// raceReports has n reporters report for the job at url at once, each on
// a keep-alive connection of its own, for d: each sends its next report
// as soon as the previous one is answered 200, the same one again after
// the Retry-After of a 429 or 409 (as sdk/python does), and the same one
// at once after any other answer.
func raceReports(ctx context.Context, url string, n int, d time.Duration) raceRun {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	codes := make([]map[int]int, n)
	noRetry, sendErrs := make([]int, n), make([]int, n)
	last := make([]int64, n)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range n {
		codes[i] = map[int]int{}
		wg.Go(func() {
			gen := raceGeneration(n, i)
			for round := int64(1); time.Now().Before(deadline) && ctx.Err() == nil; {
				body := fmt.Appendf(nil, `{"generation":%q,"workers":1,"steps":%d,"epoch":%.2f}`, gen, round*raceSteps, float64(round)/10)
				code, wait, err := postReport(ctx, hc, url, body)
				switch {
				case err != nil:
					sendErrs[i]++
					continue
				case code == http.StatusOK:
					last[i] = round
					round++
				case code == http.StatusTooManyRequests || code == http.StatusConflict:
					if wait <= 0 {
						noRetry[i]++
						wait = time.Second
					}
					select {
					case <-time.After(min(wait, time.Until(deadline))):
					case <-ctx.Done():
					}
				}
				codes[i][code]++
			}
		})
	}
	wg.Wait()
	run := raceRun{codes: map[int]int{}, last: last, wall: time.Since(start)}
	for i := range n {
		for code, c := range codes[i] {
			run.codes[code] += c
		}
		run.noRetryAfter += noRetry[i]
		run.sendErrs += sendErrs[i]
	}
	return run
}

// postReport posts body and returns the answer's status and its
// Retry-After (0 when absent or not whole seconds).
func postReport(ctx context.Context, hc *http.Client, url string, body []byte) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 1 {
		secs = 0
	}
	return resp.StatusCode, time.Duration(secs) * time.Second, nil
}

// TestConcurrentReportsOneJob: many reporters for one job at once (two
// processes that both believe they are rank 0, or far more) are never
// answered 5xx; a report is applied (200) or refused with a Retry-After
// (429), the job's stored progress is the last report applied, and the
// server's log stays bounded: an expected conflict is not an error line
// a request.
func TestConcurrentReportsOneJob(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4")
	ctx := ctxT(t)
	j, err := srv.Client().CreateJob(ctx, manifest("raced", 1, 1, 100000))
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL() + strings.Replace(api.RouteJobProgress, "{name}", j.Name, 1)
	const (
		phase = 3 * time.Second
		// maxLogLines bounds the server's log lines during a phase: a
		// few of the scheduler's, and at most one a minute about
		// contention.
		maxLogLines = 10
	)
	for _, n := range []int{16, 64} {
		t.Run(fmt.Sprintf("%d reporters", n), func(t *testing.T) {
			logsBefore := len(srv.Logs())
			run := raceReports(ctx, url, n, phase)
			logs := srv.Logs()[logsBefore:]
			lines := strings.Count(logs, "\n")
			total := 0
			for _, c := range run.codes {
				total += c
			}
			t.Logf("%d reporters for %v: %d answers %v, %d 5xx, %d accepted (%.1f reports/s), %d server log lines (%d ERROR)",
				n, run.wall.Round(time.Millisecond), total, run.codes, run.fivexx(), run.accepted(),
				float64(run.accepted())/run.wall.Seconds(), lines, strings.Count(logs, "level=ERROR"))
			if lines > 0 && lines <= maxLogLines {
				t.Logf("the server's log lines during the phase:\n%s", logs)
			}
			if run.fivexx() > 0 {
				t.Errorf("%d answers 5xx, want 0", run.fivexx())
			}
			if other := total - run.codes[http.StatusOK] - run.codes[http.StatusTooManyRequests]; other > 0 {
				t.Errorf("%d answers neither 200 nor 429: %v", other, run.codes)
			}
			if run.noRetryAfter > 0 {
				t.Errorf("%d answers 429 without a Retry-After of whole seconds", run.noRetryAfter)
			}
			if run.sendErrs > 0 {
				t.Errorf("%d reports got no answer", run.sendErrs)
			}
			if run.accepted() == 0 {
				t.Error("no report was accepted")
			}
			if lines > maxLogLines {
				t.Errorf("the server logged %d lines during the phase, want at most %d; the first:\n%s", lines, maxLogLines, firstLines(logs, 5))
			}
			checkLastReport(t, srv, j.Name, n, run.last)
		})
	}
}

// checkLastReport checks that job name's stored progress is the last
// report applied of one of the n racing reporters (last: each one's last
// round answered 200), or the simulated cluster's, which reports for its
// running jobs through the same ingestion.
func checkLastReport(t *testing.T, srv *server, name string, n int, last []int64) {
	t.Helper()
	got, err := srv.Client().GetJob(ctxT(t), name)
	if err != nil {
		t.Fatal(err)
	}
	if got.Measured == nil {
		t.Fatal("no progress stored")
	}
	i := -1
	for k := range n {
		if raceGeneration(n, k) == got.Measured.Generation {
			i = k
		}
	}
	switch {
	case i < 0 && strings.HasPrefix(got.Measured.Generation, "race"):
		t.Errorf("stored generation %q is of no reporter of this phase", got.Measured.Generation)
	case i < 0:
		t.Logf("the simulated cluster's report %q came last", got.Measured.Generation)
	case got.Measured.Steps != last[i]*raceSteps:
		t.Errorf("stored steps %d of %s, want its last report answered 200, %d", got.Measured.Steps, got.Measured.Generation, last[i]*raceSteps)
	}
}

// firstLines is the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
