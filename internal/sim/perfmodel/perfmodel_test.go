package perfmodel

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vodascheduler/voda/internal/sim/polluxdata"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		in, want []int
	}{
		{[]int{4}, []int{4}},
		{[]int{4, 2}, []int{2, 4}},
		{[]int{4, 1, 2}, []int{1, 2, 4}},
		{[]int{4, 2, 1}, []int{1, 4, 2}},
		{[]int{0, 3, 0, 1}, []int{1, 3}},
		{[]int{2, 2, 1, 2}, []int{1, 2, 2, 2}},
		{nil, []int{}},
	}
	for _, tt := range tests {
		got := canonical(tt.in)
		if placementKey(got) != placementKey(tt.want) {
			t.Errorf("canonical(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParametric(t *testing.T) {
	m := &Parametric{App: "x", Epochs: 10, EpochSeconds: 100, Serial: 0.1, CrossNode: 0.2, MaxGPUs: 8}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := m.Speedup(1, 1); got != 1 {
		t.Errorf("S(1) = %v", got)
	}
	if got, want := m.Speedup(4, 1), 4/1.3; math.Abs(got-want) > 1e-12 {
		t.Errorf("S(4 on 1 node) = %v, want %v", got, want)
	}
	if got, want := m.Speedup(4, 2), 4/1.3/1.2; math.Abs(got-want) > 1e-12 {
		t.Errorf("S(4 on 2 nodes) = %v, want %v", got, want)
	}
	if m.Speedup(16, 1) != m.Speedup(8, 1) {
		t.Error("speedup grows past MaxGPUs")
	}
	r, _ := m.Rate([]int{2, 0, 2}, 0, 0)
	if r != m.Speedup(4, 2) {
		t.Errorf("rate on [2 0 2] = %v, want S(4, 2 nodes)", r)
	}
	if m.EpochProgress(3) != 300 {
		t.Errorf("EpochProgress(3) = %v", m.EpochProgress(3))
	}
	for _, p := range BuiltinParametric() {
		if err := p.Validate(); err != nil {
			t.Error(err)
		}
	}
	bad := []*Parametric{{App: ""}, {App: "a", Epochs: 0, EpochSeconds: 1}, {App: "a", Epochs: 1}, {App: "a", Epochs: 1, EpochSeconds: 1, Serial: 2}, {App: "a", Epochs: 1, EpochSeconds: 1, CrossNode: 1}}
	for _, p := range bad {
		if p.Validate() == nil {
			t.Errorf("%+v validated", p)
		}
	}
}

func TestSet(t *testing.T) {
	s, err := NewSet(BuiltinParametric()[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("LINEAR"); err != nil {
		t.Errorf("case-insensitive lookup: %v", err)
	}
	if _, err := s.Get("nope"); err == nil {
		t.Error("unknown model found")
	}
	if err := s.Add(BuiltinParametric()[0]); err == nil {
		t.Error("duplicate added")
	}
}

func tracesDir(t *testing.T) string { return polluxdata.Traces(t) }

func TestPolluxProfiles(t *testing.T) {
	apps, err := LoadPolluxDir(tracesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*Profiled{}
	for _, a := range apps {
		byName[a.Name()] = a
	}
	want := map[string]int{"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80, "yolov3": 50}
	for name, epochs := range want {
		a := byName[name]
		if a == nil {
			t.Fatalf("application %s not loaded", name)
		}
		if a.DefaultEpochs() != epochs {
			t.Errorf("%s: %d epochs, want %d", name, a.DefaultEpochs(), epochs)
		}
		// Progress needed grows with the epochs.
		for e := 1; e <= epochs; e++ {
			if a.EpochProgress(e) <= a.EpochProgress(e-1) {
				t.Fatalf("%s: progress for epoch %d does not grow", name, e)
			}
		}
		// Every worker count the model admits has a positive rate, packed
		// or spread over as many nodes as workers (up to 16).
		b := a.DefaultBatch() * 4
		for k := 1; k <= a.MaxWorkers(b); k++ {
			for _, p := range [][]int{packed4(k), spread(k, 16)} {
				r, err := a.Rate(p, b, 0)
				if err != nil || !(r > 0) || math.IsInf(r, 0) {
					t.Fatalf("%s: rate on %v with batch %d = %v, %v", name, p, b, r, err)
				}
			}
		}
	}
	// A measured placement reproduces its measurement exactly.
	c := byName["cifar10"]
	step, syncT, err := c.Throughput([]int{1}, 32)
	if err != nil || step != 0.0427886962890625 || syncT != 0.0004995360016822816 {
		t.Errorf("cifar10 [1] at 32: %v %v %v, want the first row of placements.csv", step, syncT, err)
	}
	// yolov3's largest local batch is 8, as the artifact sets it.
	if atomic, accum := byName["yolov3"].Batching(64, 2); atomic != 8 || accum != 3 {
		t.Errorf("yolov3 batching of 64 on 2 = (%d, %d), want (8, 3)", atomic, accum)
	}
	// One replica above the initial batch size accumulates at least once.
	if _, accum := c.Batching(256, 1); accum < 1 {
		t.Errorf("cifar10 batch 256 on 1 GPU: accum %d, want >= 1", accum)
	}
	// Gradient statistics at a validated batch size are that file's row.
	sqr, vr := c.GradStats(128, 0)
	if sqr != 8.947307535897329 || vr != 5.066593295150894 {
		t.Errorf("cifar10 grad stats at 128, epoch 0 = %v %v", sqr, vr)
	}
}

func TestLoadPolluxErrors(t *testing.T) {
	if _, err := LoadPolluxDir(t.TempDir()); err == nil {
		t.Error("empty directory loaded")
	}
	dir := filepath.Join(t.TempDir(), "app")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "placements.csv"), []byte("placement,local_bsz,step_time,sync_time\n1,32,0.1,0.01\n"), 0o644)
	if _, err := LoadPollux(dir); err == nil {
		t.Error("profile without validation files loaded")
	}
	os.WriteFile(filepath.Join(dir, "validation-x.csv"), []byte("progress,iteration,grad_sqr,grad_var\n1,1,1,1\n"), 0o644)
	if _, err := LoadPollux(dir); err == nil {
		t.Error("validation file with a bad batch size loaded")
	}
}

func packed4(k int) []int {
	var p []int
	for k > 0 {
		n := min(k, 4)
		p = append(p, n)
		k -= n
	}
	return p
}

func spread(k, nodes int) []int {
	p := make([]int, min(k, nodes))
	for i := 0; i < k; i++ {
		p[i%len(p)]++
	}
	return p
}
