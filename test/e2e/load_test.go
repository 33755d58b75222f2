package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
)

// loadSubmissions is the burst size the job service must absorb.
const loadSubmissions = 1000

func TestLoadEmbedded(t *testing.T) {
	runLoad(t, "embedded store, in-process queue", "--data-dir", t.TempDir())
}

// loadResult is what a load run leaves for further checks.
type loadResult struct {
	srv      *server
	accepted map[string]bool
}

// runLoad fires loadSubmissions concurrent submissions of the same
// manifest (so they collide on names within the same second) at a server,
// checks each was accepted exactly once, and reports the rate and latency.
func runLoad(t *testing.T, label string, stateArgs ...string) loadResult {
	srv := startServer(t, append([]string{"--sim-nodes", "v100=8x8", "--log-level", "warn"}, stateArgs...)...)
	body := manifest("burst", 1, 4, 3)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: loadSubmissions, MaxConnsPerHost: 0}, Timeout: 60 * time.Second}
	url := "http://" + srv.Addr + api.RouteJobs

	lat := make([]time.Duration, loadSubmissions)
	names := make([]string, loadSubmissions)
	errs := make(chan error, loadSubmissions)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range loadSubmissions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t0 := time.Now()
			resp, err := hc.Post(url, "application/yaml", bytes.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			lat[i] = time.Since(t0)
			if err != nil || resp.StatusCode != http.StatusCreated {
				errs <- fmt.Errorf("submission %d: %s %v %.200s", i, resp.Status, err, b)
				return
			}
			var j api.Job
			if err := json.Unmarshal(b, &j); err != nil {
				errs <- err
				return
			}
			names[i] = j.Name
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(began)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Every answer names a different job, and the store holds exactly
	// those: none lost, none duplicated.
	answered := map[string]bool{}
	for _, n := range names {
		if answered[n] {
			t.Fatalf("two submissions were answered with the same job %s", n)
		}
		answered[n] = true
	}
	list, err := srv.Client().ListJobs(ctxT(t), clientListAll)
	if err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, list, answered)

	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	report := fmt.Sprintf("%s: %d concurrent submissions in %v: %.0f jobs/s; latency p50 %v, p99 %v, max %v",
		label, loadSubmissions, wall.Round(time.Millisecond), float64(loadSubmissions)/wall.Seconds(),
		q(0.50).Round(time.Microsecond), q(0.99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	t.Log(report)
	if f := os.Getenv("VODA_LOAD_REPORT"); f != "" {
		appendLine(t, f, report)
	}

	if slices.Contains(stateArgs, "api") {
		return loadResult{srv, answered} // no scheduler in this process
	}
	// The scheduler admits every job exactly once: all leave Submitted.
	waitFor(t, "the scheduler to admit every job", 60*time.Second, func() (bool, error) {
		list, err := srv.Client().ListJobs(ctxT(t), clientListAll)
		if err != nil {
			return false, err
		}
		return count(list, "Submitted") == 0 && len(list) == loadSubmissions, nil
	})
	return loadResult{srv, answered}
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		t.Fatal(err)
	}
}
