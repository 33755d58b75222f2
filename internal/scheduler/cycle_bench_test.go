package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/registry"
)

type nopPort struct{}

func (nopPort) Apply(context.Context, Action) error { return nil }

// BenchmarkCycle/<Algorithm>/jobs=<N> times one whole Core cycle
// (snapshot, allocate, place, diff, apply through a port that does
// nothing) on 1,000 nodes of 8 GPUs, in steady state: before each cycle a
// running job finishes and a new one arrives, as at a busy cluster where
// every event triggers a cycle. Metrics: alloc-ns/op and place-ns/op are
// the allocator's and the placer's parts of ns/op.
func BenchmarkCycle(b *testing.B) {
	for _, name := range []string{algorithm.NameElasticFIFO, algorithm.NameAFSL} {
		for _, jobs := range []int{10000, 100000} {
			b.Run(fmt.Sprintf("%s/jobs=%d", name, jobs), func(b *testing.B) {
				benchCycle(b, name, jobs)
			})
		}
	}
}

func benchCycle(b *testing.B, name string, jobs int) {
	p, err := registry.ParseParams(nil)
	if err != nil {
		b.Fatal(err)
	}
	alloc, err := algorithm.Builtin().New(name, p)
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewCore(Config{GPUType: "v100", Allocator: alloc, Placer: placement.NewGreedy(), Port: nopPort{},
		RateLimit: -1, StartInterval: -1, Stopwatch: clock.RealClock{}})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		if err := c.AddNode(now, model.Node{Name: fmt.Sprintf("node-%04d", i), GPUs: 8}); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 28))
	next := 0
	// Jobs are submitted at now (a core call at a later time advances
	// every job), with submit times a millisecond apart.
	submit := func() {
		maxW := []int{1, 2, 4, 8}[r.IntN(4)]
		s := model.JobSpec{Name: fmt.Sprintf("job-%07d", next), GPUType: "v100", MinWorkers: 1, MaxWorkers: maxW,
			RequestedWorkers: 1 + r.IntN(maxW), SubmitTime: now.Add(time.Duration(next) * time.Millisecond)}
		next++
		if err := c.Submit(now, s); err != nil {
			b.Fatal(err)
		}
		curve := make([]float64, maxW+1)
		a := 0.02 + r.Float64()*0.3
		for k := 1; k <= maxW; k++ {
			curve[k] = float64(k) / (1 + a*float64(k-1))
		}
		if err := c.SetEstimates(s.Name, model.Estimates{RemainingSeconds: 60 + r.Float64()*1e5, Speedup: curve}); err != nil {
			b.Fatal(err)
		}
	}
	for range jobs {
		submit()
	}
	ctx := context.Background()
	cycle := func() CycleReport {
		now = now.Add(time.Second)
		rep, err := c.Cycle(ctx, now)
		if err != nil {
			b.Fatal(err)
		}
		return rep
	}
	cycle() // start the first 8,000 GPUs' worth of jobs
	var running []string
	for _, j := range c.Snapshot(now).Jobs {
		if j.State.GPUs > 0 {
			running = append(running, j.Spec.Name)
		}
	}
	var allocNs, placeNs time.Duration
	b.ReportAllocs()
	for b.Loop() {
		k := r.IntN(len(running))
		if _, err := c.Finish(now, running[k], model.StatusCompleted); err != nil {
			b.Fatal(err)
		}
		running[k] = running[len(running)-1]
		running = running[:len(running)-1]
		submit()
		rep := cycle()
		allocNs += rep.AllocateDuration
		placeNs += rep.PlaceDuration
		for _, a := range rep.Actions {
			if a.Kind == Start {
				running = append(running, a.Job)
			}
		}
	}
	b.ReportMetric(float64(allocNs)/float64(b.N), "alloc-ns/op")
	b.ReportMetric(float64(placeNs)/float64(b.N), "place-ns/op")
}

// TestCoreKeepsJobsInArrivalOrder: the core's arrival order, kept up to
// date as jobs come and go rather than sorted per snapshot, always lists
// exactly the live jobs, sorted by model.Before (ties in submit time
// included), in snapshots and in cycles.
func TestCoreKeepsJobsInArrivalOrder(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 28))
		port := &recordPort{}
		c, err := NewCore(Config{GPUType: "v100", Allocator: &fixedAlloc{gpus: map[string]int{}}, Placer: placement.NewGreedy(), Port: port})
		if err != nil {
			t.Fatal(err)
		}
		live := map[string]bool{}
		var names []string
		for step := range 300 {
			switch op := r.IntN(10); {
			case op < 5 || len(names) == 0:
				name := fmt.Sprintf("j%04d", r.IntN(5000))
				if live[name] {
					continue
				}
				s := spec(name, 1, 2, t0.Add(time.Duration(r.IntN(20))*time.Second))
				if op == 0 {
					err = c.Restore(model.Job{Spec: s, State: model.JobState{Status: model.StatusWaiting}})
				} else {
					err = c.Submit(t0, s)
				}
				if err != nil {
					t.Fatal(err)
				}
				live[name] = true
				names = append(names, name)
			default:
				k := r.IntN(len(names))
				if _, err := c.Finish(t0, names[k], model.StatusCompleted); err != nil {
					t.Fatal(err)
				}
				delete(live, names[k])
				names = append(names[:k], names[k+1:]...)
			}
			snap := c.Snapshot(t0)
			if len(snap.Jobs) != len(live) {
				t.Fatalf("seed %d step %d: %d jobs in the snapshot, %d live", seed, step, len(snap.Jobs), len(live))
			}
			for i := range snap.Jobs {
				if !live[snap.Jobs[i].Spec.Name] {
					t.Fatalf("seed %d step %d: snapshot lists %s, which is not live", seed, step, snap.Jobs[i].Spec.Name)
				}
				if i > 0 && !model.Before(&snap.Jobs[i-1], &snap.Jobs[i]) {
					t.Fatalf("seed %d step %d: %s listed before %s", seed, step, snap.Jobs[i-1].Spec.Name, snap.Jobs[i].Spec.Name)
				}
			}
		}
	}
}
