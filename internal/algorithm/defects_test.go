package algorithm

// One test per allocator defect of the original Voda listed in
// shared/notes/voda-original.md ("Defects found in the original").

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/vodascheduler/voda/internal/model"
)

// The original crashed on a nil dereference in five algorithms whenever
// two jobs were ready (job info never reached the allocator).
func TestDefect_TwoReadyJobsNoNilCrash(t *testing.T) {
	snap := snapshot([]int{8}, job("a", 1, 2, 4, submitted(0)), job("b", 1, 2, 4, submitted(1)))
	for _, a := range builtinAllocators(t) {
		got := allocate(t, a, snap)
		if got.GPUs["a"] == 0 || got.GPUs["b"] == 0 {
			t.Errorf("%s: %v: both jobs fit, both should run", a.Name(), got.GPUs)
		}
	}
}

// The original ElasticSRJF grew a min = max job past its max.
func TestDefect_ElasticSRJFNeverExceedsMax(t *testing.T) {
	snap := snapshot([]int{8, 8},
		job("fixed", 2, 2, 2, rem(10)),
		job("other", 1, 1, 3, rem(20)))
	for _, a := range builtinAllocators(t) {
		got := allocate(t, a, snap)
		if got.GPUs["fixed"] != 2 || got.GPUs["other"] > 3 {
			t.Errorf("%s: %v: want fixed at exactly 2, other at most 3", a.Name(), got.GPUs)
		}
	}
}

// The original ElasticFIFO gave single GPUs to a job that did not get its
// min.
func TestDefect_ElasticFIFONoGPUsWithoutMin(t *testing.T) {
	snap := snapshot([]int{6},
		job("first", 4, 4, 4, submitted(0)),
		job("wide", 3, 3, 8, submitted(1)),
		job("small", 1, 1, 1, submitted(2)))
	for _, name := range []string{NameElasticFIFO, NameElasticSRJF} {
		got := allocate(t, mustNew(t, name), snap)
		want := map[string]int{"first": 4, "small": 1}
		if d := diffGPUs(want, got.GPUs); d != "" {
			t.Errorf("%s (-want,+got):\n%s", name, d)
		}
	}
}

// The original FfDL ignored min. Here a (min 2) alone is worth 1.95, b
// alone 1; ignoring min, a=1 + b=1 = 2 would win.
func TestDefect_FfDLRespectsMin(t *testing.T) {
	snap := snapshot([]int{2}, job("a", 2, 2, 2, curve(0, 1, 1.95)), job("b", 1, 1, 1))
	got := allocate(t, mustNew(t, NameFfDL), snap)
	if d := diffGPUs(map[string]int{"a": 2}, got.GPUs); d != "" {
		t.Errorf("DP (-want,+got):\n%s", d)
	}
	// The greedy fallback: b's 1 per GPU beats a's 0.975; a's min of 2
	// then no longer fits and a gets nothing, not 1.
	order := sortedIndices(snap, byArrival)
	greedy := ffdlGreedy(mustInput(t, snap), order, newCurves(snap))
	if d := diffGPUs(map[string]int{"b": 1}, gpusByName(snap, greedy)); d != "" {
		t.Errorf("greedy (-want,+got):\n%s", d)
	}
}

// The original AFS-L ignored min.
func TestDefect_AFSLRespectsMin(t *testing.T) {
	// a takes its min of 2 (shortest); 1 GPU left: b's min of 2 does not
	// fit, so b gets nothing rather than 1; c takes the last one.
	snap := snapshot([]int{3},
		job("a", 2, 2, 2, rem(10)),
		job("b", 2, 2, 4, rem(20)),
		job("c", 1, 1, 1, rem(30)))
	got := allocate(t, mustNew(t, NameAFSL), snap)
	if d := diffGPUs(map[string]int{"a": 2, "c": 1}, got.GPUs); d != "" {
		t.Errorf("AFS-L (-want,+got):\n%s", d)
	}
}

// The original AFS-L computed the longer job's gain at the shorter job's
// worker count. Here, at the third GPU, short s holds 2 (gain 1/2 = 0.5)
// and long l holds 0 (gain 1): l wins. At s's count, l's gain would be
// (2.7-1.9)/2.7 = 0.30 and s would take all three.
func TestDefect_AFSLUsesOwnWorkerCount(t *testing.T) {
	snap := snapshot([]int{3},
		job("s", 1, 1, 4, rem(100)),
		job("l", 1, 1, 4, rem(1000), curve(0, 1, 1.9, 2.7, 3.4)))
	got := allocate(t, mustNew(t, NameAFSL), snap)
	if d := diffGPUs(map[string]int{"s": 2, "l": 1}, got.GPUs); d != "" {
		t.Errorf("AFS-L (-want,+got):\n%s", d)
	}
}

// The original's speedup tables stopped at 33 GPUs. A curve of 65 entries
// must be read up to S(64).
func TestDefect_SpeedupBeyond33GPUs(t *testing.T) {
	linear := make([]float64, 65)
	for k := range linear {
		linear[k] = float64(k)
	}
	for _, name := range []string{NameElasticTiresias, NameFfDL, NameAFSL} {
		got := allocate(t, mustNew(t, name), snapshot([]int{32, 32}, job("big", 1, 1, 64, curve(linear...))))
		if got.GPUs["big"] != 64 {
			t.Errorf("%s: big got %d GPUs, want 64", name, got.GPUs["big"])
		}
	}
	// FfDL chooses between two 64-GPU options by their S(64) alone.
	steep := make([]float64, 65)
	for k := range steep {
		steep[k] = float64(min(k, 30))
	}
	steep[64] = 40
	gentle := make([]float64, 65)
	for k := range gentle {
		gentle[k] = float64(k) * 39 / 64
	}
	snap := snapshot([]int{64}, job("steep", 64, 64, 64, curve(steep...)), job("gentle", 64, 64, 64, curve(gentle...)))
	got := allocate(t, mustNew(t, NameFfDL), snap)
	if d := diffGPUs(map[string]int{"steep": 64}, got.GPUs); d != "" {
		t.Errorf("FfDL (-want,+got):\n%s", d)
	}
}

// The original broke ties by Go map order. Identical jobs, listed in any
// order, must get the same answer.
func TestDefect_DeterministicTies(t *testing.T) {
	var jobs []model.Job
	for _, name := range []string{"f", "b", "d", "a", "e", "c"} {
		j := job(name, 2, 2, 3, rem(500), queue(1, 7), curve(0, 1, 1.8, 2.5))
		jobs = append(jobs, j)
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, a := range builtinAllocators(t) {
		var first model.Allocation
		for n := range 60 {
			perm := r.Perm(len(jobs))
			shuffled := make([]model.Job, len(jobs))
			for i, p := range perm {
				shuffled[i] = jobs[p]
			}
			got := allocate(t, a, snapshot([]int{4, 3}, shuffled...))
			if n == 0 {
				first = got
				if want := []string{"a", "b", "c", "d", "e", "f"}; !reflect.DeepEqual(got.Order, want) {
					t.Errorf("%s: Order (-want,+got):\n%s", a.Name(), diffOrder(want, got.Order))
				}
				continue
			}
			if !reflect.DeepEqual(first, got) {
				t.Fatalf("%s: permutation %v changed the answer: %v vs %v", a.Name(), perm, first, got)
			}
		}
	}
}
