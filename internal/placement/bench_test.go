package placement

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/model"
)

// benchCase builds one cycle of a busy cluster: jobs of 1 to 16 workers
// that the greedy placer put on nodes in an earlier cycle (so the
// cluster is fragmented), and a new allocation in which most jobs keep
// their count, some grow or shrink, some stop and some waiting ones
// start.
func benchCase(nodeCount, gpusPerNode, jobCount int, seed uint64) (*model.Snapshot, model.Allocation) {
	rng := rand.New(rand.NewPCG(seed, 1))
	snap := &model.Snapshot{Now: time.Unix(1e6, 0)}
	for i := range nodeCount {
		snap.Nodes = append(snap.Nodes, model.Node{Name: fmt.Sprintf("node-%04d", i), GPUs: gpusPerNode, Index: i})
	}
	maxes := []int{1, 2, 4, 8, 16}
	for i := range jobCount {
		snap.Jobs = append(snap.Jobs, model.Job{
			Spec: model.JobSpec{Name: fmt.Sprintf("job-%05d", i), MinWorkers: 1,
				MaxWorkers: maxes[rng.IntN(len(maxes))], RequestedWorkers: 1,
				SubmitTime: time.Unix(int64(i), 0)},
			State: model.JobState{Status: model.StatusWaiting},
			Est:   model.Estimates{RemainingSeconds: float64(600 + rng.IntN(36000))},
		})
	}
	total := snap.TotalGPUs()

	// The earlier cycle.
	prev := model.Allocation{GPUs: make(map[string]int, jobCount)}
	left := total
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		prev.Order = append(prev.Order, j.Spec.Name)
		if g := 1 + rng.IntN(j.Spec.MaxWorkers); g <= left && rng.IntN(10) > 0 {
			prev.GPUs[j.Spec.Name] = g
			left -= g
		}
	}
	res, err := NewGreedy().Place(snap, prev)
	if err != nil {
		panic(err)
	}
	snap = feedBack(snap, res)

	// This cycle.
	alloc := model.Allocation{GPUs: make(map[string]int, jobCount)}
	left = total
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		alloc.Order = append(alloc.Order, j.Spec.Name)
		g := j.State.GPUs
		switch r := rng.IntN(20); {
		case g > 0 && r == 0:
			g = 0
		case g > 0 && r < 3:
			g = 1 + rng.IntN(j.Spec.MaxWorkers)
		case g == 0 && r < 6:
			g = 1 + rng.IntN(j.Spec.MaxWorkers)
		}
		if g > left {
			g = 0
		}
		left -= g
		if g > 0 {
			alloc.GPUs[j.Spec.Name] = g
		}
	}
	return snap, alloc
}

// BenchmarkPlace measures one placement decision. The original Voda's
// matching step alone took 3.47 s at 500 nodes and hung at 250 nodes with
// 1,000 jobs; the target here is 10 ms at 1,000 nodes x 8 GPUs, 4,000
// jobs, for every placer; 10,000 nodes show how the cost grows.
func BenchmarkPlace(b *testing.B) {
	sizes := []struct{ nodes, jobs int }{{100, 500}, {1000, 4000}, {10000, 40000}}
	r := Builtin()
	for _, name := range r.Names() {
		for _, sz := range sizes {
			b.Run(fmt.Sprintf("%s/nodes=%d/jobs=%d", name, sz.nodes, sz.jobs), func(b *testing.B) {
				p, err := r.New(name, nil)
				if err != nil {
					b.Fatal(err)
				}
				snap, alloc := benchCase(sz.nodes, 8, sz.jobs, 42)
				res, err := p.Place(snap, alloc)
				if err != nil {
					b.Fatal(err)
				}
				if err := Check(snap, alloc, res); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := p.Place(snap, alloc); err != nil {
						b.Fatal(err)
					}
				}
				// What the decision did, for comparing placers.
				b.ReportMetric(float64(Spread(snap.Nodes, res.Placement)), "spread-jobs")
				moved := 0
				capacity := capacities(snap)
				for i := range snap.Jobs {
					j := &snap.Jobs[i]
					moved += movedWorkers(j.State.Placement, res.Placement[j.Spec.Name], capacity)
				}
				b.ReportMetric(float64(moved), "moved-workers")
			})
		}
	}
}

// BenchmarkCheck measures what the scheduler core does with every
// placement besides making it: Check and Spread.
func BenchmarkCheck(b *testing.B) {
	for _, sz := range []struct{ nodes, jobs int }{{100, 500}, {1000, 4000}, {10000, 40000}} {
		b.Run(fmt.Sprintf("nodes=%d/jobs=%d", sz.nodes, sz.jobs), func(b *testing.B) {
			snap, alloc := benchCase(sz.nodes, 8, sz.jobs, 42)
			res, err := NewGreedy().Place(snap, alloc)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := Check(snap, alloc, res); err != nil {
					b.Fatal(err)
				}
				Spread(snap.Nodes, res.Placement)
			}
		})
	}
}
