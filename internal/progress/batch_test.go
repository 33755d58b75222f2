package progress

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/vodascheduler/voda/internal/goodput"
)

// truth is the throughput model the adaptive job of these tests runs
// with: compute-heavy on one replica, synchronisation that grows with the
// replicas and costs more across nodes.
var truth = goodput.Params{AlphaC: 0.05, BetaC: 0.004, AlphaR: 0.04, BetaR: 0.004, AlphaN: 0.12, BetaN: 0.01, Gamma: 1.5}

func ptr[T any](v T) *T { return &v }

// adaptive is a report of a job with batch bounds [128, 2048], at most
// 64 samples a worker's step, running local·workers·(accum+1) samples a
// step at the step time truth predicts.
func adaptive(gen string, workers, nodes, local, accum int, steps int64, epoch float64) Report {
	return Report{Generation: gen, Workers: workers, Nodes: nodes, Steps: steps, Epoch: epoch,
		GlobalBatchSize: int64(local * workers * (accum + 1)), LocalBatchSize: int64(local),
		StepSeconds: truth.Iteration(nodes, workers, local, accum),
		GradSqNorm:  ptr(1.0), GradVariance: ptr(100.0),
		Batch: Batch{Init: 128, Max: 2048, MaxLocal: 64}}
}

// TestAdaptiveIngest follows an adaptive job: measured configurations
// enter the table only from used intervals, the advice is the batch the
// scheduler's estimates chose for the allocation (none before they chose
// one), split within the bounds, and following it is recognised.
func TestAdaptiveIngest(t *testing.T) {
	alloc := Allocation{Workers: 2, Nodes: 1, Batch: 128}
	type step struct {
		r       Report
		alloc   Allocation
		configs int
		advice  bool
		follows bool
	}
	steps := []step{
		// The scheduler has chosen no batch yet: no advice.
		{adaptive("a", 2, 1, 64, 0, 0, 0), Allocation{Workers: 2, Nodes: 1}, 0, false, false},
		{adaptive("a", 2, 1, 64, 0, 100, 0.5), alloc, 0, true, false}, // warm-up
		{adaptive("a", 2, 1, 64, 0, 200, 1.0), alloc, 1, true, true},
		{adaptive("a", 2, 1, 64, 0, 300, 1.5), alloc, 1, true, true},
		// Resized to 4 over 2 nodes with a batch of 512: a new generation,
		// warm-up, then a new configuration. It still runs 256 on 4
		// workers, within an epoch of the advice: it still counts as
		// following.
		{adaptive("b", 4, 2, 64, 0, 300, 1.5), Allocation{Workers: 4, Nodes: 2, Batch: 512}, 1, true, true},
		{adaptive("b", 4, 2, 64, 0, 400, 2.0), Allocation{Workers: 4, Nodes: 2, Batch: 512}, 1, true, true},
		{adaptive("b", 4, 2, 64, 0, 500, 2.5), Allocation{Workers: 4, Nodes: 2, Batch: 512}, 2, true, true},
	}
	var s *State
	for i, st := range steps {
		next, out, err := Ingest(s, st.r, at(float64(30*(i+1))), st.alloc)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		g := next.Goodput
		if g == nil {
			t.Fatalf("step %d: no goodput state", i)
		}
		if len(g.Configs) != st.configs {
			t.Errorf("step %d: %d configurations, want %d", i, len(g.Configs), st.configs)
		}
		if (out.Advice != nil) != st.advice {
			t.Fatalf("step %d: advice %+v, want one: %v", i, out.Advice, st.advice)
		}
		if out.Advice != nil {
			want := Advise(goodput.GradStats{Sqr: 1, Var: 100}, st.r.Batch.Bounds(), st.alloc.Workers, st.alloc.Batch)
			if *out.Advice != want || want.Workers != st.alloc.Workers || want.Size != st.alloc.Batch ||
				want.Size != want.Workers*want.LocalSize*(want.AccumulationSteps+1) || want.LocalSize > 64 {
				t.Errorf("step %d: advice %+v, want %+v within the bounds", i, *out.Advice, want)
			}
			if gain := (100.0 + 1) / (100.0/(float64(want.Size)/128) + 1); math.Abs(want.LRScale-gain) > 1e-12 {
				t.Errorf("step %d: lrScale %v, want the gain %v", i, want.LRScale, gain)
			}
		}
		if g.Follows != st.follows {
			t.Errorf("step %d: follows %v, want %v", i, g.Follows, st.follows)
		}
		s = &next
	}
	// The job applies the advice at its next epoch: it follows it.
	a := *s.Goodput.Advice
	r := adaptive("b", 4, 2, a.LocalSize, a.AccumulationSteps, 600, 3.0)
	next, _, err := Ingest(s, r, at(300), Allocation{Workers: 4, Nodes: 2, Batch: 512})
	if err != nil || !next.Goodput.Follows || len(next.Goodput.Configs) != 3 || next.Ignores() {
		t.Fatalf("following the advice: %v, %+v", err, next.Goodput)
	}
	if len(s.Goodput.Configs) != 2 {
		t.Errorf("Ingest changed the previous state's goodput: %+v", s.Goodput)
	}
	// Back to its initial batch for more than an epoch after the advice:
	// it no longer follows, and ignores the advice.
	r = adaptive("b", 4, 2, 32, 0, 700, s.Goodput.AdvisedAt+1.5)
	next, _, err = Ingest(&next, r, at(330), Allocation{Workers: 4, Nodes: 2, Batch: 512})
	if err != nil || next.Goodput.Follows || !next.Ignores() {
		t.Errorf("ignoring the advice: %v, follows %v, ignores %v", err, next.Goodput.Follows, next.Ignores())
	}
}

// With the model the scheduler fitted (Allocation.Fit), the reply
// advises the batch of most goodput for the gradient statistics the job
// reports now, on its workers and nodes, whatever the estimates chose at
// the last cycle: as the gradient noise grows, so does the advice.
func TestAdviceFromTheFit(t *testing.T) {
	alloc := Allocation{Workers: 4, Nodes: 2, Batch: 256, Fit: &truth}
	var s *State
	var sizes []int
	for i, noise := range []float64{10, 100, 1000, 10000} {
		r := adaptive("a", 4, 2, 64, 0, int64(100*i), float64(i))
		r.GradVariance = ptr(noise)
		next, out, err := Ingest(s, r, at(float64(30*(i+1))), alloc)
		if err != nil {
			t.Fatal(err)
		}
		g := goodput.GradStats{Sqr: 1, Var: noise}
		want := Advise(g, r.Batch.Bounds(), 4, goodput.Best(truth, g, r.Batch.Bounds(), 2, 4).Batch)
		if out.Advice == nil || *out.Advice != want {
			t.Fatalf("gradient variance %v: advice %+v, want %+v", noise, out.Advice, want)
		}
		sizes = append(sizes, want.Size)
		s = &next
	}
	if sizes[0] >= sizes[len(sizes)-1] || sizes[len(sizes)-1] == alloc.Batch {
		t.Errorf("advised sizes %v as the noise grows: want them to grow, past the estimates' %d", sizes, alloc.Batch)
	}
}

// The configuration table sums repeated measurements, keeps new ones in
// the order first measured, and holds at most goodput.MaxConfigs.
func TestObserveKeepsConfigurations(t *testing.T) {
	g := &Goodput{}
	o := goodput.Obs{Nodes: 1, Replicas: 1, Atomic: 32, Iteration: 0.5}
	g.observe(o)
	g.observe(goodput.Obs{Nodes: 1, Replicas: 1, Atomic: 32, Iteration: 0.7})
	g.observe(goodput.Obs{Nodes: 1, Replicas: 2, Atomic: 32, Iteration: 0.9})
	want := []Config{{Nodes: 1, Workers: 1, Local: 32, Seconds: 1.2, N: 2}, {Nodes: 1, Workers: 2, Local: 32, Seconds: 0.9, N: 1}}
	if len(g.Configs) != 2 || g.Configs[0] != want[0] || g.Configs[1] != want[1] {
		t.Errorf("configs %+v, want %+v", g.Configs, want)
	}
	for i := range goodput.MaxConfigs + 10 {
		g.observe(goodput.Obs{Nodes: 1, Replicas: 1, Atomic: 100 + i, Iteration: 1})
	}
	if len(g.Configs) != goodput.MaxConfigs {
		t.Errorf("%d configurations kept, want at most %d", len(g.Configs), goodput.MaxConfigs)
	}
}

// TestAdvise: the advice runs the chosen batch in local batches within
// MaxLocal, accumulating the rest, and scales the learning rate by the
// batch's efficiency gain.
func TestAdvise(t *testing.T) {
	stats := goodput.GradStats{Sqr: 1, Var: 100}
	bounds := goodput.Bounds{InitBatch: 128, MaxBatch: 2048, MaxLocal: 64}
	for _, c := range []struct {
		workers, batch, local, accum int
	}{
		{1, 128, 64, 1},
		{2, 128, 64, 0},
		{4, 1024, 64, 3},
		{8, 2048, 64, 3},
	} {
		a := Advise(stats, bounds, c.workers, c.batch)
		if a.Size != c.batch || a.LocalSize != c.local || a.AccumulationSteps != c.accum || a.Workers != c.workers ||
			a.LRScale != stats.LRScale(c.batch, 128) {
			t.Errorf("Advise(%d workers, %d) = %+v, want local %d, accumulation %d", c.workers, c.batch, a, c.local, c.accum)
		}
	}
}

// A fixed-batch job (no bounds, or maxBatchSize equal to the initial
// one) keeps no goodput state and gets no advice.
func TestFixedBatchGetsNoAdvice(t *testing.T) {
	for _, b := range []Batch{{}, {Init: 128}, {Init: 128, Max: 128}} {
		var s *State
		for i := range 4 {
			r := adaptive("a", 2, 1, 64, 0, int64(100*i), float64(i)/2)
			r.Batch = b
			next, out, err := Ingest(s, r, at(float64(30*i)), Allocation{Workers: 2})
			if err != nil || out.Advice != nil || next.Goodput != nil {
				t.Fatalf("batch %+v, report %d: %v, advice %+v, goodput %+v", b, i, err, out.Advice, next.Goodput)
			}
			s = &next
		}
	}
}

func TestMeasure(t *testing.T) {
	for _, c := range []struct {
		name  string
		r     Report
		alloc Allocation
		want  goodput.Obs
		ok    bool
	}{
		{"everything reported", Report{Workers: 4, Nodes: 2, Steps: 20, GlobalBatchSize: 512, LocalBatchSize: 64, StepSeconds: 0.5, Batch: Batch{Accumulation: ptr[int64](1)}},
			Allocation{}, goodput.Obs{Nodes: 2, Replicas: 4, Atomic: 64, Accum: 1, Iteration: 0.5}, true},
		{"accumulation derived", Report{Workers: 4, Nodes: 1, Steps: 20, GlobalBatchSize: 768, LocalBatchSize: 64, StepSeconds: 0.5},
			Allocation{}, goodput.Obs{Nodes: 1, Replicas: 4, Atomic: 64, Accum: 2, Iteration: 0.5}, true},
		{"inconsistent: no accumulation", Report{Workers: 4, Nodes: 1, Steps: 20, GlobalBatchSize: 700, LocalBatchSize: 64, StepSeconds: 0.5},
			Allocation{}, goodput.Obs{Nodes: 1, Replicas: 4, Atomic: 64, Iteration: 0.5}, true},
		{"step time from the interval, nodes from the placement", Report{Workers: 4, Steps: 20, GlobalBatchSize: 256},
			Allocation{Workers: 4, Nodes: 2}, goodput.Obs{Nodes: 2, Replicas: 4, Atomic: 64, Iteration: 3}, true},
		{"another allocation's placement: one node", Report{Workers: 4, Steps: 20, GlobalBatchSize: 256},
			Allocation{Workers: 2, Nodes: 2}, goodput.Obs{Nodes: 1, Replicas: 4, Atomic: 64, Iteration: 3}, true},
		{"no batch", Report{Workers: 4, Nodes: 1, Steps: 20, StepSeconds: 0.5}, Allocation{}, goodput.Obs{}, false},
		{"no steps and no step time", Report{Workers: 4, Nodes: 1, Steps: 10, GlobalBatchSize: 256}, Allocation{}, goodput.Obs{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := measure(c.r, Report{Steps: 10}, 30, c.alloc)
			if ok != c.ok || (ok && got != c.want) {
				t.Errorf("measure = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

// A state stored before goodput existed still decodes; a damaged goodput
// part is dropped, not the state.
func TestDecodeGoodput(t *testing.T) {
	old := `{"latest":{"generation":"g","workers":2,"steps":10,"epoch":1},"at":"2026-11-23T10:00:00Z","generationStart":"2026-11-23T10:00:00Z","generationReports":2,"generations":1,"measured":{}}`
	s, err := Decode([]byte(old))
	if err != nil || s.Goodput != nil || s.Latest.Batch.Adaptive() {
		t.Fatalf("old state: %+v, %v", s, err)
	}
	var st State
	st.Goodput = &Goodput{Configs: []Config{{Nodes: 1, Workers: 2, Local: 0, Seconds: 1, N: 1}}}
	data, _ := json.Marshal(st)
	if s, err = Decode(data); err != nil || s.Goodput != nil {
		t.Errorf("damaged goodput: %+v, %v", s, err)
	}
	next, _, _ := Ingest(nil, adaptive("a", 2, 1, 64, 0, 0, 0), at(0), Allocation{Workers: 2})
	next, _, _ = Ingest(&next, adaptive("a", 2, 1, 64, 0, 100, 0.5), at(30), Allocation{Workers: 2})
	next, _, _ = Ingest(&next, adaptive("a", 2, 1, 64, 0, 200, 1), at(60), Allocation{Workers: 2})
	data, _ = json.Marshal(next)
	s, err = Decode(data)
	if err != nil || s.Goodput == nil || len(s.Goodput.Configs) != 1 || s.Goodput.Configs[0] != next.Goodput.Configs[0] || s.Latest.Batch != next.Latest.Batch {
		t.Errorf("round trip: %+v, %v", s, err)
	}
	// A state stored when the model was fitted here still decodes; the
	// fit is the estimator's now.
	fitted := `{"latest":{"generation":"g","workers":2,"steps":10,"epoch":1},"measured":{},"goodput":{"configs":[{"nodes":1,"workers":2,"local":64,"accum":0,"seconds":0.5,"n":1}],"params":{"AlphaC":0.1,"BetaC":0.01,"AlphaR":0,"BetaR":0,"AlphaN":0,"BetaN":0,"Gamma":1.5},"fittedAt":"2026-11-23T10:00:00Z","current":true}}`
	if s, err = Decode([]byte(fitted)); err != nil || s.Goodput == nil || len(s.Goodput.Configs) != 1 {
		t.Errorf("a state with a stored fit: %+v, %v", s, err)
	}
}
