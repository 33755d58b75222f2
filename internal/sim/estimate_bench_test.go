package sim

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/sim/workload"
)

// BenchmarkSimulateGoodputAdaptive is the estimator-cost figure (issue
// 28): Goodput with adaptive batches and online goodput estimates on
// Pollux workload 6, as `voda simulate --algorithm Goodput
// --adaptive-batch --interval 60s` runs it, against
// BenchmarkSimulateElasticFIFOWorkload6, the default algorithm with fixed
// batches on the same workload. Profile it with -cpuprofile.
func BenchmarkSimulateGoodputAdaptive(b *testing.B) {
	benchPolluxWorkload6(b, "Goodput", true)
}

// BenchmarkSimulateElasticFIFOWorkload6 is the default algorithm's
// figure that BenchmarkSimulateGoodputAdaptive is compared with.
func BenchmarkSimulateElasticFIFOWorkload6(b *testing.B) {
	benchPolluxWorkload6(b, "ElasticFIFO", false)
}

func benchPolluxWorkload6(b *testing.B, alloc string, adaptive bool) {
	dir := polluxDir(b)
	models := polluxModels(b, dir)
	jobs, err := workload.Read(filepath.Join(dir, "workloads", "workload-6.csv"), workload.FormatPollux, workload.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), jobs, Options{
			Nodes: 16, GPUsPerNode: 4, Interval: 60 * time.Second,
			Allocator: newAlloc(b, alloc), Placer: topologyPlacer(b), Models: models,
			AdaptiveBatch: adaptive,
		}); err != nil {
			b.Fatal(err)
		}
	}
}
