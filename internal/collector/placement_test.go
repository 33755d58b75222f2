package collector

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"
)

// penaltyRate is the rate of k workers on n nodes when k/rate(k, n) =
// a + b(k-1) + c(n-1).
func penaltyRate(a, b, c float64, k, n int) float64 {
	return float64(k) / (a + b*float64(k-1) + c*float64(max(n, 1)-1))
}

// placement is a (workers, nodes) pair.
type placement struct{ k, n int }

// synthetic returns the measurements of seconds on each placement of a job
// following penaltyRate exactly.
func synthetic(a, b, c, seconds float64, ps ...placement) Measurements {
	var m Measurements
	for _, p := range ps {
		m.Add(Observation{Workers: p.k, Nodes: p.n, Seconds: seconds, Work: seconds * penaltyRate(a, b, c, p.k, p.n)})
	}
	return m
}

// penaltyCurve is Estimate's curve for serial fraction s, node penalty p
// and g GPUs a node.
func penaltyCurve(s, p float64, g, maxWorkers int) []float64 {
	c := make([]float64, maxWorkers+1)
	for k := 1; k <= maxWorkers; k++ {
		n := 1
		if g > 1 {
			n = (k + g - 1) / g
		}
		c[k] = float64(k) / (1 + s*float64(k-1) + p*float64(n-1))
	}
	return c
}

func within(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-12)
}

// The Pollux-like layout the brief names: enough to separate the three
// terms.
var nodeLayout = []placement{{1, 1}, {2, 1}, {4, 1}, {4, 2}, {8, 2}}

func TestPlacementKeys(t *testing.T) {
	c := New()
	c.ObserveAll([]Observation{
		{Job: "j", App: "app", Workers: 4, Nodes: 2, Seconds: 10, Work: 20},
		{Job: "j", App: "app", Workers: 4, Nodes: 1, Seconds: 10, Work: 30},
		{Job: "j", App: "app", Workers: 4, Seconds: 10, Work: 25},
		{Job: "j", App: "app", Workers: 4, Nodes: 2, Seconds: 10, Work: 40},
		{Job: "j", App: "app", Workers: 2, Nodes: 3, Seconds: 10, Work: 40}, // more nodes than workers: ignored
	})
	c.Observe("j", "app", 1, 5, 5) // Observe: nodes unknown
	m, ok := c.Job("j")
	if !ok {
		t.Fatal("Job(j) unknown")
	}
	want := []placement{{1, 0}, {4, 0}, {4, 1}, {4, 2}}
	var got []placement
	for _, p := range m.Placements {
		got = append(got, placement{p.Workers, p.Nodes})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("placements %v, want %v", got, want)
	}
	if p := m.Placements[3]; p.Seconds != 20 || p.Work != 60 || p.Intervals != 2 {
		t.Errorf("placement (4, 2) = %+v, want 20 s, 60 work, 2 intervals", p)
	}
	// Unknown nodes and one node are two placements, both one node in the
	// fit: no penalty can be identified from them.
	if d := c.Detail("j", "app"); d.NodePenalty != 0 || len(d.Placements) != 4 {
		t.Errorf("Detail = %+v, want no node penalty and 4 placements", d)
	}
	if _, ok := c.Job("other"); ok {
		t.Error("Job(other) known")
	}
}

func TestNodePenaltyFit(t *testing.T) {
	const a, b, cc = 0.5, 0.05, 0.2 // rate1 2, serial 0.1, penalty 0.4
	tests := []struct {
		name        string
		m           Measurements
		wantPenalty float64
	}{
		{name: "exact", m: synthetic(a, b, cc, 60, nodeLayout...), wantPenalty: cc / a},
		{name: "also on unknown nodes", m: synthetic(a, b, cc, 60, append([]placement{{2, 0}}, nodeLayout...)...), wantPenalty: cc / a},
		{name: "three placements suffice", m: synthetic(a, b, cc, 60, placement{1, 1}, placement{2, 1}, placement{2, 2}), wantPenalty: cc / a},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			c.SetJob("j", "app", tc.m)
			d := c.Detail("j", "app")
			if d.Source != SourceJob {
				t.Errorf("Source %q, want %q", d.Source, SourceJob)
			}
			for _, x := range []struct {
				what      string
				got, want float64
			}{{"Rate1", d.Rate1, 1 / a}, {"Serial", d.Serial, b / a}, {"NodePenalty", d.NodePenalty, tc.wantPenalty}} {
				if !within(x.got, x.want, 0.01) {
					t.Errorf("%s = %v, want %v within 1%%", x.what, x.got, x.want)
				}
			}
			c.SetGPUsPerNode(4)
			est := c.Estimate("j", "app", 100, 12)
			want := penaltyCurve(b/a, tc.wantPenalty, 4, 12)
			for k := range want {
				if !within(est.Speedup[k], want[k], 1e-6) {
					t.Errorf("S(%d) = %v, want %v", k, est.Speedup[k], want[k])
				}
			}
			if !within(est.RemainingSeconds, 100*a, 1e-6) {
				t.Errorf("RemainingSeconds = %v, want %v", est.RemainingSeconds, 100*a)
			}
		})
	}
	t.Run("noisy", func(t *testing.T) {
		// Several intervals a placement, each off by up to ±0.5%.
		r := rand.New(rand.NewSource(1))
		c := New()
		for i := 0; i < 20; i++ {
			for _, p := range nodeLayout {
				rate := penaltyRate(a, b, cc, p.k, p.n) * (1 + 0.01*(r.Float64()-0.5))
				c.ObserveAll([]Observation{{Job: "j", App: "app", Workers: p.k, Nodes: p.n, Seconds: 30, Work: 30 * rate}})
			}
		}
		d := c.Detail("j", "app")
		if !within(d.NodePenalty, cc/a, 0.05) || !within(d.Serial, b/a, 0.05) || !within(d.Rate1, 1/a, 0.01) {
			t.Errorf("Detail = %+v, want rate1 %v, serial %v, penalty %v", d, 1/a, b/a, cc/a)
		}
	})
	t.Run("faster across nodes: penalty 0", func(t *testing.T) {
		c := New()
		c.SetJob("j", "app", synthetic(a, b, -0.1, 60, nodeLayout...))
		if d := c.Detail("j", "app"); d.NodePenalty != 0 || d.Source != SourceJob {
			t.Errorf("Detail = %+v, want penalty 0 from the job", d)
		}
	})
}

func TestNodePenaltyUnidentifiable(t *testing.T) {
	const a, b, cc = 0.5, 0.05, 0.2
	tests := []struct {
		name string
		ps   []placement
		// sameAsUnknown: the estimates equal those of the same
		// measurements with nodes unknown, as the collector fitted before
		// it knew nodes; else the curve is Amdahl's law with wantSerial.
		sameAsUnknown bool
		wantSerial    float64
	}{
		{name: "all on one node", ps: []placement{{1, 1}, {2, 1}, {4, 1}, {8, 1}}, sameAsUnknown: true},
		{name: "two placements", ps: []placement{{2, 1}, {4, 2}}, sameAsUnknown: true},
		{name: "nodes grow with workers", ps: []placement{{1, 1}, {2, 2}, {4, 4}}, sameAsUnknown: true},
		{name: "one worker count", ps: []placement{{4, 1}, {4, 2}, {4, 4}}, wantSerial: DefaultSerial},
		// Two placements of 4 workers on one node each: the fit sees both.
		{name: "unknown and one node", ps: []placement{{1, 0}, {4, 0}, {4, 1}}, wantSerial: b / a},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			known, unknown := New(), New()
			for _, x := range []*Collector{known, unknown} {
				x.SetGPUsPerNode(2)
			}
			for _, p := range tc.ps {
				rate := penaltyRate(a, b, cc, p.k, p.n)
				known.ObserveAll([]Observation{{Job: "j", App: "app", Workers: p.k, Nodes: p.n, Seconds: 60, Work: 60 * rate}})
				unknown.Observe("j", "app", p.k, 60, 60*rate)
			}
			if d := known.Detail("j", "app"); d.NodePenalty != 0 {
				t.Errorf("NodePenalty = %v, want 0", d.NodePenalty)
			}
			got := known.Estimate("j", "app", 100, 8)
			if tc.sameAsUnknown {
				if want := unknown.Estimate("j", "app", 100, 8); !reflect.DeepEqual(got, want) {
					t.Errorf("Estimate = %+v, want as with nodes unknown %+v", got, want)
				}
			} else {
				curveDiff(t, "curve", amdahlCurve(tc.wantSerial, 8), got.Speedup)
			}
		})
	}
}

func TestNodePenaltyBorrowed(t *testing.T) {
	const app = "bert"
	// The application's history identifies a penalty.
	base := synthetic(0.5, 0.05, 0.2, 3600, nodeLayout...)
	tests := []struct {
		name string
		m    Measurements
		// wantSerial is the job's own; 0: the job was seen at one worker
		// count and borrows the application's.
		wantSerial float64
		ownPenalty bool
	}{
		{name: "two counts on one node", m: synthetic(1, 0.2, 0.5, 60, placement{1, 1}, placement{2, 1}), wantSerial: 0.2},
		{name: "two counts, nodes unknown", m: synthetic(0.5, 0.06, 0, 60, placement{1, 0}, placement{4, 0}), wantSerial: 0.12},
		{name: "one count", m: synthetic(1, 0.2, 0.5, 60, placement{2, 1})},
		// c = -0.05 fits exactly; under c >= 0 the fit is the line
		// through (1, 1) and the mean of (2, 1.2) and (2, 1.15).
		{name: "own penalty identified as none", m: synthetic(1, 0.2, -0.05, 60, placement{1, 1}, placement{2, 1}, placement{2, 2}), wantSerial: 0.175, ownPenalty: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			c.SetGPUsPerNode(2)
			c.SetApp(app, base)
			c.SetJob("j", app, tc.m)
			ad := c.Detail("unseen", app)
			if ad.Source != SourceApplication || !(ad.NodePenalty > 0) {
				t.Fatalf("application detail %+v: want a penalty", ad)
			}
			d := c.Detail("j", app)
			if d.Source != SourceJob {
				t.Errorf("Source %q, want %q", d.Source, SourceJob)
			}
			wantSerial, wantPenalty := tc.wantSerial, ad.NodePenalty
			if wantSerial == 0 {
				wantSerial = ad.Serial
			}
			if tc.ownPenalty {
				wantPenalty = 0
			}
			if !near(d.Serial, wantSerial) || !near(d.NodePenalty, wantPenalty) {
				t.Errorf("serial %v, penalty %v; want %v, %v", d.Serial, d.NodePenalty, wantSerial, wantPenalty)
			}
			curveDiff(t, "curve", penaltyCurve(wantSerial, wantPenalty, 2, 8), c.Estimate("j", app, 100, 8).Speedup)
		})
	}
}

func TestGPUsPerNode(t *testing.T) {
	const a, b, cc = 0.5, 0.05, 0.2
	for _, g := range []int{-1, 0, 1, 2, 3, 4, 8} {
		t.Run(fmt.Sprint(g), func(t *testing.T) {
			c := New()
			c.SetGPUsPerNode(g)
			c.SetJob("penalised", "app1", synthetic(a, b, cc, 60, nodeLayout...))
			c.SetJob("plain", "app2", synthetic(a, b, 0, 60, placement{1, 0}, placement{2, 0}, placement{8, 0}))
			curveDiff(t, "penalised", penaltyCurve(b/a, cc/a, g, 12), c.Estimate("penalised", "app1", 100, 12).Speedup)
			// Without a penalty the curve is Amdahl's law whatever the nodes.
			curveDiff(t, "plain", amdahlCurve(b/a, 12), c.Estimate("plain", "app2", 100, 12).Speedup)
		})
	}
}

func TestSetJobReplaces(t *testing.T) {
	m1 := synthetic(0.5, 0.05, 0, 60, placement{1, 1}, placement{4, 1})
	m2 := synthetic(1, 0.3, 0, 30, placement{2, 1}, placement{8, 1})
	c := New()
	c.Observe("j", "app", 1, 60, 1000) // replaced too
	c.SetJob("j", "app", m1)
	c.SetJob("j", "app", m2)
	if got, _ := c.Job("j"); !reflect.DeepEqual(got, m2) {
		t.Errorf("Job after SetJob = %+v, want %+v", got, m2)
	}
	only := New()
	only.SetJob("j", "app", m2)
	for _, job := range []string{"j", "unseen"} {
		if got, want := c.Estimate(job, "app", 100, 8), only.Estimate(job, "app", 100, 8); !reflect.DeepEqual(got, want) {
			t.Errorf("Estimate(%s) = %+v, want as if only m2 were known: %+v", job, got, want)
		}
	}
	// Job returns a copy; so is what SetJob keeps.
	got, _ := c.Job("j")
	got.Placements[0].Work = 1e9
	m2.Placements[0].Work = 1e9
	if again, _ := c.Job("j"); again.Placements[0].Work == 1e9 {
		t.Error("the collector's measurements share memory with the caller's")
	}
}

func TestAppBaseAndLiveJobs(t *testing.T) {
	const app, work = "resnet", 120.0
	one := func(seconds, work float64) Measurements {
		var m Measurements
		m.Add(Observation{Workers: 1, Seconds: seconds, Work: work})
		return m
	}
	c := New()
	c.SetApp(app, one(10, 10)) // rate 1
	remaining := func(what string, rate float64) {
		t.Helper()
		if got := c.Estimate("unseen", app, work, 4).RemainingSeconds; !near(got, work/rate) {
			t.Errorf("%s: application's RemainingSeconds = %v, want %v (rate %v)", what, got, work/rate, rate)
		}
	}
	remaining("base only", 1)
	c.Observe("j1", app, 1, 10, 30)
	remaining("base and j1", 40.0/20)
	c.SetJob("j2", app, one(10, 50))
	remaining("base, j1 and j2", 90.0/30)
	c.SetJob("j2", app, one(10, 20))
	remaining("j2 replaced", 60.0/30)

	c.Forget("j1")
	remaining("j1 forgotten", 60.0/30)
	c.Forget("j1")
	c.Forget("never")
	remaining("forgotten twice", 60.0/30)
	wantBase := one(10, 10)
	wantBase.Merge(one(10, 30))
	if got := c.App(app); !reflect.DeepEqual(got, wantBase) {
		t.Errorf("App after Forget(j1) = %+v, want %+v", got, wantBase)
	}
	c.Forget("j2")
	remaining("both forgotten", 60.0/30)
	wantBase.Merge(one(10, 20))
	if got := c.App(app); !reflect.DeepEqual(got, wantBase) || got.Placements[0].Intervals != 3 {
		t.Errorf("App after Forget(j2) = %+v, want %+v", got, wantBase)
	}

	// What the service persists restores the same view.
	restored := New()
	restored.SetApp(app, c.App(app))
	if got, want := restored.Estimate("unseen", app, work, 4), c.Estimate("unseen", app, work, 4); !reflect.DeepEqual(got, want) {
		t.Errorf("restored application: %+v, want %+v", got, want)
	}

	// A job seen again starts afresh; its application counts it once.
	c.Observe("j1", app, 1, 30, 30)
	remaining("j1 again", 90.0/60)

	// SetApp replaces the base, not the live jobs.
	// j1, at a seventh of the base's rate, counts at a quarter of it
	// (OutlierRatio): 1.75 a second over its 30 s.
	c.SetApp(app, one(10, 70))
	remaining("base replaced", (70+1.75*30)/40)
	c.SetApp(app, Measurements{})
	remaining("base emptied", 1)
	if got := c.App("unknown"); !reflect.DeepEqual(got, Measurements{}) {
		t.Errorf("App(unknown) = %+v", got)
	}
}

func TestJobChangesApplication(t *testing.T) {
	c := New()
	c.Observe("j", "x", 1, 10, 20)
	c.Observe("j", "y", 1, 10, 40)
	// A job belongs to the application it was last named with.
	if est := c.Estimate("unseen", "x", 100, 2); est.RemainingSeconds != -1 {
		t.Errorf("application x still counts j: %+v", est)
	}
	if est := c.Estimate("unseen", "y", 60, 2); !near(est.RemainingSeconds, 20) {
		t.Errorf("application y: RemainingSeconds %v, want 20 (all of j)", est.RemainingSeconds)
	}
	c.Forget("j")
	if len(c.App("x").Placements) != 0 || len(c.App("y").Placements) != 1 {
		t.Errorf("after Forget: x %+v, y %+v", c.App("x"), c.App("y"))
	}
}

func TestRestartSeconds(t *testing.T) {
	restarts := func(seconds ...float64) Measurements {
		var m Measurements
		for _, s := range seconds {
			m.AddRestart(s)
		}
		return m
	}
	tests := []struct {
		name      string
		setup     func(c *Collector)
		job       string
		want      float64
		wantKnown bool
	}{
		{name: "nothing", setup: func(*Collector) {}, job: "j"},
		{name: "the job's own", job: "j", want: 30, wantKnown: true, setup: func(c *Collector) {
			c.SetApp("app", restarts(100))
			c.SetJob("j", "app", restarts(20, 40))
		}},
		{name: "the application's base and live jobs", job: "j", want: 25, wantKnown: true, setup: func(c *Collector) {
			c.SetApp("app", restarts(10))
			c.SetJob("other", "app", restarts(40))
			c.Observe("j", "app", 1, 10, 10)
		}},
		{name: "a forgotten job's, through the base", job: "unseen", want: 15, wantKnown: true, setup: func(c *Collector) {
			c.SetJob("old", "app", restarts(10, 20))
			c.Forget("old")
		}},
		{name: "another application's tell nothing", job: "j", setup: func(c *Collector) {
			c.SetJob("other", "app2", restarts(10))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			tc.setup(c)
			got, ok := c.RestartSeconds(tc.job, "app")
			if got != tc.want || ok != tc.wantKnown {
				t.Errorf("RestartSeconds = %v, %v; want %v, %v", got, ok, tc.want, tc.wantKnown)
			}
			if d := c.Detail(tc.job, "app"); d.RestartSeconds != tc.want || d.RestartKnown != tc.wantKnown {
				t.Errorf("Detail restart = %v, %v; want %v, %v", d.RestartSeconds, d.RestartKnown, tc.want, tc.wantKnown)
			}
		})
	}
}

func TestDetail(t *testing.T) {
	c := New()
	obs := []Observation{
		// 1 worker: rates 1 and 3 over 10 s each: mean 2, sample standard
		// deviation √2, relative standard error √2/2/√2 = 0.5.
		{Workers: 1, Seconds: 10, Work: 10},
		{Workers: 1, Seconds: 10, Work: 30},
		// 2 workers, 2 nodes: rate 3.6 three times: no spread.
		{Workers: 2, Nodes: 2, Seconds: 5, Work: 18},
		{Workers: 2, Nodes: 2, Seconds: 5, Work: 18},
		{Workers: 2, Nodes: 2, Seconds: 5, Work: 18},
		// 4 workers: one interval: no spread measured.
		{Workers: 4, Seconds: 8, Work: 40},
	}
	for _, o := range obs {
		o.Job, o.App = "j", "app"
		c.ObserveAll([]Observation{o})
	}
	m, _ := c.Job("j")
	m.AddRestart(45)
	c.SetJob("j", "app", m)

	d := c.Detail("j", "app")
	f := fitMeasurements(&m, prior{serial: DefaultSerial})
	want := Detail{
		Source: SourceJob, Rate1: f.rate1, Serial: f.serial, NodePenalty: 0,
		Placements: []PlacementDetail{
			{Workers: 1, Seconds: 20, Intervals: 2, Rate: 2, RateRelErr: 0.5},
			{Workers: 2, Nodes: 2, Seconds: 15, Intervals: 3, Rate: 3.6, RateRelErr: 0},
			{Workers: 4, Seconds: 8, Intervals: 1, Rate: 5, RateRelErr: 0},
		},
		RestartSeconds: 45, RestartKnown: true,
		RemainingRelErr: (20*0.5 + 15*0) / 35,
	}
	if !near(d.Placements[0].RateRelErr, 0.5) {
		t.Errorf("RateRelErr of 1 worker = %v, want 0.5", d.Placements[0].RateRelErr)
	}
	d.Placements[0].RateRelErr = 0.5
	if !near(d.RemainingRelErr, want.RemainingRelErr) {
		t.Errorf("RemainingRelErr = %v, want %v", d.RemainingRelErr, want.RemainingRelErr)
	}
	d.RemainingRelErr = want.RemainingRelErr
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Detail:\n got %+v\nwant %+v", d, want)
	}
	// The fit is Estimate's.
	est := c.Estimate("j", "app", 100, 4)
	if !near(est.RemainingSeconds, 100/d.Rate1) || !near(serialOf(est.Speedup), d.Serial) {
		t.Errorf("Detail's fit %+v disagrees with Estimate %+v", d, est)
	}

	// An unseen job of the application: its fit and spread, no placements.
	u := c.Detail("unseen", "app")
	if u.Source != SourceApplication || u.Rate1 != d.Rate1 || u.Placements != nil || !near(u.RemainingRelErr, want.RemainingRelErr) {
		t.Errorf("unseen job's Detail = %+v", u)
	}
	// Nothing known.
	if got, want := New().Detail("j", "app"), (Detail{Source: SourceDefault, Serial: DefaultSerial}); !reflect.DeepEqual(got, want) {
		t.Errorf("Detail with nothing known = %+v, want %+v", got, want)
	}
	// A job with no work measured yet: its placements, the application's fit.
	c.Observe("restarting", "app", 8, 30, 0)
	r := c.Detail("restarting", "app")
	if r.Source != SourceApplication || len(r.Placements) != 1 || r.Placements[0].Rate != 0 {
		t.Errorf("Detail of a job with no work done = %+v", r)
	}
}

func TestDeterminism(t *testing.T) {
	type entry struct {
		job, app string
		m        Measurements
	}
	var entries []entry
	for i := 0; i < 6; i++ {
		app := fmt.Sprint("app", i%2)
		m := synthetic(0.5+0.1*float64(i), 0.05, 0.1*float64(i%3), 60, nodeLayout[i%3:]...)
		m.AddRestart(float64(10 * i))
		entries = append(entries, entry{fmt.Sprint("j", i), app, m})
	}
	var base Measurements
	base.Add(Observation{Workers: 2, Nodes: 1, Seconds: 0.1, Work: 0.7})
	type result struct {
		est    map[string]any
		detail map[string]Detail
	}
	run := func(order []int, baseFirst bool) result {
		c := New()
		c.SetGPUsPerNode(2)
		if baseFirst {
			c.SetApp("app0", base)
		}
		for _, i := range order {
			c.SetJob(entries[i].job, entries[i].app, entries[i].m)
		}
		if !baseFirst {
			c.SetApp("app0", base)
		}
		r := result{est: map[string]any{}, detail: map[string]Detail{}}
		for _, e := range append(entries, entry{job: "unseen", app: "app0"}, entry{job: "unseen", app: "app1"}) {
			r.est[e.job+e.app] = c.Estimate(e.job, e.app, 100, 8)
			r.detail[e.job+e.app] = c.Detail(e.job, e.app)
		}
		return r
	}
	want := run([]int{0, 1, 2, 3, 4, 5}, true)
	r := rand.New(rand.NewSource(7))
	for i := 0; i < 20; i++ {
		order := r.Perm(len(entries))
		if got := run(order, i%2 == 0); !reflect.DeepEqual(got, want) {
			t.Fatalf("order %v: results differ", order)
		}
	}

	// Observations of different jobs in any interleaving. (Sums of one
	// placement in another order may differ by rounding; these are exact.)
	var obs []Observation
	for i := 0; i < 4; i++ {
		for _, p := range nodeLayout {
			obs = append(obs, Observation{Job: fmt.Sprint("j", i), App: "app", Workers: p.k, Nodes: p.n, Seconds: 4, Work: float64(4 * (i + p.k + p.n))})
		}
	}
	estimates := func(obs []Observation) []any {
		c := New()
		c.SetGPUsPerNode(4)
		c.ObserveAll(obs)
		var out []any
		for _, job := range []string{"j0", "j1", "j2", "j3", "unseen"} {
			out = append(out, c.Estimate(job, "app", 100, 8), c.Detail(job, "app"))
		}
		return out
	}
	wantObs := estimates(obs)
	for i := 0; i < 20; i++ {
		shuffled := append([]Observation(nil), obs...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := estimates(shuffled); !reflect.DeepEqual(got, wantObs) {
			t.Fatalf("shuffled observations: results differ")
		}
	}
}

// benchCollector holds 1,000 jobs of 10 applications, each measured on 4
// placements, some across nodes.
func benchCollector() (c *Collector, jobs, apps []string, ms []Measurements) {
	c = New()
	c.SetGPUsPerNode(4)
	jobs, apps, ms = make([]string, 1000), make([]string, 1000), make([]Measurements, 1000)
	for i := range jobs {
		jobs[i], apps[i] = fmt.Sprint("job", i), fmt.Sprint("app", i%10)
		ps := []placement{{1 + i%2, 1}, {2, 1 + i%2}, {4, 1}, {8, 1 + i%3}}
		ms[i] = synthetic(0.5+float64(i%7)/10, 0.05, 0.1, 60, ps...)
		c.SetJob(jobs[i], apps[i], ms[i])
	}
	return c, jobs, apps, ms
}

// BenchmarkEstimate estimates the jobs in turn, as a scheduling round does.
func BenchmarkEstimate(b *testing.B) {
	c, jobs, apps, _ := benchCollector()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.Estimate(jobs[i%len(jobs)], apps[i%len(jobs)], 1000, 16)
	}
}

// BenchmarkSetJob replaces a job's measurements, as each stored report does.
func BenchmarkSetJob(b *testing.B) {
	c, jobs, apps, ms := benchCollector()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.SetJob(jobs[i%len(jobs)], apps[i%len(jobs)], ms[(i+1)%len(ms)])
	}
}

// BenchmarkSetJobEstimate is the worst case of SetJob: each is followed by
// an Estimate, which sums the application's 100 live jobs again and fits.
func BenchmarkSetJobEstimate(b *testing.B) {
	c, jobs, apps, ms := benchCollector()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		j := i % len(jobs)
		c.SetJob(jobs[j], apps[j], ms[(i+1)%len(ms)])
		c.Estimate(jobs[j], apps[j], 1000, 16)
	}
}
