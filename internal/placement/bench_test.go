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
// start. With mixed, a third of the jobs have workers of 2, 4 or 8 GPUs
// (their worker range divided by that, at least one worker), the rest
// one; without, every job draws the same numbers as before mixed
// existed, so the figures stay comparable.
func benchCase(nodeCount, gpusPerNode, jobCount int, seed uint64) (*model.Snapshot, model.Allocation) {
	return benchCaseOf(nodeCount, gpusPerNode, jobCount, seed, false)
}

// benchCaseOf is benchCase, with workers of several GPUs if mixed.
func benchCaseOf(nodeCount, gpusPerNode, jobCount int, seed uint64, mixed bool) (*model.Snapshot, model.Allocation) {
	rng := rand.New(rand.NewPCG(seed, 1))
	snap := &model.Snapshot{Now: time.Unix(1e6, 0)}
	for i := range nodeCount {
		snap.Nodes = append(snap.Nodes, model.Node{Name: fmt.Sprintf("node-%04d", i), GPUs: gpusPerNode, Index: i})
	}
	maxes := []int{1, 2, 4, 8, 16}
	for i := range jobCount {
		per := 1
		if mixed && rng.IntN(3) == 0 {
			per = []int{2, 4, 8}[rng.IntN(3)]
		}
		snap.Jobs = append(snap.Jobs, model.Job{
			Spec: model.JobSpec{Name: fmt.Sprintf("job-%05d", i), MinWorkers: 1,
				MaxWorkers: max(1, maxes[rng.IntN(len(maxes))]/per), RequestedWorkers: 1,
				GPUsPerWorker: per, SubmitTime: time.Unix(int64(i), 0)},
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
		if g := (1 + rng.IntN(j.Spec.MaxWorkers)) * j.Spec.PerWorker(); g <= left && rng.IntN(10) > 0 {
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
			g = (1 + rng.IntN(j.Spec.MaxWorkers)) * j.Spec.PerWorker()
		case g == 0 && r < 6:
			g = (1 + rng.IntN(j.Spec.MaxWorkers)) * j.Spec.PerWorker()
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
// jobs, for every placer; 10,000 nodes show how the cost grows. The
// mixed cases give a third of the jobs workers of 2, 4 or 8 GPUs (issue
// 29's target: within 1.5x of the same size with one GPU per worker).
func BenchmarkPlace(b *testing.B) {
	sizes := []struct{ nodes, jobs int }{{100, 500}, {1000, 4000}, {1000, 10000}, {10000, 40000}}
	r := Builtin()
	for _, name := range r.Names() {
		for _, mixed := range []bool{false, true} {
			for _, sz := range sizes {
				benchPlace(b, r, name, mixed, sz.nodes, sz.jobs)
			}
		}
	}
}

func benchPlace(b *testing.B, r *Registry, name string, mixed bool, nodes, jobs int) {
	kind := ""
	if mixed {
		kind = "mixed/"
	}
	b.Run(fmt.Sprintf("%s/%snodes=%d/jobs=%d", name, kind, nodes, jobs), func(b *testing.B) {
		p, err := r.New(name, nil)
		if err != nil {
			b.Fatal(err)
		}
		snap, alloc := benchCaseOf(nodes, 8, jobs, 42, mixed)
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
		b.ReportMetric(float64(len(res.Unplaced)), "unplaced-jobs")
	})
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
