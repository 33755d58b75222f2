package estimate

import (
	"testing"

	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
)

// TestFromReports: what the estimator is told of a job from its reports.
// An adaptive job gets its bounds, gradient statistics and the steps of
// its initial batch left; one that ignores the advice is pinned at the
// batch it runs; a fixed batch, or no goodput state, gets throughput
// only; a job whose epochs are unknown is not estimated.
func TestFromReports(t *testing.T) {
	bounds := progress.Batch{Init: 128, Max: 4096, MaxLocal: 256}
	state := func(b progress.Batch, follows, advised bool, samples int64) *progress.State {
		g := &progress.Goodput{Follows: follows, GradSqNorm: 1, GradVariance: 20}
		if advised {
			g.Advice = &progress.Advice{Size: 512, Workers: 4}
		}
		return &progress.State{Latest: progress.Report{Epoch: 2, Samples: samples, GlobalBatchSize: 256, Batch: b}, Goodput: g}
	}
	spec := model.JobSpec{Name: "j", MaxWorkers: 64, Epochs: 12}
	for _, c := range []struct {
		name   string
		st     *progress.State
		bounds goodput.Bounds
		steps  float64
	}{
		{"follows the advice", state(bounds, true, true, 2*51200), bounds.Bounds(), 10 * 51200 / 128},
		{"not advised yet", state(bounds, false, false, 2*51200), bounds.Bounds(), 10 * 51200 / 128},
		{"no samples reported", state(bounds, true, true, 0), bounds.Bounds(), -1},
		{"ignores the advice", state(bounds, false, true, 2*51200), func() goodput.Bounds { b := bounds.Bounds(); b.Fixed = 256; return b }(), 10 * 51200 / 128},
		{"fixed batch", state(progress.Batch{Init: 128, Max: 128}, true, true, 2*51200), goodput.Bounds{}, -1},
		{"no goodput state", &progress.State{Latest: progress.Report{Epoch: 2}}, goodput.Bounds{}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ej, m, ok := FromReports(c.st, spec, "app", 32)
			if !ok {
				t.Fatal("not estimated")
			}
			if ej.Name != "j" || ej.App != "app" || ej.MaxWorkers != 32 || ej.Remaining != 10 {
				t.Errorf("job %+v: want j of app, 32 workers at most (the cluster's), 10 epochs left", ej)
			}
			if ej.Bounds != c.bounds || ej.RemainingSteps != c.steps {
				t.Errorf("bounds %+v, steps left %v; want %+v, %v", ej.Bounds, ej.RemainingSteps, c.bounds, c.steps)
			}
			if c.st.Goodput != nil && len(m.Steps) != len(c.st.Goodput.Configs) {
				t.Errorf("measured steps %+v, want the reports' %+v", m.Steps, c.st.Goodput.Configs)
			}
			if c.bounds.InitBatch > 0 && ej.Grad != (goodput.GradStats{Sqr: 1, Var: 20}) {
				t.Errorf("gradient statistics %+v", ej.Grad)
			}
		})
	}
	if _, _, ok := FromReports(&progress.State{}, model.JobSpec{Name: "j"}, "app", 8); ok {
		t.Error("a job whose epochs nobody knows was estimated")
	}
}
