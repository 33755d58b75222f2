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
	// within the rate limit of it.
	first := submit(t, vc, mpiJob.manifest("first", gpuType, 4, 4, time.Hour))
	c.waitPlaced(t, vc, mpiJob, first, 4)

	var created, running []time.Duration
	for i := range 3 {
		start := time.Now()
		name := submit(t, vc, mpiJob.manifest(fmt.Sprintf("next-%d", i), gpuType, 4, 4, time.Hour))
		vodatest.WaitFor(t, "the worker pods of "+name+" created, long before the 10 min rate limit", 60*time.Second, func() (bool, error) {
			pods, err := workerPods(ctx, c.ns, name)
			if err != nil {
				return false, err
			}
			return len(pods) == 4, fmt.Errorf("%d worker pods", len(pods))
		})
		created = append(created, time.Since(start))
		c.waitPlaced(t, vc, mpiJob, name, 4)
		running = append(running, time.Since(start))
	}
	slices.Sort(created)
	slices.Sort(running)
	t.Logf("submission to 4 worker pods created: min %v, median %v, max %v", created[0], created[1], created[2])
	t.Logf("submission to 4 workers bound and running: min %v, median %v, max %v", running[0], running[1], running[2])
}
