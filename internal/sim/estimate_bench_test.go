package sim

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

// BenchmarkSimulateGoodputAdaptive is the estimator-cost figure (issue
// 28): Goodput with adaptive batches and online goodput estimates on
// Pollux workload 6, as `voda simulate --algorithm Goodput
// --adaptive-batch --interval 60s` runs it, against
// BenchmarkSimulateElasticFIFOWorkload6, the default algorithm with fixed
// batches on the same workload. Profile it with -cpuprofile.
func BenchmarkSimulateGoodputAdaptive(b *testing.B) {
	benchPolluxWorkload6(b, func(models *perfmodel.Set) Options {
		return Options{Allocator: newAlloc(b, "Goodput"), Placer: topologyPlacer(b), Models: models, AdaptiveBatch: true}
	})
}

// BenchmarkSimulateElasticFIFOWorkload6 is the default algorithm's
// figure that BenchmarkSimulateGoodputAdaptive is compared with.
func BenchmarkSimulateElasticFIFOWorkload6(b *testing.B) {
	benchPolluxWorkload6(b, func(models *perfmodel.Set) Options {
		return Options{Allocator: newAlloc(b, "ElasticFIFO"), Placer: topologyPlacer(b), Models: models}
	})
}

// benchPolluxWorkload6 runs Pollux workload 6 on the artifact's cluster
// (16 x 4 GPUs, a cycle a minute) with the options opts gives for each
// run, whose cluster and mode it sets.
func benchPolluxWorkload6(b *testing.B, opts func(*perfmodel.Set) Options) {
	dir := polluxDir(b)
	models := polluxModels(b, dir)
	jobs, err := workload.Read(filepath.Join(dir, "workloads", "workload-6.csv"), workload.FormatPollux, workload.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		o := opts(models)
		o.Nodes, o.GPUsPerNode, o.Interval = 16, 4, 60*time.Second
		if _, err := Run(context.Background(), jobs, o); err != nil {
			b.Fatal(err)
		}
	}
}
