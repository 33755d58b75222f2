package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
)

// TestStartDoesNotWaitForRateLimit submits jobs to the running binary's
// simulated cluster at real speed with a rate limit of ten minutes: a job
// that fits in free GPUs must run within seconds (the rate limit holds
// only changes to running jobs), a job that does not fit waits, and no
// waiting job's estimated start is ever in the past. It logs the
// submission-to-Running latencies, the figure docs/server.md reports.
func TestStartDoesNotWaitForRateLimit(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=4x8", "--speed", "1", "--rate-limit", "10m")
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The first job may ride the scheduler's first cycle; the next ones
	// come after it, within the rate limit.
	var latencies []time.Duration
	for i := range 6 {
		start := time.Now()
		j, err := c.CreateJob(ctx, manifest(fmt.Sprintf("quick-%d", i), 4, 4, 1000))
		if err != nil {
			t.Fatal(err)
		}
		var running time.Duration
		waitFor(t, "job "+j.Name+" Running, long before the 10 min rate limit", 30*time.Second, func() (bool, error) {
			got, err := c.GetJob(ctx, j.Name)
			if err != nil {
				return false, err
			}
			if got.Status == "Running" {
				running = time.Since(start)
				return true, nil
			}
			if got.EstimatedStart != nil && got.EstimatedStart.Before(got.AsOf) {
				t.Errorf("waiting job %s: estimated start %v before the view's time %v", j.Name, got.EstimatedStart, got.AsOf)
			}
			return false, nil
		})
		if i > 0 {
			latencies = append(latencies, running)
		}
	}
	slices.Sort(latencies)
	t.Logf("submission to Running at --speed 1 on an idle cluster (%d jobs): min %v, median %v, max %v",
		len(latencies), latencies[0], latencies[len(latencies)/2], latencies[len(latencies)-1])

}

// TestForecastPastUnschedulableJob: a job that can never start, first in
// line, must not hide the estimated start of the job behind it, and no
// estimated start is in the past. --speed 30, so that the running jobs are
// measured (their remaining time known) within seconds.
func TestForecastPastUnschedulableJob(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=4x8", "--speed", "30", "--rate-limit", "10m")
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 6 {
		if _, err := c.CreateJob(ctx, manifest(fmt.Sprintf("run-%d", i), 4, 4, 40)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "six jobs Running", 30*time.Second, func() (bool, error) {
		list, err := c.ListJobs(ctx, clientListAll)
		return count(list, "Running") == 6, err
	})
	// 24 of 32 GPUs are held by jobs that cannot shrink: a job of 16 does
	// not fit in the free GPUs and waits; a job of 40 can never start and
	// must not hide the forecast of the one behind it.
	huge, err := c.CreateJob(ctx, manifest("huge", 40, 40, 10))
	if err != nil {
		t.Fatal(err)
	}
	wide, err := c.CreateJob(ctx, manifest("wide", 16, 16, 10))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the 40-GPU job Unschedulable and the 16-GPU job waiting with an estimated start", 60*time.Second, func() (bool, error) {
		h, err := c.GetJob(ctx, huge.Name)
		if err != nil {
			return false, err
		}
		w, err := c.GetJob(ctx, wide.Name)
		if err != nil {
			return false, err
		}
		if w.Status != "Waiting" && w.Status != "Submitted" {
			t.Fatalf("job %s is %s; it needs 16 GPUs and 8 are free", w.Name, w.Status)
		}
		if w.EstimatedStart != nil && w.EstimatedStart.Before(w.AsOf) {
			t.Fatalf("waiting job %s: estimated start %v before the view's time %v", w.Name, w.EstimatedStart, w.AsOf)
		}
		return h.Reason == "Unschedulable" && w.EstimatedStart != nil, fmt.Errorf("%s: %s %s; %s: position %d, estimated start %v",
			h.Name, h.Status, h.Reason, w.Name, w.QueuePosition, w.EstimatedStart)
	})
	list, err := c.ListJobs(ctx, clientListAll)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range list {
		checkNotPast(t, j)
	}
}

func checkNotPast(t *testing.T, j api.Job) {
	t.Helper()
	if j.EstimatedStart != nil && j.EstimatedStart.Before(j.AsOf) {
		t.Errorf("job %s: estimated start %v before the view's time %v", j.Name, j.EstimatedStart, j.AsOf)
	}
}
