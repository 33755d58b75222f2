package e2e

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/vodascheduler/voda/test/vodatest"
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
	burst := vodatest.SubmitBurst(t, "http://"+srv.Addr, manifest("burst", 1, 4, 3), loadSubmissions, nil)

	// Every answer names a different job, and the store holds exactly
	// those: none lost, none duplicated.
	answered := map[string]bool{}
	for _, n := range burst.Names {
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

	report := burst.Report(label)
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
