package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
)

// TestMeasurementsSurviveKill: on the simulated cluster a job reports its
// progress through the same ingestion as real pods, so the server
// measures its throughput and estimates its remaining time; killed with
// SIGKILL and started again on the same state, the server has the same
// measurements and the same speedup curve from them.
func TestMeasurementsSurviveKill(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--speed", "10",
		"--rate-limit", "1s", "--resync", "500ms", "--log-level", "warn")
	c := srv.Client()
	ctx := ctxT(t)
	j, err := c.CreateJob(ctx, manifest("measured", 4, 4, 500))
	if err != nil {
		t.Fatal(err)
	}
	var before api.Job
	waitFor(t, "a measured throughput and an estimate", 60*time.Second, func() (bool, error) {
		before, err = c.GetJob(ctx, j.Name)
		if err != nil {
			return false, err
		}
		m := before.Measured
		if m == nil || len(m.Throughput) == 0 || before.RemainingSeconds == nil || len(before.Speedup) < 5 {
			return false, fmt.Errorf("measured %+v, remaining %v, speedup %v", m, before.RemainingSeconds, before.Speedup)
		}
		return true, nil
	})
	tp := before.Measured.Throughput[0]
	// The sim's amdahl model: 4 workers on one node run at
	// 4/(1+0.05*3) one-GPU seconds per second, an epoch being 60 of them.
	if want := 4 / 1.15 / 60 * 3600; tp.Workers != 4 || tp.Nodes != 1 || tp.EpochsPerHour < 0.9*want || tp.EpochsPerHour > 1.1*want {
		t.Errorf("measured throughput %+v, want about %.1f epochs/h on 4 workers, 1 node", tp, want)
	}
	srv.Kill()
	srv.Start()
	c = srv.Client()
	after, err := c.GetJob(ctx, j.Name)
	if err != nil {
		t.Fatal(err)
	}
	if after.Measured == nil || !slices.Equal(after.Measured.Throughput, before.Measured.Throughput) {
		t.Errorf("measured throughput after the restart %+v, before %+v", after.Measured, before.Measured)
	}
	// The restarted scheduler's first estimate comes from the stored
	// measurements alone: the same curve.
	waitFor(t, "the restarted scheduler's estimate", 30*time.Second, func() (bool, error) {
		after, err = c.GetJob(ctx, j.Name)
		if err != nil {
			return false, err
		}
		return after.Status == "Running" && len(after.Speedup) > 0, nil
	})
	if !slices.Equal(after.Speedup, before.Speedup) {
		t.Errorf("speedup after the restart %v, before %v", after.Speedup, before.Speedup)
	}
}
