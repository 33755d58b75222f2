package estimate

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/model"
)

// truth is the step-time model the jobs of these tests run with.
var truth = goodput.Params{AlphaC: 0.05, BetaC: 0.004, AlphaR: 0.04, BetaR: 0.004, AlphaN: 0.12, BetaN: 0.01, Gamma: 1.5}

var bounds = goodput.Bounds{InitBatch: 128, MaxBatch: 4096, MaxLocal: 256}

var grad = goodput.GradStats{Sqr: 1, Var: 50}

// step is the measured step time of workers over nodes at batch.
func step(workers, nodes, batch int) goodput.Obs {
	atomic, accum := bounds.DefaultSplit(batch, workers)
	return goodput.Obs{Nodes: nodes, Replicas: workers, Atomic: atomic, Accum: accum, Iteration: truth.Iteration(nodes, workers, atomic, accum)}
}

func adaptiveJob(name string, maxWorkers int) Job {
	return Job{Name: name, App: "app", MaxWorkers: maxWorkers, Remaining: 10, RemainingSteps: 4000, Bounds: bounds, Grad: grad}
}

func linear(n int) []float64 {
	out := make([]float64, n+1)
	for k := range out {
		out[k] = float64(k)
	}
	return out
}

// TestOnlinePolicy: the policy docs/progress.md states, case by case.
func TestOnlinePolicy(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(o *Online)
		job   Job
		check func(t *testing.T, e model.Estimates)
	}{
		{"nothing known, batch declared: linear up to the ramp (1), time unknown",
			func(o *Online) {}, adaptiveJob("j", 16),
			func(t *testing.T, e model.Estimates) {
				if !slices.Equal(e.Speedup, linear(1)) || e.RemainingSeconds != -1 || e.Batch != nil {
					t.Errorf("estimates %+v", e)
				}
			}},
		{"nothing known, no batch: linear up to the ramp (1) as well",
			func(o *Online) {}, Job{Name: "j", App: "app", MaxWorkers: 8, Remaining: 10, RemainingSteps: -1},
			func(t *testing.T, e model.Estimates) {
				if !slices.Equal(e.Speedup, linear(1)) || e.RemainingSeconds != -1 {
					t.Errorf("estimates %+v", e)
				}
			}},
		{"no batch, the application's throughput known: Amdahl fitted to it up to the maximum",
			func(o *Online) {
				o.Observe(collector.Observation{Job: "old", App: "app", Workers: 1, Nodes: 1, Seconds: 100, Work: 1})
			}, Job{Name: "j", App: "app", MaxWorkers: 8, Remaining: 10, RemainingSteps: -1},
			func(t *testing.T, e model.Estimates) {
				want := 8 / (1 + collector.DefaultSerial*7) // one worker count: the default serial fraction
				if len(e.Speedup) != 9 || math.Abs(e.Speedup[8]-want) > 1e-12 || math.Abs(e.RemainingSeconds-1000) > 1e-9 {
					t.Errorf("estimates %+v, want Amdahl's %v on 8 and 1000 s on one GPU", e, want)
				}
			}},
		{"a new job of an application measured up to 8: the application's curve up to 8, with batches",
			func(o *Online) {
				for _, w := range []int{1, 2, 4, 8} {
					o.ObserveStep("old", "app", step(w, (w+3)/4, 128*w))
				}
			}, adaptiveJob("j", 16),
			func(t *testing.T, e model.Estimates) {
				if len(e.Speedup) != 9 || len(e.Batch) != 9 || e.RemainingSeconds <= 0 {
					t.Fatalf("estimates %+v: want a curve to 8 with batches and a remaining time", e)
				}
				if e.Speedup[8] <= e.Speedup[4] || e.BatchAt(8) < e.BatchAt(1) {
					t.Errorf("speedup %v, batch %v", e.Speedup, e.Batch)
				}
			}},
		{"a job measured on 4 ramps to twice that",
			func(o *Online) {
				o.ObserveStep("j", "app", step(4, 1, 512))
			}, adaptiveJob("j", 16),
			func(t *testing.T, e model.Estimates) {
				if len(e.Speedup) != 9 {
					t.Errorf("curve to %d, want 8", len(e.Speedup)-1)
				}
			}},
		{"the maximum caps the ramp",
			func(o *Online) {
				o.ObserveStep("j", "app", step(4, 1, 512))
			}, adaptiveJob("j", 6),
			func(t *testing.T, e model.Estimates) {
				if len(e.Speedup) != 7 {
					t.Errorf("curve to %d, want 6", len(e.Speedup)-1)
				}
			}},
		{"a job pinned at its batch: a curve, no batches",
			func(o *Online) {
				o.ObserveStep("j", "app", step(2, 1, 256))
			}, func() Job { j := adaptiveJob("j", 16); j.Bounds.Fixed = 256; return j }(),
			func(t *testing.T, e model.Estimates) {
				if len(e.Speedup) != 5 || e.Batch != nil {
					t.Errorf("estimates %+v: want a curve to 4 without batches", e)
				}
			}},
		{"no batch declared, throughput measured: Amdahl fitted, up to the maximum",
			func(o *Online) {
				o.Observe(collector.Observation{Job: "j", App: "app", Workers: 1, Nodes: 1, Seconds: 100, Work: 1})
				o.Observe(collector.Observation{Job: "j", App: "app", Workers: 4, Nodes: 1, Seconds: 100, Work: 3})
			}, Job{Name: "j", App: "app", MaxWorkers: 8, Remaining: 10, RemainingSteps: -1},
			func(t *testing.T, e model.Estimates) {
				if len(e.Speedup) != 9 || math.Abs(e.RemainingSeconds-1000) > 1e-6 || math.Abs(e.Speedup[4]-3) > 1e-9 {
					t.Errorf("estimates %+v: want 1000 s on one GPU and a speedup of 3 on 4", e)
				}
			}},
		{"steps without remaining steps: the throughput's remaining time",
			func(o *Online) {
				o.ObserveStep("j", "app", step(1, 1, 128))
				o.Observe(collector.Observation{Job: "j", App: "app", Workers: 1, Nodes: 1, Seconds: 100, Work: 1})
			}, func() Job { j := adaptiveJob("j", 16); j.RemainingSteps = -1; return j }(),
			func(t *testing.T, e model.Estimates) {
				if math.Abs(e.RemainingSeconds-1000) > 1e-6 || len(e.Speedup) != 3 {
					t.Errorf("estimates %+v: want the throughput's 1000 s on a goodput curve to 2", e)
				}
			}},
		{"restarts measured: their mean, else the application's",
			func(o *Online) {
				o.ObserveRestart("other", "app", 20)
				o.ObserveRestart("other", "app", 40)
			}, adaptiveJob("j", 4),
			func(t *testing.T, e model.Estimates) {
				if e.RestartSeconds != 30 {
					t.Errorf("restart %v s, want the application's 30", e.RestartSeconds)
				}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := NewOnline(Options{StepModels: true})
			o.SetGPUsPerNode(4)
			c.setup(o)
			c.check(t, o.Estimate(c.job))
		})
	}
}

// Without step models every job gets Amdahl's law, whatever it declares.
func TestOnlineWithoutStepModels(t *testing.T) {
	o := NewOnline(Options{})
	o.ObserveStep("j", "app", step(2, 1, 256))
	e := o.Estimate(adaptiveJob("j", 8))
	if len(e.Speedup) != 9 || e.Batch != nil || e.RemainingSeconds != -1 {
		t.Errorf("estimates %+v: want Amdahl to 8, no batches, time unknown", e)
	}
}

// SetJob takes a job's whole record each time: the same record again
// changes nothing, a record with more measurements adds only those, and
// the application's history (App) is what an incremental feed gives.
func TestSetJobAgreesWithObserve(t *testing.T) {
	obs := []goodput.Obs{step(1, 1, 128), step(2, 1, 256), step(2, 1, 256), step(4, 1, 512), step(8, 2, 1024), step(4, 1, 512)}
	inc := NewOnline(Options{StepModels: true})
	set := NewOnline(Options{StepModels: true})
	var configs []goodput.Config
	for i, o := range obs {
		inc.ObserveStep("j", "app", o)
		configs, _ = goodput.Add(configs, o)
		for range 2 { // twice: the second changes nothing
			set.SetJob("j", "app", Measured{Steps: slices.Clone(configs)})
		}
		a, b := inc.Estimate(adaptiveJob("j", 16)), set.Estimate(adaptiveJob("j", 16))
		if !slices.Equal(a.Speedup, b.Speedup) || !slices.Equal(a.Batch, b.Batch) || a.RemainingSeconds != b.RemainingSeconds {
			t.Fatalf("after %d measurements: incremental %+v, whole record %+v", i+1, a, b)
		}
	}
	if a, b := inc.App("app"), set.App("app"); !slices.Equal(a.Steps, b.Steps) {
		t.Errorf("application history: incremental %+v, whole record %+v", a.Steps, b.Steps)
	}
}

// An application's history survives a restart: stored as JSON, read back
// into a new estimator, it gives a new job the same curve to within 1%
// (the uninterrupted process fitted the application step by step, each
// fit starting from the last; the new one fits the history at once), the
// same restart cost and the same reach. A history written before step
// times were kept still reads.
func TestHistoryRoundTrip(t *testing.T) {
	o := NewOnline(Options{StepModels: true})
	o.SetGPUsPerNode(4)
	for _, w := range []int{1, 2, 4} {
		o.ObserveStep("old", "app", step(w, 1, 128*w))
	}
	o.Observe(collector.Observation{Job: "old", App: "app", Workers: 2, Nodes: 1, Seconds: 60, Work: 1})
	o.ObserveRestart("old", "app", 25)
	o.Forget("old")
	data, err := json.Marshal(o.App("app"))
	if err != nil {
		t.Fatal(err)
	}
	var h History
	if err := json.Unmarshal(data, &h); err != nil || h.Validate() != nil || h.Empty() {
		t.Fatalf("history %s: %v, %v", data, err, h.Validate())
	}
	n := NewOnline(Options{StepModels: true})
	n.SetGPUsPerNode(4)
	n.SetApp("app", h)
	a, b := o.Estimate(adaptiveJob("new", 16)), n.Estimate(adaptiveJob("new", 16))
	if len(a.Speedup) != 5 || len(b.Speedup) != 5 || a.RestartSeconds != 25 || b.RestartSeconds != 25 || len(b.Batch) != 5 {
		t.Fatalf("before the restart %+v, after %+v", a, b)
	}
	for k := 1; k < 5; k++ {
		if math.Abs(a.Speedup[k]/b.Speedup[k]-1) > 0.01 {
			t.Errorf("speedup on %d: %v before the restart, %v after", k, a.Speedup[k], b.Speedup[k])
		}
	}
	if math.Abs(a.RemainingSeconds/b.RemainingSeconds-1) > 0.01 {
		t.Errorf("remaining %v s before the restart, %v after", a.RemainingSeconds, b.RemainingSeconds)
	}
	var old History
	if err := json.Unmarshal([]byte(`{"placements":[{"workers":1,"nodes":1,"seconds":60,"work":1,"intervals":2,"sumSqRate":0.0006}]}`), &old); err != nil || old.Validate() != nil || len(old.Steps) != 0 {
		t.Errorf("an old history: %+v, %v", old, err)
	}
	bad := History{Steps: []goodput.Config{{Nodes: 1, Workers: 1, Local: 0, Seconds: 1, N: 1}}}
	if bad.Validate() == nil {
		t.Error("a history with an impossible configuration is valid")
	}
	if !n.DropApp("other") || n.DropApp("app") {
		t.Error("DropApp: an unknown application is known, or one a live job names was dropped")
	}
	if n.Forget("new"); !n.DropApp("app") || len(n.App("app").Steps) != 0 {
		t.Error("DropApp kept an application no live job names")
	}
}

// Left and Finish: the one finish formula the gauges and the API use.
func TestFinish(t *testing.T) {
	e := model.Estimates{RemainingSeconds: 1000, Speedup: []float64{0, 1, 2, 2.5}, RestartSeconds: 30}
	if left, ok := Left(e, 2); !ok || left != 500 {
		t.Errorf("Left on 2 = %v, %v", left, ok)
	}
	for _, k := range []int{0, 4, -1} {
		if _, ok := Left(e, k); ok {
			t.Errorf("Left on %d known", k)
		}
	}
	if _, ok := Left(model.Estimates{RemainingSeconds: -1, Speedup: []float64{0, 1}}, 1); ok {
		t.Error("Left known without a remaining time")
	}
}

// A job that has not reported is estimated from what its application's
// jobs declared and measured: their bounds, its epochs in steps of the
// initial batch, the application's curve; and not at all before any job
// of the application declared an adaptive batch. What was declared
// survives a restart in the history.
func TestUnreported(t *testing.T) {
	o := NewOnline(Options{StepModels: true})
	o.SetGPUsPerNode(4)
	spec := model.JobSpec{Name: "new", MaxWorkers: 64, Epochs: 10}
	if j := o.Unreported(spec, "app", 16); j.Bounds != (goodput.Bounds{}) || j.Remaining != 10 || j.RemainingSteps != -1 {
		t.Fatalf("before anything was declared: %+v", j)
	} else if e := o.Estimate(j); !slices.Equal(e.Speedup, linear(1)) || e.RemainingSeconds != -1 {
		t.Fatalf("nothing known: estimates %+v, want a linear curve to 1 and no remaining time", e)
	}
	d := Declared{InitBatch: 128, MaxBatch: 4096, MaxLocal: 256, SamplesPerEpoch: 51200}
	var configs []goodput.Config
	for _, w := range []int{1, 2, 4} {
		configs, _ = goodput.Add(configs, step(w, 1, 128*w))
	}
	o.SetJob("old", "app", Measured{Steps: configs, Declared: d})
	j := o.Unreported(spec, "app", 16)
	if j.Bounds != d.Bounds() || j.MaxWorkers != 16 || j.Remaining != 10 || j.RemainingSteps != 10*51200/128 {
		t.Fatalf("unreported job %+v", j)
	}
	e := o.Estimate(j)
	if len(e.Speedup) != 5 || len(e.Batch) != 5 || !(e.RemainingSeconds > 0) {
		t.Errorf("estimates %+v: want the application's curve to 4 with batches and a remaining time", e)
	}
	o.Forget("new")
	o.Forget("old")
	n := NewOnline(Options{StepModels: true})
	n.SetApp("app", o.App("app"))
	if j2 := n.Unreported(spec, "app", 16); j2 != j {
		t.Errorf("after a restart: %+v; want %+v", j2, j)
	}
	if j3 := NewOnline(Options{}).Unreported(spec, "app", 16); j3.Bounds != (goodput.Bounds{}) {
		t.Errorf("bounds without step models: %+v", j3)
	}
}

// A job's goodput curve is taken again only when what it depends on
// changed, and is then what goodput.Curve gives from scratch: new
// gradient statistics (every epoch) reuse the job's table; a refit, a
// shorter reach or another node size build a new one; a job that reports
// no statistics keeps its curve but no table. Each step changes one thing
// from the step before.
func TestCurveCache(t *testing.T) {
	o := NewOnline(Options{StepModels: true})
	o.SetGPUsPerNode(4)
	for _, w := range []int{1, 2, 4} {
		o.ObserveStep("j", "app", step(w, 1, 128*w))
	}
	j := adaptiveJob("j", 16)
	var last model.Estimates
	var lastTable *goodput.Table
	for i, c := range []struct {
		name                 string
		change               func(j *Job)
		sameCurve, sameTable bool // sameTable: when one is kept
		tableKept            bool
	}{
		{"first estimate", func(*Job) {}, false, false, true},
		{"nothing changed", func(*Job) {}, true, true, true},
		{"new gradient statistics", func(j *Job) { j.Grad = goodput.GradStats{Sqr: 1, Var: 80} }, false, true, true},
		{"less work left", func(j *Job) { j.RemainingSteps = 1000 }, true, true, true},
		{"a refit", func(*Job) {
			bad := step(8, 2, 1024)
			bad.Iteration *= 1.5 // mispredicted: the model is fitted again
			o.ObserveStep("j", "app", bad)
		}, false, false, true},
		{"a shorter reach", func(j *Job) { j.MaxWorkers = 12 }, false, false, true},
		{"larger nodes", func(*Job) { o.SetGPUsPerNode(8) }, false, false, true},
		{"statistics unknown", func(j *Job) { j.Grad = goodput.GradStats{} }, false, true, true},
		{"a refit without statistics", func(*Job) {
			bad := step(16, 4, 2048)
			bad.Iteration *= 1.5
			o.ObserveStep("j", "app", bad)
		}, false, false, false},
		{"nothing changed without statistics", func(*Job) {}, true, false, false},
	} {
		c.change(&j)
		e := o.Estimate(j)
		p, ok := o.Fit("j", "app")
		if !ok {
			t.Fatalf("%s: no model", c.name)
		}
		limit := min(j.MaxWorkers, o.Ramp(j))
		speedup, batch, rate1 := goodput.Curve(p, j.Grad, j.Bounds, o.gpusPerNode, limit)
		if !slices.Equal(e.Speedup, speedup) || !slices.Equal(e.Batch, batch) || e.RemainingSeconds != j.RemainingSteps/rate1 {
			t.Fatalf("%s: estimates %+v; from scratch speedup %v batch %v and %v s", c.name, e, speedup, batch, j.RemainingSteps/rate1)
		}
		table := o.curves["j"].table
		if i > 0 {
			if same := &e.Speedup[0] == &last.Speedup[0]; same != c.sameCurve {
				t.Errorf("%s: curve reused %v, want %v", c.name, same, c.sameCurve)
			}
			if same := table == lastTable; table != nil && same != c.sameTable {
				t.Errorf("%s: table reused %v, want %v", c.name, same, c.sameTable)
			}
		}
		if (table != nil) != c.tableKept {
			t.Errorf("%s: table kept %v, want %v", c.name, table != nil, c.tableKept)
		}
		if table != nil {
			lastTable = table
		}
		last = e
	}
}

// The batch a job chooses on a placement is goodput.Best's, from the
// job's table when the placement is packed as the table's are and from
// scratch otherwise.
func TestChooseAgreesWithBest(t *testing.T) {
	o := NewOnline(Options{StepModels: true})
	o.SetGPUsPerNode(4)
	for _, w := range []int{1, 2, 4, 8} {
		o.ObserveStep("j", "app", step(w, (w+3)/4, 128*w))
	}
	o.Estimate(adaptiveJob("j", 16))
	p, _ := o.Fit("j", "app")
	for _, g := range []goodput.GradStats{grad, {Sqr: 1, Var: 5}, {}} {
		for _, pl := range []struct{ nodes, workers int }{{1, 1}, {1, 4}, {2, 4}, {2, 8}, {4, 16}, {8, 32}} {
			got, ok := o.Choose("j", "app", g, bounds, pl.nodes, pl.workers)
			if want := goodput.Best(p, g, bounds, pl.nodes, pl.workers); !ok || got != want {
				t.Errorf("%+v on %d workers over %d nodes: chose %+v (%v), want %+v", g, pl.workers, pl.nodes, got, ok, want)
			}
		}
	}
}

// Jobs that report no gradient statistics (queued, never ran) share the
// curve of their shape: the second of an application's queued jobs takes
// the first's, which is what goodput.Curve gives from scratch; a new model
// of the application gives them a new one.
func TestQueuedJobsShareCurves(t *testing.T) {
	o := NewOnline(Options{StepModels: true})
	o.SetGPUsPerNode(4)
	for _, w := range []int{1, 2, 4} {
		o.ObserveStep("old", "app", step(w, 1, 128*w))
	}
	queued := func(name string) Job {
		j := adaptiveJob(name, 16)
		j.Grad = goodput.GradStats{}
		return j
	}
	check := func(when string) model.Estimates {
		t.Helper()
		a, b := o.Estimate(queued("a")), o.Estimate(queued("b"))
		if &a.Speedup[0] != &b.Speedup[0] || &a.Batch[0] != &b.Batch[0] {
			t.Errorf("%s: two queued jobs of one application took two curves", when)
		}
		p, _ := o.gp.AppParams("app")
		speedup, batch, _ := goodput.Curve(p, goodput.GradStats{}, bounds, 4, min(16, o.Ramp(queued("a"))))
		if !slices.Equal(a.Speedup, speedup) || !slices.Equal(a.Batch, batch) {
			t.Errorf("%s: shared curve %v / %v; from scratch %v / %v", when, a.Speedup, a.Batch, speedup, batch)
		}
		if o.curves["a"].table != nil {
			t.Errorf("%s: a queued job keeps a table", when)
		}
		return a
	}
	before := check("first")
	bad := step(8, 2, 1024)
	bad.Iteration *= 1.5 // the application's model is fitted again
	o.ObserveStep("old", "app", bad)
	if after := check("after a refit"); &after.Speedup[0] == &before.Speedup[0] {
		t.Error("the curve of the old model was kept")
	}
}
