package collector

import (
	"math"
	"testing"
)

// measured is what a job measured on one worker count (one node):
// intervals reports of equal rate over seconds in all.
func measured(workers, intervals int, seconds, rate float64, more ...PlacementRate) Measurements {
	m := Measurements{Placements: []PlacementRate{placementOf(workers, intervals, seconds, rate)}}
	m.Placements = append(m.Placements, more...)
	return normalize(m)
}

func placementOf(workers, intervals int, seconds, rate float64) PlacementRate {
	return PlacementRate{Workers: workers, Nodes: 1, Seconds: seconds, Work: rate * seconds, Intervals: intervals,
		SumSqRate: float64(intervals) * rate * rate}
}

// TestSuperlinearRefused: a rate on k workers above 1.1 k/j times the rate
// on j < k workers is taken as that bound, in the job's fit and its
// application's.
func TestSuperlinearRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Measurements
		want []float64 // the fit's points' rates, in order
	}{
		{"linear: kept", measured(1, 2, 60, 1, placementOf(4, 2, 60, 4)), []float64{1, 4}},
		{"sublinear: kept", measured(1, 2, 60, 1, placementOf(4, 2, 60, 3)), []float64{1, 3}},
		{"10% over linear: kept", measured(1, 2, 60, 1, placementOf(4, 2, 60, 4.4)), []float64{1, 4.4}},
		{"superlinear: clamped", measured(1, 2, 60, 1, placementOf(4, 2, 60, 40)), []float64{1, 4.4}},
		{"clamped by the least rate per worker below", measured(1, 2, 60, 2, placementOf(2, 2, 60, 2), placementOf(8, 2, 60, 800)),
			[]float64{2, 2, 8.8}},
		{"by the least rate per worker, not the claim", measured(1, 2, 60, 1, placementOf(2, 2, 60, 100), placementOf(4, 2, 60, 400)),
			[]float64{1, 2.2, 4.4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pts := points(&tc.m)
			if len(pts) != len(tc.want) {
				t.Fatalf("%d points, want %d", len(pts), len(tc.want))
			}
			for i, p := range pts {
				if !near(p.rate, tc.want[i]) {
					t.Errorf("point %d (%d workers): rate %v, want %v", i, p.k, p.rate, tc.want[i])
				}
			}
		})
	}
	// The estimate: a job that claims 10 a GPU on one and 1000 on 32 is
	// no faster than linear on 32.
	c := New()
	c.SetJob("liar", "app", measured(1, 5, 300, 10, placementOf(32, 5, 300, 1000)))
	if s := c.Estimate("liar", "app", 100, 32).Speedup[32]; s > SuperlinearTolerance*32 {
		t.Errorf("speedup on 32 = %v, want at most %v", s, SuperlinearTolerance*32)
	}
}

// TestOutlierWaitsForConfirmation: three jobs of an application measure
// 0.01 epochs a second on one GPU; a fourth claims more. Far above the
// application's rate, its claim does not move its estimate until
// confirmed over ConfirmIntervals reports spanning ConfirmSeconds.
func TestOutlierWaitsForConfirmation(t *testing.T) {
	const work = 100.0
	for _, tc := range []struct {
		name      string
		others    bool // the three honest jobs run beside it
		claim     Measurements
		wantRate  float64 // the rate its remaining time is estimated at
		wantOwn   bool    // from its own measurements
		wantRange bool    // wantRate is an upper bound, not a value (+Inf: any)
	}{
		{"within OutlierRatio: believed", true, measured(1, 3, 90, 0.03), 0.03, true, false},
		{"far above: the application's rate", true, measured(1, 5, 150, 10), 4 * 0.01, false, true},
		{"many reports, not an hour: still the application's", true, measured(1, 200, 3000, 10), 4 * 0.01, false, true},
		{"an hour, few reports: still the application's", true, measured(1, 5, 4000, 10), 4 * 0.01, false, true},
		{"confirmed: believed", true, measured(1, ConfirmIntervals, ConfirmSeconds, 10), 10, true, false},
		{"alone: nothing to compare with", false, measured(1, 5, 150, 10), 10, true, false},
		// The others' fit predicts little speedup (serial fraction near
		// 1); linear scaling of their best per GPU is the bound.
		{"scales better than the others' fit, within linear: believed", true,
			measured(16, 5, 150, 0.01*16*0.9), math.Inf(1), true, true},
		{"over 4x linear scaling of the others' best per GPU", true,
			measured(16, 5, 150, 0.01*16*5), 4 * 0.01, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			if tc.others {
				for _, name := range []string{"a", "b", "c"} {
					c.SetJob(name, "train", measured(1, 5, 150, 0.01, placementOf(2, 5, 150, 0.0105)))
				}
			}
			c.SetJob("liar", "train", tc.claim)
			rem := c.Estimate("liar", "train", work, 8).RemainingSeconds
			rate := work / rem
			if tc.wantRange {
				if !(rate <= tc.wantRate) {
					t.Errorf("estimated at %v epochs/s, want at most %v", rate, tc.wantRate)
				}
			} else if !near(rate, tc.wantRate) {
				t.Errorf("estimated at %v epochs/s, want %v", rate, tc.wantRate)
			}
			if own := c.Source("liar", "train") == SourceJob; own != tc.wantOwn {
				t.Errorf("source %s, want its own: %v", c.Source("liar", "train"), tc.wantOwn)
			}
		})
	}
}

// TestHistoryMergedRobustly: one job, however fast or slow it claims to
// be, moves its application's rate by at most OutlierRatio, while it
// runs and in the base it leaves.
func TestHistoryMergedRobustly(t *testing.T) {
	appRate := func(c *Collector) float64 { return 100 / c.Estimate("new", "train", 100, 1).RemainingSeconds }
	for _, tc := range []struct {
		name     string
		base     Measurements
		others   []Measurements
		claim    Measurements
		min, max float64 // the application's rate with the claim
	}{
		{"fast against the base", measured(1, 10, 600, 1), nil, measured(1, 10, 600, 1e6), 1, OutlierRatio},
		{"slow and long against the base", measured(1, 10, 600, 1), nil, measured(1, 1000, 1e6, 1e-7), 1 / OutlierRatio, 1},
		{"fast against live jobs", Measurements{}, []Measurements{measured(1, 5, 300, 1), measured(1, 5, 300, 1)},
			measured(1, 5, 300, 1e6), 1, (2 + OutlierRatio) / 3},
		{"long and fast against the base", measured(1, 10, 600, 1), nil, measured(1, 1000, 1e6, 1e6), 1, OutlierRatio},
		{"honest: as it is", measured(1, 10, 600, 1), nil, measured(1, 10, 600, 2), 1.5, 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			c.SetApp("train", tc.base)
			for i, m := range tc.others {
				c.SetJob(string(rune('a'+i)), "train", m)
			}
			c.SetJob("claim", "train", tc.claim)
			check := func(when string) {
				t.Helper()
				if r := appRate(c); !(r >= tc.min*(1-1e-9) && r <= tc.max*(1+1e-9)) {
					t.Errorf("%s: the application's rate is %v, want within [%v, %v]", when, r, tc.min, tc.max)
				}
			}
			check("while it runs")
			c.Forget("claim")
			check("after it left")
			restored := New()
			restored.SetApp("train", c.App("train"))
			for i, m := range tc.others {
				restored.SetJob(string(rune('a'+i)), "train", m)
			}
			if a, b := appRate(c), appRate(restored); !near(a, b) || math.IsNaN(a) {
				t.Errorf("restored from its stored history: %v, want %v", b, a)
			}
		})
	}
}

// FuzzRobustSum: whatever rate a job claims, beside its application's
// base and an honest job, the application's total is valid measurements
// and its rate stays within OutlierRatio of the base's. (Two jobs that
// claim the same false rate outvote a base: each is the median of the
// other's side; see medianWithout.)
func FuzzRobustSum(f *testing.F) {
	f.Add(1.0, 1e6, 60.0, 3600.0, uint8(3))
	f.Add(0.01, 10.0, 1.0, 1e9, uint8(1))
	f.Add(0.01, 1e-12, 1e9, 1.0, uint8(31))
	f.Fuzz(func(t *testing.T, base, claim, secClaim, secHonest float64, workers uint8) {
		k := int(workers%32) + 1
		for _, x := range []float64{base, claim, secClaim, secHonest} {
			if !(x >= 1e-12 && x <= 1e12) {
				t.Skip()
			}
		}
		baseM := measured(k, 10, 600, base)
		honest := measured(k, 5, secHonest, base)
		liar := measured(k, 5, secClaim, claim)
		srcs := []source{{m: &baseM}, {m: &honest, live: true}, {m: &liar, live: true}}
		total := robustSum(srcs, ratesByPlacement(srcs))
		if err := total.Validate(); err != nil {
			t.Fatalf("robustSum gave invalid measurements: %v", err)
		}
		if len(total.Placements) != 1 {
			t.Fatalf("%d placements, want 1", len(total.Placements))
		}
		p := total.Placements[0]
		r := p.Work / p.Seconds
		if lim := OutlierRatio * (1 + 1e-9); r > base*lim || r < base/lim {
			t.Errorf("rate %v with the base at %v (claim %v over %v s)", r, base, claim, secClaim)
		}
	})
}
