package service

import (
	"math"
	"slices"
	"testing"

	"github.com/vodascheduler/voda/internal/goodput"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/progress"
)

// TestGoodputEstimates: a job that declared an adaptive batch and
// follows the advice is estimated with its goodput curve and the batch
// per worker count; a job with a fixed batch, one that ignores the
// advice, and one without a model keep the collector's estimates.
func TestGoodputEstimates(t *testing.T) {
	params := goodput.Params{AlphaC: 0.05, BetaC: 0.004, AlphaR: 0.04, BetaR: 0.004, AlphaN: 0.12, BetaN: 0.01, Gamma: 1.5}
	bounds := progress.Batch{Init: 128, Max: 4096, MaxLocal: 256}
	fixed := model.Estimates{RemainingSeconds: 5000, Speedup: []float64{0, 1, 1.9, 2.7, 3.4}, RestartSeconds: 12}
	state := func(b progress.Batch, follows, fitted bool, samples int64) *progress.State {
		g := &progress.Goodput{Follows: follows, GradSqNorm: 1, GradVariance: 20}
		if fitted {
			g.Params = &params
		}
		return &progress.State{Latest: progress.Report{Epoch: 2, Samples: samples, Batch: b}, Goodput: g}
	}
	curve, batch, rate1 := goodput.Curve(params, goodput.GradStats{Sqr: 1, Var: 20}, bounds.Bounds(), 4, 8)
	for _, c := range []struct {
		name    string
		st      *progress.State
		goodput bool
		remain  float64
	}{
		{"follows the advice", state(bounds, true, true, 2*51200), true, 10 * 51200 / 128 / rate1},
		{"follows, no samples reported", state(bounds, true, true, 0), true, fixed.RemainingSeconds},
		{"ignores the advice", state(bounds, false, true, 2*51200), false, fixed.RemainingSeconds},
		{"no model yet", state(bounds, true, false, 2*51200), false, fixed.RemainingSeconds},
		{"fixed batch", state(progress.Batch{Init: 128, Max: 128}, true, true, 2*51200), false, fixed.RemainingSeconds},
		{"no goodput state", &progress.State{}, false, fixed.RemainingSeconds},
		{"never reported", nil, false, fixed.RemainingSeconds},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, ok := goodputEstimates(c.st, fixed, 10, 4, 8)
			if ok != c.goodput {
				t.Fatalf("goodput estimates: %v, want %v", ok, c.goodput)
			}
			if math.Abs(e.RemainingSeconds-c.remain) > 1e-9*c.remain || e.RestartSeconds != fixed.RestartSeconds {
				t.Errorf("remaining %v s, restart %v s; want %v, %v", e.RemainingSeconds, e.RestartSeconds, c.remain, fixed.RestartSeconds)
			}
			if !c.goodput {
				if !slices.Equal(e.Speedup, fixed.Speedup) || e.Batch != nil {
					t.Errorf("estimates %+v, want the collector's %+v", e, fixed)
				}
				return
			}
			if !slices.Equal(e.Speedup, curve) || !slices.Equal(e.Batch, batch) || len(e.Speedup) != 9 {
				t.Errorf("speedup %v batch %v, want goodput's %v %v", e.Speedup, e.Batch, curve, batch)
			}
			if e.BatchAt(8) <= e.BatchAt(1) {
				t.Errorf("the batch on 8 GPUs (%d) is not above the one on 1 (%d): %v", e.BatchAt(8), e.BatchAt(1), e.Batch)
			}
		})
	}
}
