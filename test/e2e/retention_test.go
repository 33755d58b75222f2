package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api/client"
)

// TestRetention runs the binary with a small count and a short age of
// finished jobs kept: it removes the oldest finished jobs beyond the
// count, then those past the age, and never a live job; a restarted
// server goes on applying the rule, which lives in the flags and the
// store, not in the process.
func TestRetention(t *testing.T) {
	dir := t.TempDir()
	// At --speed 100, an hour of the schedulers' clock is 36 s.
	args := []string{"--data-dir", dir, "--sim-nodes", "v100=2x4", "--speed", "100",
		"--max-finished-jobs", "2", "--finished-retention", "1h", "--retention-interval", "200ms"}
	srv := startServer(t, args...)
	c := srv.Client()
	long, err := c.CreateJob(ctxT(t), manifest("long", 1, 1, 100000))
	if err != nil {
		t.Fatal(err)
	}
	var short []string
	for i := range 5 {
		j, err := c.CreateJob(ctxT(t), manifest(fmt.Sprintf("short%d", i), 1, 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		short = append(short, j.Name)
	}
	// Every short job finishes, and all but the two that finished last
	// are removed; the long one runs on.
	waitFor(t, "5 finished jobs removed but 2", 120*time.Second, func() (bool, error) {
		return metric(t, srv, `voda_jobs_removed_total{reason="count"}`) == 3, nil
	})
	finished, live, err := finishedAndLive(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(finished) != 2 || !slices.Equal(live, []string{long.Name}) {
		t.Errorf("after the count: finished %v, live %v; want 2 of %v and %s", finished, live, short, long.Name)
	}
	waitFor(t, "voda_finished_jobs = 2", 30*time.Second, func() (bool, error) {
		return metric(t, srv, "voda_finished_jobs") == 2, nil
	})

	// Restarted, the server keeps the rule: an hour of its clock after
	// they finished, the last two go too, and the live job stays.
	srv.Stop()
	srv.Start()
	waitFor(t, "the finished jobs removed by age", 120*time.Second, func() (bool, error) {
		finished, _, err := finishedAndLive(t, c)
		return len(finished) == 0, err
	})
	// The counter moves when the removal batch ends, just after the jobs
	// are gone from the store: wait for it too.
	waitFor(t, `voda_jobs_removed_total{reason="age"} = 2 after the restart`, 30*time.Second, func() (bool, error) {
		return metric(t, srv, `voda_jobs_removed_total{reason="age"}`) == 2, nil
	})
	if j, err := c.GetJob(ctxT(t), long.Name); err != nil || client.Removed(j) {
		t.Errorf("the long job after retention: %s, %v", j.Status, err)
	}
	for _, name := range short {
		if _, err := c.GetJob(ctxT(t), name); !isNotFound(err) {
			t.Errorf("%s after retention: %v, want 404", name, err)
		}
	}
	if got := metric(t, srv, "voda_retention_last_run_timestamp_seconds"); got < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("voda_retention_last_run_timestamp_seconds = %v, not within the last minute", got)
	}
}
