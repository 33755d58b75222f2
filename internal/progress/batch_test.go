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
// enter the table only from used intervals, a configuration already
// measured costs no fit, a new one the model mispredicts does, the advice
// is Best's for the allocation, and following it is recognised.
func TestAdaptiveIngest(t *testing.T) {
	alloc := Allocation{Workers: 2, Nodes: 1}
	type step struct {
		r       Report
		alloc   Allocation
		configs int
		fitted  bool // a new fit (the params changed)
		advice  bool
		follows bool
	}
	steps := []step{
		{adaptive("a", 2, 1, 64, 0, 0, 0), alloc, 0, false, false, false},
		{adaptive("a", 2, 1, 64, 0, 100, 0.5), alloc, 0, false, false, false}, // warm-up
		{adaptive("a", 2, 1, 64, 0, 200, 1.0), alloc, 1, true, true, false},
		// Steady: no fit. The advice on 2 workers is the batch it runs.
		{adaptive("a", 2, 1, 64, 0, 300, 1.5), alloc, 1, false, true, true},
		// Resized to 4 over 2 nodes: a new generation, warm-up, then a new
		// configuration, which the model fitted on one cannot predict. It
		// still runs 256 on 4 workers, within an epoch of the advice: it
		// still counts as following.
		{adaptive("b", 4, 2, 64, 0, 300, 1.5), Allocation{Workers: 4, Nodes: 2}, 1, false, true, true},
		{adaptive("b", 4, 2, 64, 0, 400, 2.0), Allocation{Workers: 4, Nodes: 2}, 1, false, true, true},
		{adaptive("b", 4, 2, 64, 0, 500, 2.5), Allocation{Workers: 4, Nodes: 2}, 2, true, true, true},
	}
	var s *State
	var params *goodput.Params
	var prev *Advice
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
		if fitted := g.Params != params; fitted != st.fitted {
			t.Errorf("step %d: fitted %v, want %v", i, fitted, st.fitted)
		}
		params = g.Params
		if (out.Advice != nil) != st.advice {
			t.Fatalf("step %d: advice %+v, want one: %v", i, out.Advice, st.advice)
		}
		if out.Advice != nil {
			stats := goodput.GradStats{Sqr: 1, Var: 100}
			want := Advise(*g.Params, stats, st.r.Batch.Bounds(), st.alloc.Workers, st.alloc.Nodes)
			if prev != nil && prev.Workers == want.Workers && out.Advice.Size == prev.Size {
				// The previous advice kept: within AdviceTolerance of the best.
				was := goodput.Evaluate(*g.Params, stats, st.r.Batch.Bounds(), st.alloc.Nodes, want.Workers, prev.Size)
				best := goodput.Evaluate(*g.Params, stats, st.r.Batch.Bounds(), st.alloc.Nodes, want.Workers, want.Size)
				if was.Rate < (1-AdviceTolerance)*best.Rate {
					t.Errorf("step %d: kept advice %+v, %v of the best %+v's goodput", i, *out.Advice, was.Rate/best.Rate, want)
				}
				want = *prev
			}
			prev = out.Advice
			if *out.Advice != want || want.Workers != st.alloc.Workers ||
				want.Size != want.Workers*want.LocalSize*(want.AccumulationSteps+1) || want.LocalSize > 64 || want.Size < 128 || want.Size > 2048 {
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
	next, _, err := Ingest(s, r, at(300), Allocation{Workers: 4, Nodes: 2})
	if err != nil || !next.Goodput.Follows || len(next.Goodput.Configs) != 3 {
		t.Fatalf("following the advice: %v, %+v", err, next.Goodput)
	}
	if len(s.Goodput.Configs) != 2 {
		t.Errorf("Ingest changed the previous state's goodput: %+v", s.Goodput)
	}
	// Back to its initial batch for more than an epoch after the advice:
	// it no longer follows.
	r = adaptive("b", 4, 2, 32, 0, 700, s.Goodput.AdvisedAt+1.5)
	next, _, err = Ingest(&next, r, at(330), Allocation{Workers: 4, Nodes: 2})
	if err != nil || next.Goodput.Follows {
		t.Errorf("ignoring the advice: %v, follows %v", err, next.Goodput.Follows)
	}
}

// A new configuration the model already predicts costs no fit; it is kept
// and the params are no longer a fit of every configuration. One it
// mispredicts makes the model stale, fitted again at once the first time
// and then at most once every RefitEvery.
func TestObserveRefitsOnlyOnMisprediction(t *testing.T) {
	g := &Goodput{}
	g.observe(goodput.Obs{Nodes: 1, Replicas: 1, Atomic: 32, Iteration: truth.Iteration(1, 1, 32, 0)})
	g.refit(at(0))
	if g.Params == nil || !g.Current || g.Stale || !g.FittedAt.Equal(at(0)) {
		t.Fatalf("no fit after the first configuration: %+v", g)
	}
	p := g.Params
	o := goodput.Obs{Nodes: 1, Replicas: 1, Atomic: 64, Iteration: p.Iteration(1, 1, 64, 0) * 1.01}
	g.observe(o)
	g.refit(at(3600))
	if g.Params != p || g.Current || g.Stale || len(g.Configs) != 2 {
		t.Errorf("a configuration predicted within 1%%: fitted %v, current %v, stale %v, %d configs", g.Params != p, g.Current, g.Stale, len(g.Configs))
	}
	g.FittedAt = at(0)
	o = goodput.Obs{Nodes: 1, Replicas: 2, Atomic: 64, Iteration: p.Iteration(1, 2, 64, 0) * 1.5}
	g.observe(o)
	g.refit(at(59))
	if g.Params != p || !g.Stale || len(g.Configs) != 3 {
		t.Errorf("mispredicted by 50%% within a minute of the last fit: fitted %v, stale %v", g.Params != p, g.Stale)
	}
	g.refit(at(60))
	if g.Params == p || !g.Current || g.Stale || !g.FittedAt.Equal(at(60)) {
		t.Errorf("a minute after the last fit: fitted %v, current %v, stale %v", g.Params != p, g.Current, g.Stale)
	}
	for i := range goodput.MaxConfigs + 10 {
		g.observe(goodput.Obs{Nodes: 1, Replicas: 1, Atomic: 100 + i, Iteration: 1})
	}
	if len(g.Configs) != goodput.MaxConfigs {
		t.Errorf("%d configurations kept, want at most %d", len(g.Configs), goodput.MaxConfigs)
	}
}

// TestKeepAdvice: the batch advised before is advised again while it
// promises within AdviceTolerance of the best goodput, with its
// learning-rate scale brought up to date; otherwise the best is.
func TestKeepAdvice(t *testing.T) {
	stats := goodput.GradStats{Sqr: 1, Var: 100}
	bounds := goodput.Bounds{InitBatch: 128, MaxBatch: 2048, MaxLocal: 64}
	best := Advise(truth, stats, bounds, 4, 1)
	rate := func(size int) float64 { return goodput.Evaluate(truth, stats, bounds, 1, 4, size).Rate }
	near, far := 0, 0
	for size := 128; size <= 2048 && (near == 0 || far == 0); size += 4 {
		r := rate(size) / rate(best.Size)
		if size != best.Size && r >= 1-AdviceTolerance/2 && near == 0 {
			near = size
		}
		if r < 1-2*AdviceTolerance && far == 0 {
			far = size
		}
	}
	if near == 0 || far == 0 {
		t.Fatalf("no batch near (%d) or far (%d) from the best %+v", near, far, best)
	}
	old := func(size int) Advice {
		a, accum := bounds.DefaultSplit(size, 4)
		return Advice{Size: size, LocalSize: a, AccumulationSteps: accum, LRScale: 1, Workers: 4}
	}
	for _, c := range []struct {
		name string
		prev Advice
		want int
	}{
		{"near the best: kept", old(near), near},
		{"far from the best: replaced", old(far), best.Size},
		{"below the bounds: replaced", old(64), best.Size},
		{"above the bounds: replaced", old(4096), best.Size},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := keep(truth, stats, bounds, 1, c.prev, best)
			if got.Size != c.want {
				t.Errorf("keep(%d) = %+v, want size %d (best %d)", c.prev.Size, got, c.want, best.Size)
			}
			if got.Size == c.prev.Size && got.LRScale != stats.LRScale(got.Size, 128) {
				t.Errorf("kept advice's lrScale %v, want %v", got.LRScale, stats.LRScale(got.Size, 128))
			}
		})
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

func TestNodesFor(t *testing.T) {
	for _, c := range []struct {
		r     Report
		alloc Allocation
		want  int
	}{
		{Report{Workers: 4, Nodes: 1}, Allocation{Workers: 8, Nodes: 3}, 3},
		{Report{Workers: 8, Nodes: 2}, Allocation{Workers: 8}, 2},
		{Report{Workers: 4, Nodes: 1}, Allocation{Workers: 8}, 2},
		{Report{Workers: 4}, Allocation{Workers: 8}, 1},
	} {
		if got := nodesFor(c.r, c.alloc); got != c.want {
			t.Errorf("nodesFor(%+v, %+v) = %d, want %d", c.r, c.alloc, got, c.want)
		}
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
	if err != nil || s.Goodput == nil || s.Goodput.Params == nil || *s.Goodput.Params != *next.Goodput.Params || s.Latest.Batch != next.Latest.Batch {
		t.Errorf("round trip: %+v, %v", s, err)
	}
}
