package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

// A workload whose jobs' workers hold 1, 2, 4 or 8 GPUs runs to the end
// under every algorithm on 8-GPU nodes: every job completes, and every
// count of GPUs a job ever held is whole workers of its G.
func TestSimulateMultiGPUWorkers(t *testing.T) {
	var jobs []workload.Job
	for i := range 24 {
		g := []int{1, 2, 4, 8}[i%4]
		jobs = append(jobs, workload.Job{Name: fmt.Sprintf("j%02d", i), App: []string{"linear", "amdahl"}[i%2],
			Submit: float64(i * 40), MinWorkers: 1, MaxWorkers: 1 + i%3, Requested: 1 + i%2, GPUsPerWorker: g, Epochs: 5})
	}
	per := map[string]int{}
	for _, j := range jobs {
		per[j.Name] = j.PerWorker()
	}
	for _, name := range algorithm.Builtin().Names() {
		t.Run(name, func(t *testing.T) {
			r := run(t, jobs, Options{Nodes: 3, GPUsPerNode: 8, Interval: time.Minute,
				Allocator: newAlloc(t, name), Placer: topologyPlacer(t)})
			done := 0
			for _, j := range r.Jobs {
				if j.Done {
					done++
				}
			}
			if done != len(jobs) {
				t.Errorf("%d of %d jobs completed", done, len(jobs))
			}
			for _, c := range r.Changes {
				if c.GPUs%per[c.Job] != 0 {
					t.Errorf("%s held %d GPUs at %.0f s: not whole workers of %d", c.Job, c.GPUs, c.Time, per[c.Job])
				}
			}
		})
	}
}
