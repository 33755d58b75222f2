package goodput

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// truth is a model with every part visible: compute that grows with the
// batch, synchronisation that grows with replicas and jumps across nodes.
var truth = Params{AlphaC: 0.05, BetaC: 0.002, AlphaR: 0.02, BetaR: 0.001, AlphaN: 0.15, BetaN: 0.004, Gamma: 2}

func configs(maxReplicas int) []Obs {
	var out []Obs
	for _, r := range []int{1, 2, 3, 4, 8, 12, 16, 32} {
		if r > maxReplicas {
			continue
		}
		for _, a := range []int{16, 64, 128} {
			for _, accum := range []int{0, 1} {
				o := Obs{Nodes: (r + 3) / 4, Replicas: r, Atomic: a, Accum: accum}
				o.Iteration = truth.Predict(o)
				out = append(out, o)
			}
		}
	}
	return out
}

func relErr(p Params, o Obs) float64 { return math.Abs(p.Predict(o)-o.Iteration) / o.Iteration }

func TestFit(t *testing.T) {
	all := configs(32)
	for _, tc := range []struct {
		name    string
		train   []Obs
		prior   Params
		maxErr  float64 // on every configuration
		trainOK float64 // on the training configurations
	}{
		{name: "every configuration", train: all, prior: Generic(all[0]), maxErr: 0.01, trainOK: 0.01},
		{name: "up to 16 replicas predicts 32", train: configs(16), prior: Generic(all[0]), maxErr: 0.05, trainOK: 0.02},
		{name: "prior already right", train: configs(4), prior: truth, maxErr: 0.01, trainOK: 0.01},
		{name: "one GPU keeps the prior's synchronisation", train: configs(1), prior: truth, maxErr: 0.01, trainOK: 0.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Fit(tc.train, tc.prior)
			if !p.Valid() {
				t.Fatalf("fit %+v is not valid", p)
			}
			for _, o := range tc.train {
				if e := relErr(p, o); e > tc.trainOK {
					t.Errorf("training config %+v: error %.3f above %.3f", o, e, tc.trainOK)
				}
			}
			for _, o := range all {
				if e := relErr(p, o); e > tc.maxErr {
					t.Errorf("config %+v: error %.3f above %.3f (fit %+v)", o, e, tc.maxErr, p)
				}
			}
		})
	}
}

func TestFitWithoutData(t *testing.T) {
	prior := Generic(Obs{Nodes: 1, Replicas: 1, Atomic: 32, Iteration: 0.5})
	if got := Fit(nil, prior); got != prior {
		t.Errorf("no observations: %+v, want the prior %+v", got, prior)
	}
	bad := []Obs{{Nodes: 0, Replicas: 1, Atomic: 1, Iteration: 1}, {Nodes: 1, Replicas: 1, Atomic: 1, Iteration: math.NaN()},
		{Nodes: 2, Replicas: 1, Atomic: 1, Iteration: 1}, {Nodes: 1, Replicas: 1, Atomic: 1, Iteration: math.Inf(1)}}
	if got := Fit(bad, prior); got != prior {
		t.Errorf("only invalid observations: %+v, want the prior", got)
	}
	if got := Fit(configs(2), Params{}); got != (Params{}) {
		t.Errorf("invalid prior: %+v, want it back", got)
	}
}

func TestGain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		g           GradStats
		batch, init int
		want        float64
	}{
		{"unknown", GradStats{}, 1024, 128, 1},
		{"at the initial batch", GradStats{Sqr: 1, Var: 3}, 128, 128, 1},
		{"pure noise scales linearly", GradStats{Sqr: 0, Var: 5}, 512, 128, 4},
		{"no noise gains nothing", GradStats{Sqr: 2, Var: 0}, 512, 128, 1},
		{"mixed", GradStats{Sqr: 1, Var: 3}, 256, 128, 4 / 2.5},
		{"negative stats are unknown", GradStats{Sqr: -1, Var: 3}, 256, 128, 1},
		{"no initial batch", GradStats{Sqr: 1, Var: 3}, 256, 0, 1},
	} {
		if got := tc.g.Gain(tc.batch, tc.init); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: Gain = %g, want %g", tc.name, got, tc.want)
		}
	}
}

func TestBest(t *testing.T) {
	b := Bounds{InitBatch: 128, MaxBatch: 4096, MinLocal: 16, MaxLocal: 256}
	noisy := GradStats{Sqr: 1, Var: 100}
	clean := GradStats{Sqr: 1, Var: 0.01}
	for _, tc := range []struct {
		name            string
		g               GradStats
		b               Bounds
		nodes, replicas int
		check           func(c Choice) string
	}{
		{"noisy gradients take a large batch", noisy, b, 2, 8, func(c Choice) string {
			if c.Batch < 1024 {
				return "want at least 1024"
			}
			return ""
		}},
		{"clean gradients stay near the initial batch", clean, b, 1, 1, func(c Choice) string {
			if c.Batch > 256 {
				return "want at most 256"
			}
			return ""
		}},
		{"at least min local per replica", clean, b, 4, 16, func(c Choice) string {
			if c.Batch < 16*16 {
				return "want at least 256"
			}
			return ""
		}},
		{"too wide for the largest batch runs it", noisy, Bounds{InitBatch: 128, MaxBatch: 512, MinLocal: 64}, 4, 16, func(c Choice) string {
			if c.Batch > 512 {
				return "want at most 512"
			}
			return ""
		}},
		{"fixed", noisy, Bounds{InitBatch: 128, MaxBatch: 4096, MaxLocal: 64, Fixed: 1000}, 1, 4, func(c Choice) string {
			if c.Batch != 1008 || c.Atomic != 63 || c.Accum != 3 {
				return "want 1000 split as 4 replicas x 4 steps x 63 = 1008"
			}
			return ""
		}},
		{"not adaptive runs the initial batch", noisy, Bounds{InitBatch: 100}, 1, 3, func(c Choice) string {
			if c.Batch != 102 || c.Accum != 0 {
				return "want 3 x 34"
			}
			return ""
		}},
	} {
		c := Best(truth, tc.g, tc.b, tc.nodes, tc.replicas)
		if msg := tc.check(c); msg != "" {
			t.Errorf("%s: %+v: %s", tc.name, c, msg)
		}
		if tc.b.MaxLocal > 0 && c.Atomic > tc.b.MaxLocal {
			t.Errorf("%s: atomic %d above max local %d", tc.name, c.Atomic, tc.b.MaxLocal)
		}
		if want := tc.g.Gain(c.Batch, tc.b.InitBatch) / truth.Iteration(tc.nodes, tc.replicas, c.Atomic, c.Accum); math.Abs(c.Rate-want) > 1e-12*want {
			t.Errorf("%s: rate %g, want gain/iteration %g", tc.name, c.Rate, want)
		}
		// No candidate between the bounds does better.
		if tc.b.Adaptive() {
			lo := max(tc.b.InitBatch, tc.b.MinLocal*tc.replicas)
			for batch := lo; batch <= tc.b.MaxBatch; batch += max(1, (tc.b.MaxBatch-lo)/200) {
				if o := Evaluate(truth, tc.g, tc.b, tc.nodes, tc.replicas, batch); o.Rate > c.Rate*1.02 {
					t.Errorf("%s: batch %d makes %g, 2%% above the choice %+v", tc.name, batch, o.Rate, c)
				}
			}
		}
	}
}

func TestCurve(t *testing.T) {
	b := Bounds{InitBatch: 128, MaxBatch: 4096, MinLocal: 16, MaxLocal: 256}
	speedup, batch, rate1 := Curve(truth, GradStats{Sqr: 1, Var: 50}, b, 4, 16)
	if len(speedup) != 17 || len(batch) != 17 {
		t.Fatalf("curve lengths %d, %d: want 17", len(speedup), len(batch))
	}
	if speedup[0] != 0 || speedup[1] != 1 || batch[0] != 0 {
		t.Errorf("curve starts %v / %v", speedup[:2], batch[:1])
	}
	if one := Best(truth, GradStats{Sqr: 1, Var: 50}, b, 1, 1); rate1 != one.Rate || batch[1] != one.Batch {
		t.Errorf("rate1 %g batch %d, want Best on one GPU %+v", rate1, batch[1], one)
	}
	for k := 2; k <= 16; k++ {
		c := Best(truth, GradStats{Sqr: 1, Var: 50}, b, (k+3)/4, k)
		if math.Abs(speedup[k]-c.Rate/rate1) > 1e-12 || batch[k] != c.Batch {
			t.Errorf("k=%d: speedup %g batch %d, want %g and %d", k, speedup[k], batch[k], c.Rate/rate1, c.Batch)
		}
	}
	// Crossing to a second node costs: 5 GPUs is worse per GPU than 4.
	if speedup[5]/5 >= speedup[4]/4 {
		t.Errorf("speedup per GPU at 5 (%g) not below 4 (%g)", speedup[5]/5, speedup[4]/4)
	}
	if s, bt, r := Curve(Params{}, GradStats{}, b, 4, 8); s != nil || bt != nil || r != 0 {
		t.Errorf("a model without compute time gives a curve %v", s)
	}
}

func TestEstimator(t *testing.T) {
	e := NewEstimator()
	if _, ok := e.Params("j1"); ok {
		t.Fatal("unknown job has params")
	}
	obs := configs(16)
	e.Observe("j1", "app", obs[0])
	p1, ok := e.Params("j1")
	if !ok {
		t.Fatal("measured job has no params")
	}
	// The same configuration again refits nothing.
	e.Observe("j1", "app", obs[0])
	if p, _ := e.Params("j1"); p != p1 {
		t.Errorf("a repeated configuration changed the fit")
	}
	for _, o := range obs[1:] {
		e.Observe("j1", "app", o)
	}
	p, _ := e.Params("j1")
	for _, o := range configs(32) {
		if err := relErr(p, o); err > 0.05 {
			t.Errorf("after ramping to 16: config %+v error %.3f", o, err)
		}
	}
	// A new job of the application starts from the application's fit.
	pa, ok := e.JobParams("j2", "app")
	if !ok || relErr(pa, obs[5]) > 0.05 {
		t.Errorf("new job of a known application: %+v, %v", pa, ok)
	}
	e.Forget("j1")
	if _, ok := e.AppParams("app"); !ok {
		t.Error("the application forgot its finished job's measurements")
	}
	acc := e.Accuracy()
	if len(acc) != 1 || acc[0].App != "app" {
		t.Fatalf("accuracy %+v", acc)
	}
	if acc[0].NewPlacement.N == 0 || acc[0].NewBatch.N == 0 {
		t.Errorf("no new placements or batches scored: %+v", acc[0])
	}
	// Once ramped, new configurations are predicted well.
	e.Observe("j2", "app", Obs{Nodes: 8, Replicas: 32, Atomic: 100, Accum: 0, Iteration: truth.Iteration(8, 32, 100, 0)})
	if got := e.Accuracy()[0].NewPlacement.Max; got > 1 {
		t.Errorf("max error %g", got)
	}
}

func TestEstimatorBounded(t *testing.T) {
	e := NewEstimator()
	for a := 1; a <= MaxConfigs+50; a++ {
		e.Observe("j", "app", Obs{Nodes: 1, Replicas: 1, Atomic: a, Iteration: truth.Iteration(1, 1, a, 0)})
	}
	if n := len(e.jobs["j"].t.keys); n != MaxConfigs {
		t.Errorf("job kept %d configurations, want %d", n, MaxConfigs)
	}
	if n := len(e.apps["app"].t.keys); n != MaxConfigs {
		t.Errorf("application kept %d configurations, want %d", n, MaxConfigs)
	}
}

func FuzzFit(f *testing.F) {
	f.Add(1, 1, 32, 0, 0.5, 2, 4, 64, 1, 0.9)
	f.Add(0, -1, 0, -5, -1.0, 1000, 1, 1, 0, 1e300)
	f.Fuzz(func(t *testing.T, n1, r1, a1, c1 int, s1 float64, n2, r2, a2, c2 int, s2 float64) {
		obs := []Obs{{n1, r1, a1, c1, s1}, {n2, r2, a2, c2, s2}}
		prior := Generic(Obs{Nodes: 1, Replicas: 1, Atomic: 32, Iteration: 0.5})
		p := Fit(obs, prior)
		if !p.Valid() {
			t.Fatalf("fit %+v of %+v is not valid", p, obs)
		}
		speedup, _, _ := Curve(p, GradStats{Sqr: 1, Var: 1}, Bounds{InitBatch: 32, MaxBatch: 1024, MinLocal: 8, MaxLocal: 64}, 4, 8)
		for k, s := range speedup {
			if math.IsNaN(s) || s < 0 {
				t.Fatalf("speedup[%d] = %g", k, s)
			}
		}
	})
}

func BenchmarkFit(b *testing.B) {
	obs := configs(16)
	prior := Generic(obs[0])
	b.ReportAllocs()
	for b.Loop() {
		Fit(obs, prior)
	}
}

func BenchmarkCurve64(b *testing.B) {
	bounds := Bounds{InitBatch: 128, MaxBatch: 4096, MinLocal: 16, MaxLocal: 256}
	b.ReportAllocs()
	for b.Loop() {
		Curve(truth, GradStats{Sqr: 1, Var: 50}, bounds, 4, 64)
	}
}

// BenchmarkBest is what the server adds to each adaptive job's progress
// report when it answers with the batch for the report's statistics
// (progress.Allocation.Fit).
func BenchmarkBest(b *testing.B) {
	bounds := Bounds{InitBatch: 128, MaxBatch: 4096, MinLocal: 16, MaxLocal: 256}
	b.ReportAllocs()
	for b.Loop() {
		Best(truth, GradStats{Sqr: 1, Var: 50}, bounds, 4, 16)
	}
}

// Clamp keeps a batch within what a placement allows: at least the
// initial batch and MinLocal a replica, at most MaxBatch; Fixed wins.
func TestClamp(t *testing.T) {
	b := Bounds{InitBatch: 128, MaxBatch: 4096, MinLocal: 32, MaxLocal: 1024}
	for _, c := range []struct{ batch, replicas, want int }{
		{100, 1, 128},   // below the initial batch
		{800, 4, 800},   // within
		{200, 16, 512},  // below 32 a replica
		{9000, 4, 4096}, // above MaxBatch
		{800, 0, 800},   // no replicas counts as one
		{64, 200, 4096}, // MinLocal·replicas past MaxBatch: MaxBatch
	} {
		if got := b.Clamp(c.batch, c.replicas); got != c.want {
			t.Errorf("Clamp(%d, %d) = %d, want %d", c.batch, c.replicas, got, c.want)
		}
	}
	if got := (Bounds{InitBatch: 128, MaxBatch: 4096, Fixed: 256}).Clamp(1000, 4); got != 256 {
		t.Errorf("a fixed batch clamps to %d, want 256", got)
	}
}

// The split of an adaptive batch stays within what a report may carry
// (issue 30): at most MaxAccum accumulation steps and MaxBatch samples,
// whatever the batch asked for; Largest is the batch MaxLocal allows.
func TestSplitWithinReportLimits(t *testing.T) {
	hostile := Bounds{InitBatch: 4, MaxBatch: 1e9, MaxLocal: 1}
	for _, c := range []struct {
		name                   string
		b                      Bounds
		batch, replicas        int
		largest, atomic, accum int
	}{
		{"issue 30 on 4", hostile, 1e9, 4, 4 * (MaxAccum + 1), 1, MaxAccum},
		{"issue 30 on 3, MaxBatch not a multiple", hostile, 1e9, 3, 3 * (MaxAccum + 1), 1, MaxAccum},
		{"below the accumulation limit", hostile, 400, 4, 4 * (MaxAccum + 1), 1, 99},
		{"replicas do not divide MaxBatch, one a step", Bounds{InitBatch: 2, MaxBatch: 10, MaxLocal: 1}, 10, 3, 10, 1, 2},
		{"replicas do not divide MaxBatch", Bounds{InitBatch: 2, MaxBatch: 10, MaxLocal: 2}, 10, 3, 10, 1, 1},
		{"more replicas than MaxBatch: one sample each", Bounds{InitBatch: 2, MaxBatch: 10, MaxLocal: 4}, 10, 16, 10, 1, 0},
		{"no MaxLocal", Bounds{InitBatch: 4, MaxBatch: 1e9}, 1e9, 3, 1e9, 333333333, 0},
		{"fixed batches are split as they are", Bounds{InitBatch: 4, MaxBatch: 1e9, MaxLocal: 1, Fixed: 1e9}, 1e9, 4, 4 * (MaxAccum + 1), 1, 249999999},
	} {
		if got := c.b.Largest(c.replicas); got != c.largest {
			t.Errorf("%s: Largest(%d) = %d, want %d", c.name, c.replicas, got, c.largest)
		}
		atomic, accum := c.b.DefaultSplit(c.batch, c.replicas)
		if atomic != c.atomic || accum != c.accum {
			t.Errorf("%s: DefaultSplit(%d, %d) = %d x %d, want %d x %d", c.name, c.batch, c.replicas, atomic, accum+1, c.atomic, c.accum+1)
		}
		if size := c.replicas * (accum + 1) * atomic; c.b.Fixed == 0 && size > max(c.b.MaxBatch, c.replicas) {
			t.Errorf("%s: split runs %d samples, above MaxBatch %d", c.name, size, c.b.MaxBatch)
		}
	}
}

// The gain, and so the learning-rate scale, is at most MaxGain and the
// batch's ratio to the initial one, however noisy the gradient.
func TestGainBounded(t *testing.T) {
	for _, c := range []struct {
		g           GradStats
		batch, init int
		want        float64
	}{
		{GradStats{Sqr: 1e-30, Var: 1e30}, 1e9, 4, MaxGain},
		{GradStats{Sqr: 0, Var: 1e30}, 1000, 4, 250},
		{GradStats{Sqr: 0, Var: 3}, 7, 3, 7.0 / 3},
		{GradStats{Sqr: 1, Var: 0}, 1e9, 1, 1},
	} {
		if got := c.g.LRScale(c.batch, c.init); got != c.want {
			t.Errorf("LRScale(%+v, %d over %d) = %v, want %v", c.g, c.batch, c.init, got, c.want)
		}
	}
}

// A Table gives Best's choices to the last bit, for any gradient
// statistics (unknown, no noise, no signal, anything between), bounds
// (adaptive, fixed, pinned, too narrow to choose) and packing: its curve
// is Best's on each worker count, and its Best is Best's on any
// placement, packed, spread or beyond its curve.
func TestTableAgreesWithBest(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 4))
	stats := []GradStats{{}, {Sqr: 1}, {Var: 3}, {Sqr: 1, Var: 50}, {Sqr: 1e-9, Var: 1e9}, {Sqr: -1, Var: 2}}
	for i := range 300 {
		p := Params{AlphaC: r.Float64() * 0.1, BetaC: r.Float64() * 0.01, AlphaR: r.Float64() * 0.05, BetaR: r.Float64() * 0.002,
			AlphaN: r.Float64() * 0.3, BetaN: r.Float64() * 0.01, Gamma: 1 + r.Float64()*(MaxGamma-1)}
		b := Bounds{InitBatch: 1 + r.IntN(256), MaxBatch: r.IntN(8192), MinLocal: r.IntN(64), MaxLocal: r.IntN(512)}
		if i%10 == 0 {
			b.Fixed = 1 + r.IntN(1024)
		}
		g := stats[i%len(stats)]
		if i%len(stats) == 0 {
			g = GradStats{Sqr: r.Float64(), Var: r.Float64() * 100}
		}
		perNode, limit := 1+r.IntN(8), 1+r.IntN(64)
		table := NewTable(p, b, perNode, limit)
		speedup, batch, rate1 := table.Curve(g)
		one := Best(p, g, b, 1, 1)
		if !(one.Rate > 0) || math.IsInf(one.Rate, 1) {
			if speedup != nil || batch != nil || rate1 != 0 {
				t.Fatalf("case %d: no progress on one GPU, curve %v", i, speedup)
			}
			continue
		}
		if len(speedup) != limit+1 || len(batch) != limit+1 || rate1 != one.Rate {
			t.Fatalf("case %d: curve to %d, rate1 %v; want to %d and %v", i, len(speedup)-1, rate1, limit, one.Rate)
		}
		for k := 1; k <= limit; k++ {
			nodes := (k + perNode - 1) / perNode
			want := Best(p, g, b, nodes, k)
			if speedup[k] != want.Rate/one.Rate || batch[k] != want.Batch {
				t.Fatalf("case %d, %d workers: speedup %v batch %d; Best gives %v and %d", i, k, speedup[k], batch[k], want.Rate/one.Rate, want.Batch)
			}
			// Packed, spread (twice: the second from the spare row), and
			// packed again.
			for _, n := range []int{nodes, min(nodes+1, k), min(nodes+1, k), nodes} {
				if got, want := table.Best(g, n, k), Best(p, g, b, n, k); got != want {
					t.Fatalf("case %d, %d workers on %d nodes: table %+v, Best %+v", i, k, n, got, want)
				}
			}
		}
		for _, pl := range [][2]int{{limit, limit + 1}, {0, 0}, {1, 3 * limit}} {
			if got, want := table.Best(g, pl[0], pl[1]), Best(p, g, b, pl[0], pl[1]); got != want {
				t.Fatalf("case %d, %d workers on %d nodes, beyond the table: %+v, Best %+v", i, pl[1], pl[0], got, want)
			}
		}
	}
}

// BenchmarkTableCurve64 is a job's curve for new gradient statistics
// (each epoch) from its table, against BenchmarkCurve64's from nothing.
func BenchmarkTableCurve64(b *testing.B) {
	table := NewTable(truth, Bounds{InitBatch: 128, MaxBatch: 4096, MinLocal: 16, MaxLocal: 256}, 4, 64)
	b.ReportAllocs()
	for b.Loop() {
		table.Curve(GradStats{Sqr: 1, Var: 50})
	}
}

// solveDamped skips mat.Cholesky's condition estimate only where it
// cannot matter: its steps are mat.Cholesky's to the last bit, whatever
// the scale of the system and the damping, systems whose data say nothing
// of a parameter included.
func TestSolveDampedAgreesWithCholesky(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 5))
	f := &fitter{m: mat.NewSymDense(nParams, nil)}
	for i := range 500 {
		var jtj [nParams * nParams]float64
		var g [nParams]float64
		scale := math.Pow(10, float64(r.IntN(12)-4))
		for range 1 + r.IntN(20) {
			var d [nParams]float64
			for a := range d {
				d[a] = r.NormFloat64() * scale
			}
			if i%7 == 0 {
				d[6] = 0 // a parameter the data say nothing about
			}
			for a := range nParams {
				g[a] += d[a] * r.NormFloat64()
				for b := range nParams {
					jtj[a*nParams+b] += d[a] * d[b]
				}
			}
		}
		for a := range nParams { // the prior's term, as normal adds it
			jtj[a*nParams+a] += PriorWeight
		}
		lambda := math.Pow(10, float64(r.IntN(14)-9))
		var fast, checked [nParams]float64
		var u [nParams * nParams]float64 // the damped matrix's upper triangle
		for a := range nParams {
			for b := a; b < nParams; b++ {
				u[a*nParams+b] = jtj[a*nParams+b]
			}
			u[a*nParams+a] *= 1 + lambda
		}
		okFast := f.solveDamped(&jtj, &g, lambda, &fast)
		okChecked := f.solveChecked(&u, &g, &checked)
		if okFast != okChecked || (okFast && fast != checked) {
			t.Fatalf("case %d (scale %g, λ %g): fast %v %v, mat.Cholesky %v %v", i, scale, lambda, okFast, fast, okChecked, checked)
		}
	}
}

// TestFitterSharesPowersExactly holds the fitter, which computes the
// powers and logarithms of each distinct local batch and placement once,
// to the objective and derivatives computed observation by observation
// (as Params.Iteration predicts), to the last bit.
func TestFitterSharesPowersExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 4))
	// appLike repeats local batches and placements as an application's
	// table does, single replicas (no synchronisation) included.
	appLike := func(n int) []Obs {
		out := make([]Obs, n)
		for i := range out {
			rep := 1 << r.IntN(6)
			o := Obs{Nodes: max(1, rep/4), Replicas: rep, Atomic: 8 * (1 + r.IntN(6)), Accum: r.IntN(3)}
			o.Iteration = truth.Predict(o) * (0.9 + 0.2*r.Float64())
			out[i] = o
		}
		return out
	}
	cases := map[string][]Obs{"configs": configs(32), "one replica": configs(1), "app-like": appLike(200), "few": appLike(3)}
	for name, obs := range cases {
		t.Run(name, func(t *testing.T) {
			prior := Generic(obs[0])
			f := newFitter(obs, prior)
			for try := range 20 {
				x := f.x0
				if try > 0 {
					for k := range x {
						x[k] += r.NormFloat64()
					}
				}
				got := f.cost(&x, f.at)
				want, wantAt := naiveCost(f, &x)
				if got != want {
					t.Fatalf("point %d: cost %v, per observation %v", try, got, want)
				}
				for i := range wantAt {
					if f.at[i] != wantAt[i] {
						t.Fatalf("point %d, observation %d: %+v, per observation %+v", try, i, f.at[i], wantAt[i])
					}
				}
				var jtj, wantJtJ [nParams * nParams]float64
				var g, wantG [nParams]float64
				f.normal(&x, &jtj, &g)
				naiveNormal(f, &x, &wantJtJ, &wantG)
				if jtj != wantJtJ || g != wantG {
					t.Fatalf("point %d: normal equations differ:\n%v %v\nper observation:\n%v %v", try, jtj, g, wantJtJ, wantG)
				}
			}
		})
	}
}

// naiveCost is fitter.cost computed observation by observation.
func naiveCost(f *fitter, x *[nParams]float64) (float64, []predicted) {
	p := fromX(x[:])
	out := make([]predicted, len(f.obs))
	s := 0.0
	for i, o := range f.obs {
		e := &out[i]
		e.c, e.s = p.Compute(o.Atomic), p.Sync(o.Nodes, o.Replicas)
		e.step, e.cg, e.sg = p.overlap(e.c, e.s)
		e.pred = float64(o.Accum)*e.c + e.step
		e.r = math.Log(e.pred) - f.logIter[i]
		s += e.r * e.r
	}
	return f.withPrior(x, s), out
}

// naiveNormal is fitter.normal with each observation's powers and
// logarithms computed for it, at the point whose predictions are f.at.
func naiveNormal(f *fitter, x *[nParams]float64, jtj *[nParams * nParams]float64, g *[nParams]float64) {
	p := fromX(x[:])
	sig := (p.Gamma - 1) / (MaxGamma - 1)
	for i, o := range f.obs {
		e := f.at[i]
		dC, dS, dG := 1.0, 0.0, 0.0
		if e.s > 0 {
			gm := p.Gamma
			u := e.cg + e.sg
			dC = e.step / u * pow(e.c, gm-1)
			dS = e.step / u * pow(e.s, gm-1)
			dG = e.step * (-math.Log(u)/(gm*gm) + (e.cg*math.Log(e.c)+e.sg*math.Log(e.s))/(gm*u))
		}
		addResidual(p, sig, o, dC, dS, dG, e.pred, e.r, jtj, g)
	}
	for a := range nParams {
		jtj[a*nParams+a] += PriorWeight
		g[a] += PriorWeight * (x[a] - f.x0[a])
	}
}

// TestPlansSharedAgreeWithFresh: tables built from one Plans, whose rows
// are reused by jobs of the same bounds and whose powers are memoised
// table after table, are the tables built from nothing, to the last bit;
// a row is computed once per bounds and worker count and again for other
// bounds.
func TestPlansSharedAgreeWithFresh(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 6))
	bounds := []Bounds{
		{InitBatch: 128, MaxBatch: 4096, MinLocal: 16, MaxLocal: 256},
		{InitBatch: 32, MaxBatch: 1024, MinLocal: 8},
		{InitBatch: 64, MaxBatch: 64},
		{InitBatch: 64, MaxBatch: 2048, Fixed: 256},
		{InitBatch: 1, MaxBatch: 8192, MaxLocal: 5000}, // beyond maxPowMemo
	}
	ps := NewPlans()
	for i := range 200 {
		p := Params{AlphaC: r.Float64() * 0.1, BetaC: r.Float64() * 0.01, AlphaR: r.Float64() * 0.05, BetaR: r.Float64() * 0.002,
			AlphaN: r.Float64() * 0.3, BetaN: r.Float64() * 0.01, Gamma: 1 + r.Float64()*(MaxGamma-1)}
		b := bounds[i%len(bounds)]
		perNode, limit := 1+r.IntN(8), 1+r.IntN(64)
		if i == 100 {
			ps.gen = math.MaxUint32 // the next table wraps the stamps
		}
		shared, fresh := ps.NewTable(p, b, perNode, limit), NewTable(p, b, perNode, limit)
		if !slices.Equal(shared.entries, fresh.entries) || !slices.Equal(shared.start, fresh.start) {
			t.Fatalf("case %d (%+v): the shared plans' table differs from a fresh one", i, b)
		}
		g := GradStats{Sqr: r.Float64(), Var: r.Float64() * 100}
		for _, k := range []int{1, limit, limit + 1} {
			nodes := min(k, 1+r.IntN(k))
			if got, want := shared.Best(g, nodes, k), Best(p, g, b, nodes, k); got != want {
				t.Fatalf("case %d, %d workers on %d nodes: table %+v, Best %+v", i, k, nodes, got, want)
			}
		}
	}
	for _, b := range bounds {
		if a, c := ps.row(b, 3), ps.row(b, 3); len(a) == 0 || &a[0] != &c[0] {
			t.Errorf("%+v: the row for 3 workers was computed again", b)
		}
	}
	if a, c := ps.row(bounds[0], 3), ps.row(Bounds{InitBatch: 128, MaxBatch: 2048, MinLocal: 16, MaxLocal: 256}, 3); c[len(c)-1].batch == a[len(a)-1].batch {
		t.Errorf("other bounds took the row of %+v", bounds[0])
	}
}
