package placement

import (
	"fmt"
	"testing"

	"github.com/vodascheduler/voda/internal/model"
)

// The original Voda's placement defects (../shared/notes/voda-original.md),
// one named test each.

func defectSnapshot(sizes []int, jobs map[string]model.JobPlacement) *model.Snapshot {
	s := &model.Snapshot{}
	for i, g := range sizes {
		s.Nodes = append(s.Nodes, model.Node{Name: fmt.Sprintf("n%d", i), GPUs: g, Index: i})
	}
	for i := 0; i < len(jobs); i++ {
		name := fmt.Sprintf("j%d", i)
		p := jobs[name]
		s.Jobs = append(s.Jobs, model.Job{
			Spec:  model.JobSpec{Name: name, MinWorkers: 1, MaxWorkers: 64, RequestedWorkers: 1},
			State: model.JobState{GPUs: p.Workers(), Placement: p},
			// Unknown, as for a job the collector has not measured yet.
			Est: model.Estimates{RemainingSeconds: -1},
		})
	}
	return s
}

func allocFor(s *model.Snapshot, gpus ...int) model.Allocation {
	a := model.Allocation{GPUs: make(map[string]int, len(s.Jobs))}
	for i, j := range s.Jobs {
		a.Order = append(a.Order, j.Spec.Name)
		if gpus[i] > 0 {
			a.GPUs[j.Spec.Name] = gpus[i]
		}
	}
	return a
}

// eachPlacer runs f for every built-in placer with its defaults.
func eachPlacer(t *testing.T, f func(t *testing.T, p Placer)) {
	r := Builtin()
	for _, name := range r.Names() {
		t.Run(name, func(t *testing.T) {
			p, err := r.New(name, nil)
			if err != nil {
				t.Fatal(err)
			}
			f(t, p)
		})
	}
}

// The original double-booked the remainder of a job spanning nodes.
func TestDefect_SpanningJobNotDoubleBooked(t *testing.T) {
	eachPlacer(t, func(t *testing.T, p Placer) {
		s := defectSnapshot([]int{4, 4, 4}, map[string]model.JobPlacement{"j0": nil, "j1": nil})
		a := allocFor(s, 6, 6)
		res, err := p.Place(s, a)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(s, a, res); err != nil {
			t.Fatal(err)
		}
		if len(res.Unplaced) != 0 || res.Placement["j0"].Workers() != 6 || res.Placement["j1"].Workers() != 6 {
			t.Fatalf("two 6-GPU jobs on 12 GPUs: %v, unplaced %v", res.Placement, res.Unplaced)
		}
	})
}

// The original could loop forever when the cluster was full.
func TestDefect_FullClusterTerminates(t *testing.T) {
	s := defectSnapshot([]int{4, 4}, map[string]model.JobPlacement{
		"j0": {{Node: "n0", Workers: 4}, {Node: "n1", Workers: 4}},
		"j1": nil,
	})
	// An allocation that does not fit once j0 keeps its GPUs: j1 must be
	// reported, not spun on.
	eachPlacer(t, func(t *testing.T, p Placer) {
		a := allocFor(s, 8, 0)
		a.GPUs["j1"] = 1
		res, err := p.Place(s, a)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Unplaced) != 1 || res.Unplaced[0].Job != "j1" || res.Unplaced[0].Reason == "" {
			t.Fatalf("unplaced = %+v, want j1 with a reason", res.Unplaced)
		}
		if err := Check(s, a, res); err != nil {
			t.Fatal(err)
		}
	})
}

// The original's matching ignored node capacity.
func TestDefect_NodeCapacityRespected(t *testing.T) {
	s := defectSnapshot([]int{8, 2, 2, 4}, map[string]model.JobPlacement{
		"j0": {{Node: "n1", Workers: 2}},
		"j1": {{Node: "n0", Workers: 3}},
		"j2": nil,
	})
	a := allocFor(s, 6, 3, 7)
	eachPlacer(t, func(t *testing.T, p Placer) {
		res, err := p.Place(s, a)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(s, a, res); err != nil {
			t.Fatalf("capacity: %v (placement %v)", err, res.Placement)
		}
	})
}

// The original deleted hundreds of pods per round when nothing changed.
// Here a round whose allocation did not change moves nothing, except that
// the topology placer may consolidate a fragmented job once, within its
// budget; after that nothing moves either.
func TestDefect_UnchangedPlanNoMigrations(t *testing.T) {
	cur := map[string]model.JobPlacement{
		"j0": {{Node: "n2", Workers: 3}, {Node: "n0", Workers: 1}},
		"j1": {{Node: "n1", Workers: 4}},
		"j2": {{Node: "n0", Workers: 2}},
	}
	eachPlacer(t, func(t *testing.T, p Placer) {
		s := defectSnapshot([]int{4, 4, 4}, cur)
		a := allocFor(s, 4, 4, 2)
		res, err := p.Place(s, a)
		if err != nil {
			t.Fatal(err)
		}
		capacity := capacities(s)
		moved := 0
		for name, jp := range cur {
			moved += movedWorkers(jp, res.Placement[name], capacity)
		}
		switch p.Name() {
		case GreedyName:
			if moved != 0 {
				t.Fatalf("greedy moved %d workers: %v", moved, res.Placement)
			}
		case TopologyName:
			// j0 fits on n2 once its worker on n0 joins the other three.
			want := model.JobPlacement{{Node: "n2", Workers: 4}}
			if moved != 1 || !res.Placement["j0"].Equal(want) {
				t.Fatalf("topology: moved %d, j0 at %v; want 1 worker moved, j0 at %v", moved, res.Placement["j0"], want)
			}
		}
		for round := 0; round < 3; round++ {
			s = feedBack(s, res)
			next, err := p.Place(s, a)
			if err != nil {
				t.Fatal(err)
			}
			for name, jp := range res.Placement {
				if !next.Placement[name].Equal(jp) {
					t.Fatalf("round %d: job %s moved from %v to %v", round, name, jp, next.Placement[name])
				}
			}
			res = next
		}
	})
}

// At the original's scale (500 jobs, where it deleted hundreds of pods a
// round), an unchanged allocation moves no worker once placed.
func TestDefect_UnchangedPlanNoMigrationsAtScale(t *testing.T) {
	eachPlacer(t, func(t *testing.T, p Placer) {
		snap, alloc := benchCase(500, 8, 500, 11)
		capacity := capacities(snap)
		// Settle: consolidation may take a few rounds.
		res, err := p.Place(snap, alloc)
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 20; round++ {
			snap = feedBack(snap, res)
			if res, err = p.Place(snap, alloc); err != nil {
				t.Fatal(err)
			}
		}
		snap = feedBack(snap, res)
		next, err := p.Place(snap, alloc)
		if err != nil {
			t.Fatal(err)
		}
		moved := 0
		for i := range snap.Jobs {
			j := &snap.Jobs[i]
			moved += movedWorkers(j.State.Placement, next.Placement[j.Spec.Name], capacity)
		}
		if moved != 0 {
			t.Fatalf("%d workers moved on an unchanged allocation", moved)
		}
	})
}
