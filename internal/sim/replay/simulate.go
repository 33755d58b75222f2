package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/scheduler"
	"github.com/vodascheduler/voda/internal/sim"
	"github.com/vodascheduler/voda/internal/sim/report"
)

// SimOptions returns opts with the settings of the server's scheduler
// sched that the simulator honours too: its nodes and GPUs per node, its
// rate limit, event-driven cycles, and the least time between a cycle and
// a limited one of a server whose clock runs rate times faster than real
// time (the server keeps it at scheduler.DefaultStartInterval of wall
// time). The API does not show the tick, the restart cost or the placer:
// opts and the caller give those.
func SimOptions(sched api.Scheduler, rate float64, opts sim.Options) (sim.Options, error) {
	if sched.Nodes < 1 || sched.GPUs < sched.Nodes || sched.GPUs%sched.Nodes != 0 {
		return opts, fmt.Errorf("scheduler %s has %d GPUs on %d nodes: the simulator needs the same GPUs on every node", sched.GPUType, sched.GPUs, sched.Nodes)
	}
	opts.Nodes, opts.GPUsPerNode = sched.Nodes, sched.GPUs/sched.Nodes
	opts.Interval = 0
	opts.RateLimit = time.Duration(sched.RateLimitSeconds * float64(time.Second))
	if rate > 0 {
		opts.StartInterval = time.Duration(float64(scheduler.DefaultStartInterval) * rate)
	}
	return opts, nil
}

// Simulate runs wl in the simulator under opts (see SimOptions) with the
// server's algorithm and its parameters and the given placer.
func Simulate(ctx context.Context, wl sim.Workload, sched api.Scheduler, placer string, opts sim.Options) (*report.Run, error) {
	c := &sim.Comparison{Workloads: []sim.Workload{wl}, Algorithms: []string{sched.Algorithm}, Placers: []string{placer}, Options: opts, Parallelism: 1}
	for _, k := range slices.Sorted(maps.Keys(sched.Params)) {
		c.AlgorithmParams = append(c.AlgorithmParams, k+"="+sched.Params[k])
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	runs, err := c.Run(ctx)
	if err != nil {
		return nil, err
	}
	return runs[0][0], nil
}
