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
		})
	}
	return s
}

func allocFor(s *model.Snapshot, gpus ...int) model.Allocation {
	a := model.NewAllocation(len(s.Jobs))
	for i, j := range s.Jobs {
		a.Order = append(a.Order, j.Spec.Name)
		if gpus[i] > 0 {
			a.GPUs[j.Spec.Name] = gpus[i]
		}
	}
	return a
}

// The original double-booked the remainder of a job spanning nodes.
func TestDefect_SpanningJobNotDoubleBooked(t *testing.T) {
	s := defectSnapshot([]int{4, 4, 4}, map[string]model.JobPlacement{"j0": nil, "j1": nil})
	a := allocFor(s, 6, 6)
	res, err := NewGreedy().Place(s, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(s, a, res); err != nil {
		t.Fatal(err)
	}
	if len(res.Unplaced) != 0 || res.Placement["j0"].Workers() != 6 || res.Placement["j1"].Workers() != 6 {
		t.Fatalf("two 6-GPU jobs on 12 GPUs: %v, unplaced %v", res.Placement, res.Unplaced)
	}
}

// The original could loop forever when the cluster was full.
func TestDefect_FullClusterTerminates(t *testing.T) {
	s := defectSnapshot([]int{4, 4}, map[string]model.JobPlacement{
		"j0": {{Node: "n0", Workers: 4}, {Node: "n1", Workers: 4}},
		"j1": nil,
	})
	// An allocation that does not fit once j0 keeps its GPUs: j1 must be
	// reported, not spun on.
	a := allocFor(s, 8, 0)
	a.GPUs["j1"] = 1
	res, err := NewGreedy().Place(s, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unplaced) != 1 || res.Unplaced[0].Job != "j1" || res.Unplaced[0].Reason == "" {
		t.Fatalf("unplaced = %+v, want j1 with a reason", res.Unplaced)
	}
}

// The original's matching ignored node capacity.
func TestDefect_NodeCapacityRespected(t *testing.T) {
	s := defectSnapshot([]int{8, 2, 2, 4}, map[string]model.JobPlacement{
		"j0": {{Node: "n1", Workers: 2}},
		"j1": {{Node: "n0", Workers: 3}},
		"j2": nil,
	})
	a := allocFor(s, 6, 3, 7)
	res, err := NewGreedy().Place(s, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(s, a, res); err != nil {
		t.Fatalf("capacity: %v (placement %v)", err, res.Placement)
	}
}

// The original deleted hundreds of pods per round when nothing changed.
func TestDefect_UnchangedPlanNoMigrations(t *testing.T) {
	cur := map[string]model.JobPlacement{
		"j0": {{Node: "n2", Workers: 3}, {Node: "n0", Workers: 1}},
		"j1": {{Node: "n1", Workers: 4}},
		"j2": {{Node: "n0", Workers: 2}},
	}
	s := defectSnapshot([]int{4, 4, 4}, cur)
	a := allocFor(s, 4, 4, 2)
	for round := 0; round < 3; round++ {
		res, err := NewGreedy().Place(s, a)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range cur {
			if !res.Placement[name].Equal(p) {
				t.Fatalf("round %d: job %s moved from %v to %v", round, name, p, res.Placement[name])
			}
		}
	}
}
