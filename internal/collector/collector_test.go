package collector

import (
	"math"
	"reflect"
	"testing"
)

const tol = 1e-9

// amdahl is S(k) = k / (1 + s(k-1)).
func amdahl(k int, s float64) float64 {
	return float64(k) / (1 + s*float64(k-1))
}

// amdahlCurve is the curve Estimate returns for serial fraction s.
func amdahlCurve(s float64, maxWorkers int) []float64 {
	c := make([]float64, maxWorkers+1)
	for k := 1; k <= maxWorkers; k++ {
		c[k] = amdahl(k, s)
	}
	return c
}

// observe records seconds of training on k workers for a job following
// Amdahl's law with one-GPU rate rate1 and serial fraction s.
func observe(c *Collector, job, app string, k int, seconds, rate1, s float64) {
	c.Observe(job, app, k, seconds, seconds*rate1*amdahl(k, s))
}

func curveDiff(t *testing.T, what string, want, got []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: curve length %d (%v), want %d (%v)", what, len(got), got, len(want), want)
		return
	}
	for k := range want {
		if math.Abs(got[k]-want[k]) > tol {
			t.Errorf("%s: S(%d) = %.12g, want %.12g", what, k, got[k], want[k])
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// serialOf recovers s from a curve by S(2) = 2/(1+s).
func serialOf(curve []float64) float64 { return 2/curve[2] - 1 }

func TestEstimateNothingKnown(t *testing.T) {
	c := New()
	est := c.Estimate("j", "app", 100, 4)
	if est.RemainingSeconds != -1 {
		t.Errorf("RemainingSeconds = %v, want -1", est.RemainingSeconds)
	}
	// With nothing known the curve is Amdahl's law with DefaultSerial (see
	// doc.go), not linear.
	curveDiff(t, "unknown job", amdahlCurve(DefaultSerial, 4), est.Speedup)

	// Observations of other applications tell nothing about this one.
	observe(c, "other", "other-app", 1, 60, 2, 0.1)
	observe(c, "other", "other-app", 4, 60, 2, 0.1)
	if got := c.Estimate("j", "app", 100, 4); !reflect.DeepEqual(got, est) {
		t.Errorf("Estimate after another app's observations = %+v, want %+v", got, est)
	}
}

func TestEstimateExactAmdahl(t *testing.T) {
	tests := []struct {
		name   string
		counts []int
		serial float64
		rate1  float64
	}{
		{name: "1 and 4 workers, s=0.1, rate 2", counts: []int{1, 4}, serial: 0.1, rate1: 2.0},
		{name: "1, 2, 4 and 8 workers", counts: []int{1, 2, 4, 8}, serial: 0.1, rate1: 2.0},
		{name: "never on one GPU", counts: []int{2, 3, 8}, serial: 0.3, rate1: 0.5},
		{name: "nearly linear", counts: []int{1, 8}, serial: 0.02, rate1: 10},
		{name: "no speedup at all", counts: []int{1, 2}, serial: 1, rate1: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			// Several observations per count, of different lengths: the
			// rate per count is total work over total seconds.
			for _, k := range tc.counts {
				observe(c, "j", "app", k, 30, tc.rate1, tc.serial)
				observe(c, "j", "app", k, 90, tc.rate1, tc.serial)
			}
			const work = 1234.5
			est := c.Estimate("j", "app", work, 8)
			curveDiff(t, "fitted curve", amdahlCurve(tc.serial, 8), est.Speedup)
			if want := work / tc.rate1; !near(est.RemainingSeconds, want) {
				t.Errorf("RemainingSeconds = %.12g, want %.12g", est.RemainingSeconds, want)
			}
		})
	}
}

func TestEstimateRemainingWorkUnknown(t *testing.T) {
	c := New()
	observe(c, "j", "app", 1, 60, 2, 0.1)
	observe(c, "j", "app", 4, 60, 2, 0.1)
	est := c.Estimate("j", "app", -1, 4)
	if est.RemainingSeconds != -1 {
		t.Errorf("RemainingSeconds with remaining work -1 = %v, want -1", est.RemainingSeconds)
	}
	curveDiff(t, "curve", amdahlCurve(0.1, 4), est.Speedup)
	if est := c.Estimate("j", "app", 0, 4); est.RemainingSeconds != 0 {
		t.Errorf("RemainingSeconds with no work left = %v, want 0", est.RemainingSeconds)
	}
}

func TestEstimateOneCountBorrowsApplicationSerial(t *testing.T) {
	const app, work = "resnet", 600.0
	c := New()
	// Both jobs seen at 2 workers only: the application has one count, so
	// b keeps its own speed and assumes DefaultSerial.
	observe(c, "a", app, 2, 100, 2, 0.1)
	observe(c, "b", app, 2, 100, 3, 0.1)
	est := c.Estimate("b", app, work, 8)
	curveDiff(t, "before the app has two counts", amdahlCurve(DefaultSerial, 8), est.Speedup)
	bRate := 3 * amdahl(2, 0.1) // b's observed rate on 2 workers
	if want := work / (bRate * (1 + DefaultSerial) / 2); !near(est.RemainingSeconds, want) {
		t.Errorf("before: RemainingSeconds = %.12g, want %.12g", est.RemainingSeconds, want)
	}

	// a is now seen at a second count: the application's fit has two
	// counts and b borrows its serial fraction, keeping its own speed.
	observe(c, "a", app, 4, 100, 2, 0.1)
	appEst := c.Estimate("unseen", app, work, 8)
	s := serialOf(appEst.Speedup)
	if near(s, DefaultSerial) {
		t.Fatalf("application serial fraction %v, want one fitted from two counts, not DefaultSerial", s)
	}
	est = c.Estimate("b", app, work, 8)
	curveDiff(t, "after: b's curve against the application's", appEst.Speedup, est.Speedup)
	curveDiff(t, "after: b's curve against Amdahl with the app's s", amdahlCurve(s, 8), est.Speedup)
	if want := work / (bRate * (1 + s) / 2); !near(est.RemainingSeconds, want) {
		t.Errorf("after: RemainingSeconds = %.12g, want %.12g (b's own speed with s=%v)", est.RemainingSeconds, want, s)
	}
	if near(est.RemainingSeconds, appEst.RemainingSeconds) {
		t.Errorf("b's RemainingSeconds %v equals the application's: b's own speed was ignored", est.RemainingSeconds)
	}
}

func TestEstimateUnseenJobOfKnownApp(t *testing.T) {
	c := New()
	observe(c, "a", "bert", 1, 50, 2, 0.1)
	observe(c, "a", "bert", 4, 50, 2, 0.1)
	est := c.Estimate("new", "bert", 900, 6)
	curveDiff(t, "unseen job", amdahlCurve(0.1, 6), est.Speedup)
	if want := 900 / 2.0; !near(est.RemainingSeconds, want) {
		t.Errorf("RemainingSeconds = %.12g, want %.12g", est.RemainingSeconds, want)
	}
	// The same job name under an unknown application knows nothing.
	if est := c.Estimate("new", "gpt", 900, 6); est.RemainingSeconds != -1 {
		t.Errorf("unseen job of an unseen app: RemainingSeconds = %v, want -1", est.RemainingSeconds)
	}
}

func TestEstimateApplicationSeenAtOneCount(t *testing.T) {
	c := New()
	observe(c, "a", "ncf", 2, 100, 4, 0.1)
	est := c.Estimate("new", "ncf", 100, 4)
	curveDiff(t, "unseen job, app at one count", amdahlCurve(DefaultSerial, 4), est.Speedup)
	rate2 := 4 * amdahl(2, 0.1)
	if want := 100 / (rate2 * (1 + DefaultSerial) / 2); !near(est.RemainingSeconds, want) {
		t.Errorf("RemainingSeconds = %.12g, want %.12g", est.RemainingSeconds, want)
	}
}

func TestForget(t *testing.T) {
	const app = "bert"
	c := New()
	observe(c, "a", app, 1, 60, 2, 0.1)
	observe(c, "a", app, 4, 60, 2, 0.1)
	c.Forget("a")
	c.Forget("never-seen") // no effect, no panic

	// The application keeps a's data: a now gets the application's fit,
	// like any unseen job.
	got, want := c.Estimate("a", app, 100, 8), c.Estimate("unseen", app, 100, 8)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Estimate(a) after Forget = %+v, want the application's %+v", got, want)
	}
	curveDiff(t, "application after Forget", amdahlCurve(0.1, 8), got.Speedup)
	if !near(got.RemainingSeconds, 50) {
		t.Errorf("RemainingSeconds after Forget = %v, want 50", got.RemainingSeconds)
	}

	// a's own history is gone: seen again at one count, it borrows the
	// application's serial fraction instead of fitting its old counts.
	observe(c, "a", app, 8, 60, 4, 0.1)
	s := serialOf(c.Estimate("unseen", app, 100, 8).Speedup)
	est := c.Estimate("a", app, 100, 8)
	curveDiff(t, "a seen again", amdahlCurve(s, 8), est.Speedup)
	rate8 := 4 * amdahl(8, 0.1)
	if want := 100 / (rate8 * (1 + 7*s) / 8); !near(est.RemainingSeconds, want) {
		t.Errorf("a seen again: RemainingSeconds = %.12g, want %.12g (only its new observation)", est.RemainingSeconds, want)
	}
}

func TestObserveIgnoresBadObservations(t *testing.T) {
	tests := []struct {
		name          string
		workers       int
		seconds, work float64
	}{
		{name: "zero workers", workers: 0, seconds: 60, work: 10},
		{name: "negative workers", workers: -2, seconds: 60, work: 10},
		{name: "zero seconds", workers: 4, seconds: 0, work: 10},
		{name: "negative seconds", workers: 4, seconds: -60, work: 10},
		{name: "NaN seconds", workers: 4, seconds: math.NaN(), work: 10},
		{name: "NaN work", workers: 4, seconds: 60, work: math.NaN()},
		{name: "infinite work", workers: 4, seconds: 60, work: math.Inf(1)},
		{name: "minus infinite work", workers: 4, seconds: 60, work: math.Inf(-1)},
		{name: "negative work", workers: 4, seconds: 60, work: -5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Alone, it leaves the job unknown.
			c := New()
			c.Observe("j", "app", tc.workers, tc.seconds, tc.work)
			if est := c.Estimate("j", "app", 100, 4); est.RemainingSeconds != -1 {
				t.Errorf("after only a bad observation: RemainingSeconds = %v, want -1", est.RemainingSeconds)
			}

			// Among good ones, it changes nothing.
			c = New()
			observe(c, "j", "app", 1, 60, 2, 0.1)
			observe(c, "j", "app", 4, 60, 2, 0.1)
			want := c.Estimate("j", "app", 100, 8)
			c.Observe("j", "app", tc.workers, tc.seconds, tc.work)
			if got := c.Estimate("j", "app", 100, 8); !reflect.DeepEqual(got, want) {
				t.Errorf("Estimate after a bad observation = %+v, want %+v", got, want)
			}
		})
	}
}

func TestEstimateZeroWorkIsNoEvidence(t *testing.T) {
	// A restart interval: time passed, nothing was done. It must not make
	// the job look infinitely slow.
	c := New()
	observe(c, "j", "app", 1, 60, 2, 0.1)
	observe(c, "j", "app", 4, 60, 2, 0.1)
	want := c.Estimate("j", "app", 100, 8)
	c.Observe("j", "app", 8, 30, 0)
	if got := c.Estimate("j", "app", 100, 8); !reflect.DeepEqual(got, want) {
		t.Errorf("Estimate after a zero-work observation = %+v, want %+v", got, want)
	}
}

func TestEstimateCurveLength(t *testing.T) {
	tests := []struct {
		maxWorkers, wantLen int
	}{
		{-3, 2}, {0, 2}, {1, 2}, {2, 3}, {16, 17},
	}
	c := New()
	observe(c, "j", "app", 1, 60, 2, 0.1)
	observe(c, "j", "app", 4, 60, 2, 0.1)
	for _, tc := range tests {
		for _, job := range []string{"j", "unknown-job"} {
			for _, app := range []string{"app", "unknown-app"} {
				est := c.Estimate(job, app, 100, tc.maxWorkers)
				if len(est.Speedup) != tc.wantLen {
					t.Errorf("Estimate(%s, %s, maxWorkers %d): curve length %d, want %d", job, app, tc.maxWorkers, len(est.Speedup), tc.wantLen)
					continue
				}
				if est.Speedup[0] != 0 || est.Speedup[1] != 1 {
					t.Errorf("Estimate(%s, %s, maxWorkers %d): S(0), S(1) = %v, %v, want 0, 1", job, app, tc.maxWorkers, est.Speedup[0], est.Speedup[1])
				}
				// The curve agrees with model.Estimates' reading of it.
				if got := est.SpeedupAt(tc.wantLen + 5); got != est.Speedup[tc.wantLen-1] {
					t.Errorf("SpeedupAt beyond the end = %v, want the last value %v", got, est.Speedup[tc.wantLen-1])
				}
			}
		}
	}
}

func TestEstimateFitBounds(t *testing.T) {
	tests := []struct {
		name string
		// rates maps a worker count to the observed work per second.
		rates      map[int]float64
		wantSerial float64
		wantRate1  float64
	}{
		{
			// k/rate: 1 and 0.8, slope -0.2: superlinear, clamped up.
			name:       "superlinear clamped to MinSerial",
			rates:      map[int]float64{1: 1, 2: 2.5},
			wantSerial: MinSerial,
			wantRate1:  1,
		},
		{
			// k/rate: 1 and 4, slope 3: a slowdown, clamped to 1.
			name:       "slowdown clamped to 1",
			rates:      map[int]float64{1: 1, 2: 0.5},
			wantSerial: 1,
			wantRate1:  1,
		},
		{
			// k/rate: 2/3 and 4, intercept -1: no Amdahl fit, so the
			// one-GPU rate is refitted with DefaultSerial as the mean of
			// rate(k)(1+s(k-1))/k.
			name:       "negative intercept falls back to DefaultSerial",
			rates:      map[int]float64{2: 3, 4: 1},
			wantSerial: DefaultSerial,
			wantRate1:  (3*(1+DefaultSerial)/2 + 1*(1+3*DefaultSerial)/4) / 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			for k, r := range tc.rates {
				c.Observe("j", "app", k, 10, 10*r)
			}
			est := c.Estimate("j", "app", 100, 4)
			curveDiff(t, "curve", amdahlCurve(tc.wantSerial, 4), est.Speedup)
			if want := 100 / tc.wantRate1; !near(est.RemainingSeconds, want) {
				t.Errorf("RemainingSeconds = %.12g, want %.12g", est.RemainingSeconds, want)
			}
		})
	}
}

// TestDropApp: an application a live job names stays; once its jobs have
// left, dropping it forgets what they left, and a later job of it starts
// from nothing.
func TestDropApp(t *testing.T) {
	c := New()
	c.Observe("j1", "app", 2, 100, 10)
	if c.DropApp("app") {
		t.Fatal("DropApp dropped an application a live job names")
	}
	c.Forget("j1")
	if len(c.App("app").Placements) == 0 {
		t.Fatal("the finished job left nothing to its application")
	}
	if !c.DropApp("app") {
		t.Fatal("DropApp kept an application no live job names")
	}
	if m := c.App("app"); len(m.Placements) != 0 {
		t.Errorf("App after DropApp = %+v, want nothing", m)
	}
	if !c.DropApp("never-seen") {
		t.Error("DropApp of an unknown application reports it known")
	}
	c.Observe("j2", "app", 1, 50, 5)
	if got := c.App("app"); len(got.Placements) != 0 {
		t.Errorf("a new job's application starts with %+v, want nothing", got)
	}
}
