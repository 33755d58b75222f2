package kube

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vodascheduler/voda/test/vodatest"
)

// TestStartOnFreeGPUsUnderRateLimit: with a rate limit of ten minutes,
// MPIJobs that fit in free GPUs get their worker pods at once on a real
// control plane with the real mpi-operator: the rate limit holds only
// changes to running jobs. It logs the submission-to-pods-created and
// submission-to-running latencies, the figures docs/kubernetes.md reports.
func TestStartOnFreeGPUsUnderRateLimit(t *testing.T) {
	const gpuType = "start-gpu"
	c := newCluster(t, gpuType, 4, 4)
	srv := c.start("--rate-limit", "10m")
	vc := srv.Client()
	ctx := t.Context()

	// The first job may ride the scheduler's first cycle; the others come
	// within the rate limit of it. The operator may still be working
	// through an earlier test's objects (mpi-operator v0.6.0 requeues at
	// most 10 jobs a second, so after TestScale's 200 jobs it lags for
	// minutes; this file sorts before scale_test.go so that it runs
	// first), so the first job's pods get a generous deadline: it warms
	// the operator up.
	first := submit(t, vc, mpiJob.manifest("first", gpuType, 4, 4, time.Hour))
	placed := func(name string, within time.Duration) {
		t.Helper()
		vodatest.WaitFor(t, "4 workers of "+name+" bound and running", within, func() (bool, error) {
			_, ok, err := c.placed(ctx, vc, mpiJob, name, 4)
			return ok, err
		})
	}
	placed(first, 5*time.Minute)

	var decided, created, running []time.Duration
	for i := range 3 {
		start := time.Now()
		name := submit(t, vc, mpiJob.manifest(fmt.Sprintf("next-%d", i), gpuType, 4, 4, time.Hour))
		// Voda's decision: Running within waitStatus's 90 s, not the
		// 10 min rate limit. The operator's pods follow; their deadline is generous
		// (the operator's speed is not Voda's) yet still below the rate
		// limit, so a start that waited for it would fail here too.
		waitStatus(t, vc, name, "Running")
		decided = append(decided, time.Since(start))
		vodatest.WaitFor(t, "the worker pods of "+name+" created", 5*time.Minute, func() (bool, error) {
			pods, err := workerPods(ctx, c.ns, name)
			if err != nil {
				return false, err
			}
			return len(pods) == 4, fmt.Errorf("%d worker pods", len(pods))
		})
		created = append(created, time.Since(start))
		placed(name, 5*time.Minute)
		running = append(running, time.Since(start))
	}
	for _, d := range [][]time.Duration{decided, created, running} {
		slices.Sort(d)
	}
	t.Logf("submission to Running (Voda's decision applied): min %v, median %v, max %v", decided[0], decided[1], decided[2])
	t.Logf("submission to 4 worker pods created: min %v, median %v, max %v", created[0], created[1], created[2])
	t.Logf("submission to 4 workers bound and running: min %v, median %v, max %v", running[0], running[1], running[2])
}
