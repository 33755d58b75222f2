package algorithm

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
)

// TestPropertiesAllAlgorithms runs every registered algorithm on many
// random snapshots and checks the Allocator contract.
func TestPropertiesAllAlgorithms(t *testing.T) {
	reg := Builtin()
	for _, name := range reg.Names() {
		t.Run(name, func(t *testing.T) {
			a := mustNew(t, name)
			r := rand.New(rand.NewPCG(1, 2))
			for range 500 {
				snap := randomSnapshot(r, 40, 6)
				got := allocate(t, a, snap)
				// Order must list jobs in a valid permutation; checked by
				// checkAllocation. Non-elastic algorithms give exactly the
				// requested count or nothing.
				e, _ := reg.Lookup(name)
				if !e.Has(TagElastic) {
					for _, j := range snap.Jobs {
						if g := got.GPUs[j.Spec.Name]; g != 0 && g != j.Spec.RequestedWorkers {
							t.Fatalf("job %s got %d GPUs, requested %d", j.Spec.Name, g, j.Spec.RequestedWorkers)
						}
					}
				}
			}
		})
	}
}

// TestPropertiesLarge exercises the paths that only large snapshots reach
// (FfDL's greedy, long AFS-L tournaments).
func TestPropertiesLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large snapshots")
	}
	r := rand.New(rand.NewPCG(3, 4))
	snaps := []*model.Snapshot{benchSnapshot(1500, 800, 7), benchSnapshot(300, 8000, 8)}
	for range 4 {
		snaps = append(snaps, randomSnapshot(r, 2000, 300))
	}
	for _, a := range builtinAllocators(t) {
		t.Run(a.Name(), func(t *testing.T) {
			for _, snap := range snaps {
				allocate(t, a, snap)
			}
		})
	}
}

// TestRequeueProperties checks both Tiresias variants' Requeue on random
// snapshots: only due changes, every due change, once per job, in
// snapshot order, deterministic, without modifying the snapshot.
func TestRequeueProperties(t *testing.T) {
	for _, name := range []string{NameTiresias, NameElasticTiresias} {
		for _, params := range [][]string{nil, {"threshold=57600", "starvation=0"}, {"threshold=0", "starvation=1"}, {"threshold=1800", "starvation=0.5"}} {
			t.Run(name+"/"+strings.Join(params, ","), func(t *testing.T) {
				a := mustNew(t, name, params...)
				pz := a.(Prioritizer)
				p, _ := registry.ParseParams(params)
				las, err := readLASParams(p)
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(5, 6))
				for range 500 {
					snap := randomSnapshot(r, 40, 3)
					before := fingerprint(snap)
					changes := pz.Requeue(snap)
					if !before.unchanged(snap) {
						t.Fatal("Requeue modified the snapshot")
					}
					if again := pz.Requeue(snap); !reflect.DeepEqual(changes, again) {
						t.Fatalf("two runs differ: %v vs %v", changes, again)
					}
					var want []model.QueueChange
					for _, j := range snap.Jobs {
						st := j.State
						waited := snap.Now.Sub(st.WaitingSince).Seconds()
						switch {
						case st.Queue == 0 && st.QueueService >= las.threshold:
							want = append(want, model.QueueChange{Job: j.Spec.Name, Queue: 1})
						case las.starvation > 0 && st.Queue >= 1 && st.GPUs == 0 && !st.WaitingSince.IsZero() &&
							st.QueueRunSeconds > 0 && waited >= las.starvation*st.QueueRunSeconds:
							want = append(want, model.QueueChange{Job: j.Spec.Name, Queue: 0})
						}
					}
					if !reflect.DeepEqual(want, changes) {
						t.Fatalf("Requeue(%v) (-want,+got):\n-%v\n+%v", params, want, changes)
					}
					seen := map[string]bool{}
					for _, c := range changes {
						if seen[c.Job] {
							t.Fatalf("job %s changed twice", c.Job)
						}
						seen[c.Job] = true
					}
				}
			})
		}
	}
}

// TestAllocatorsRejectBadInput: bad input gives an error, not a panic.
func TestAllocatorsRejectBadInput(t *testing.T) {
	cases := map[string]*model.Snapshot{
		"nil":            nil,
		"negative node":  snapshot([]int{-1}, job("a", 1, 1, 1)),
		"huge cluster":   snapshot([]int{maxClusterGPUs, 1}, job("a", 1, 1, 1)),
		"empty name":     snapshot([]int{4}, job("", 1, 1, 1)),
		"duplicate name": snapshot([]int{4}, job("a", 1, 1, 1), job("a", 1, 1, 1)),
		"min zero":       snapshot([]int{4}, job("a", 0, 1, 1)),
		"min above max":  snapshot([]int{4}, job("a", 3, 3, 2)),
		"req below min":  snapshot([]int{4}, job("a", 2, 1, 3)),
		"req above max":  snapshot([]int{4}, job("a", 1, 4, 3)),
	}
	for _, a := range builtinAllocators(t) {
		for name, snap := range cases {
			if _, err := a.Allocate(snap); err == nil {
				t.Errorf("%s: %s: Allocate succeeded, want an error", a.Name(), name)
			}
		}
	}
	neg := snapshot([]int{4}, job("a", 1, 1, 1, queue(-1, 0)))
	for _, name := range []string{NameTiresias, NameElasticTiresias} {
		if _, err := mustNew(t, name).Allocate(neg); err == nil {
			t.Errorf("%s: negative queue accepted", name)
		}
		if got := mustNew(t, name).(Prioritizer).Requeue(nil); got != nil {
			t.Errorf("%s: Requeue(nil) = %v", name, got)
		}
	}
}

func TestEmptyInputs(t *testing.T) {
	for _, a := range builtinAllocators(t) {
		for name, snap := range map[string]*model.Snapshot{
			"no jobs":  snapshot([]int{8}),
			"no nodes": snapshot(nil, job("a", 1, 1, 2), job("b", 2, 2, 2)),
			"no gpus":  snapshot([]int{0, 0}, job("a", 1, 1, 2)),
			"empty":    {},
		} {
			got := allocate(t, a, snap)
			if len(got.GPUs) != 0 {
				t.Errorf("%s: %s: got %v, want nothing", a.Name(), name, got.GPUs)
			}
		}
	}
}

// TestOrderings checks each ordering against its definition: every job
// strictly before the next one.
func TestOrderings(t *testing.T) {
	before := map[ordering]func(a, b *model.Job) bool{
		byArrival: model.Before,
		byRemaining: func(a, b *model.Job) bool {
			ra, ka := remaining(a)
			rb, kb := remaining(b)
			if ka != kb {
				return ka
			}
			if ka && ra != rb {
				return ra < rb
			}
			return model.Before(a, b)
		},
		byQueue: func(a, b *model.Job) bool {
			if a.State.Queue != b.State.Queue {
				return a.State.Queue < b.State.Queue
			}
			if !a.State.QueueSince.Equal(b.State.QueueSince) {
				return a.State.QueueSince.Before(b.State.QueueSince)
			}
			return model.Before(a, b)
		},
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		snap := randomSnapshot(r, 60, 1)
		for by, less := range before {
			idx := sortedIndices(snap, by)
			if len(idx) != len(snap.Jobs) {
				t.Fatalf("ordering %d: %d of %d jobs", by, len(idx), len(snap.Jobs))
			}
			for k := 1; k < len(idx); k++ {
				if a, b := &snap.Jobs[idx[k-1]], &snap.Jobs[idx[k]]; !less(a, b) {
					t.Fatalf("ordering %d: %s placed before %s", by, a.Spec.Name, b.Spec.Name)
				}
			}
		}
	}
}
