package collector

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestMeasurementsAdd(t *testing.T) {
	var m Measurements
	for _, o := range []Observation{
		{Workers: 4, Nodes: 2, Seconds: 10, Work: 30},
		{Workers: 1, Seconds: 10, Work: 10},
		{Workers: 4, Nodes: 0, Seconds: 10, Work: 20},
		{Workers: 4, Nodes: 1, Seconds: 10, Work: 40},
		{Workers: 4, Nodes: 2, Seconds: 30, Work: 30},
		{Workers: 2, Nodes: 2, Seconds: 5, Work: 0}, // no work: kept, no evidence of speed
		// Workers of several GPUs: 2 pods of 4 GPUs on one node are not 4
		// pods of 1 on one node; 8 pods for 8 workers is one per worker.
		{Workers: 8, Nodes: 1, Pods: 2, Seconds: 10, Work: 60},
		{Workers: 8, Nodes: 1, Pods: 8, Seconds: 10, Work: 40},
		{Workers: 8, Nodes: 1, Seconds: 10, Work: 40},
	} {
		m.Add(o)
	}
	want := Measurements{Placements: []PlacementRate{
		{Workers: 1, Seconds: 10, Work: 10, Intervals: 1, SumSqRate: 1},
		{Workers: 2, Nodes: 2, Seconds: 5, Work: 0, Intervals: 1, SumSqRate: 0},
		{Workers: 4, Nodes: 0, Seconds: 10, Work: 20, Intervals: 1, SumSqRate: 4},
		{Workers: 4, Nodes: 1, Seconds: 10, Work: 40, Intervals: 1, SumSqRate: 16},
		{Workers: 4, Nodes: 2, Seconds: 40, Work: 60, Intervals: 2, SumSqRate: 9 + 1},
		{Workers: 8, Nodes: 1, Seconds: 20, Work: 80, Intervals: 2, SumSqRate: 16 + 16},
		{Workers: 8, Nodes: 1, Pods: 2, Seconds: 10, Work: 60, Intervals: 1, SumSqRate: 36},
	}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("after Add:\n got %+v\nwant %+v", m, want)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("Validate after Add: %v", err)
	}
}

func TestMeasurementsAddIgnoresInvalid(t *testing.T) {
	tests := []struct {
		name string
		o    Observation
	}{
		{"zero workers", Observation{Workers: 0, Seconds: 60, Work: 10}},
		{"negative workers", Observation{Workers: -2, Seconds: 60, Work: 10}},
		{"zero seconds", Observation{Workers: 4, Seconds: 0, Work: 10}},
		{"negative seconds", Observation{Workers: 4, Seconds: -60, Work: 10}},
		{"NaN seconds", Observation{Workers: 4, Seconds: math.NaN(), Work: 10}},
		{"infinite seconds", Observation{Workers: 4, Seconds: math.Inf(1), Work: 10}},
		{"NaN work", Observation{Workers: 4, Seconds: 60, Work: math.NaN()}},
		{"infinite work", Observation{Workers: 4, Seconds: 60, Work: math.Inf(1)}},
		{"negative work", Observation{Workers: 4, Seconds: 60, Work: -5}},
		{"negative nodes", Observation{Workers: 4, Nodes: -1, Seconds: 60, Work: 10}},
		{"more nodes than workers", Observation{Workers: 4, Nodes: 5, Seconds: 60, Work: 10}},
		{"pods not dividing workers", Observation{Workers: 4, Pods: 3, Seconds: 60, Work: 10}},
		{"more pods than workers", Observation{Workers: 4, Pods: 8, Seconds: 60, Work: 10}},
		{"fewer pods than nodes", Observation{Workers: 4, Nodes: 2, Pods: 1, Seconds: 60, Work: 10}},
		{"rate squared overflows", Observation{Workers: 4, Seconds: 1e-300, Work: 1e300}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m Measurements
			m.Add(Observation{Workers: 4, Seconds: 60, Work: 10})
			want := m.clone()
			m.Add(tc.o)
			if !reflect.DeepEqual(m, want) {
				t.Errorf("Add(%+v) changed %+v to %+v", tc.o, want, m)
			}
		})
	}
	t.Run("sums would overflow", func(t *testing.T) {
		var m Measurements
		m.Add(Observation{Workers: 1, Seconds: math.MaxFloat64, Work: 1})
		want := m.clone()
		m.Add(Observation{Workers: 1, Seconds: math.MaxFloat64, Work: 1})
		if !reflect.DeepEqual(m, want) {
			t.Errorf("overflowing Add changed %+v to %+v", want, m)
		}
	})
	t.Run("more than MaxPlacements", func(t *testing.T) {
		var m Measurements
		for k := 1; k <= MaxPlacements+10; k++ {
			m.Add(Observation{Workers: k, Seconds: 1, Work: 1})
		}
		if len(m.Placements) != MaxPlacements {
			t.Errorf("%d placements, want %d", len(m.Placements), MaxPlacements)
		}
		m.Add(Observation{Workers: 1, Seconds: 1, Work: 1}) // an existing one still adds
		if m.Placements[0].Intervals != 2 {
			t.Errorf("existing placement after the bound: %d intervals, want 2", m.Placements[0].Intervals)
		}
		if err := m.Validate(); err != nil {
			t.Error(err)
		}
	})
}

func TestMeasurementsAddRestart(t *testing.T) {
	var m Measurements
	for _, s := range []float64{30, -1, math.NaN(), math.Inf(1), MaxRestartSeconds + 1, 0, 90, MaxRestartSeconds} {
		m.AddRestart(s)
	}
	if want := (Measurements{Restarts: 4, RestartSeconds: 120 + MaxRestartSeconds}); !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v, want %+v", m, want)
	}
}

func TestMeasurementsMerge(t *testing.T) {
	m := Measurements{
		Placements: []PlacementRate{
			{Workers: 1, Seconds: 10, Work: 10, Intervals: 1, SumSqRate: 1},
			{Workers: 4, Nodes: 2, Seconds: 10, Work: 30, Intervals: 2, SumSqRate: 18},
		},
		Restarts: 1, RestartSeconds: 20,
	}
	m.Merge(Measurements{
		// Not sorted, and with placements Validate refuses.
		Placements: []PlacementRate{
			{Workers: 4, Nodes: 2, Seconds: 5, Work: 5, Intervals: 1, SumSqRate: 1},
			{Workers: 2, Nodes: 1, Seconds: 5, Work: 10, Intervals: 1, SumSqRate: 4},
			{Workers: 2, Nodes: 3, Seconds: 5, Work: 10, Intervals: 1, SumSqRate: 4},
			{Workers: 1, Seconds: -5, Work: 10, Intervals: 1, SumSqRate: 4},
			{Workers: 1, Seconds: 5, Work: 10, Intervals: 0, SumSqRate: 4},
		},
		Restarts: 2, RestartSeconds: 40,
	})
	want := Measurements{
		Placements: []PlacementRate{
			{Workers: 1, Seconds: 10, Work: 10, Intervals: 1, SumSqRate: 1},
			{Workers: 2, Nodes: 1, Seconds: 5, Work: 10, Intervals: 1, SumSqRate: 4},
			{Workers: 4, Nodes: 2, Seconds: 15, Work: 35, Intervals: 3, SumSqRate: 19},
		},
		Restarts: 3, RestartSeconds: 60,
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("after Merge:\n got %+v\nwant %+v", m, want)
	}
	// Restarts whose total no restart could reach are not merged.
	m.Merge(Measurements{Restarts: 1, RestartSeconds: 2 * MaxRestartSeconds})
	if m.Restarts != 3 || m.RestartSeconds != 60 {
		t.Errorf("implausible restarts merged: %d, %v", m.Restarts, m.RestartSeconds)
	}
}

func TestMeasurementsValidate(t *testing.T) {
	ok := PlacementRate{Workers: 4, Nodes: 2, Seconds: 10, Work: 5, Intervals: 1, SumSqRate: 0.25}
	with := func(f func(p *PlacementRate)) Measurements {
		p := ok
		f(&p)
		return Measurements{Placements: []PlacementRate{p}}
	}
	many := Measurements{}
	for k := 1; k <= MaxPlacements+1; k++ {
		many.Placements = append(many.Placements, PlacementRate{Workers: k, Seconds: 1, Intervals: 1})
	}
	tests := []struct {
		name    string
		m       Measurements
		wantErr string // "" for valid
	}{
		{"empty", Measurements{}, ""},
		{"one placement", Measurements{Placements: []PlacementRate{ok}, Restarts: 2, RestartSeconds: 50}, ""},
		{"unknown nodes", with(func(p *PlacementRate) { p.Nodes = 0 }), ""},
		{"zero work", with(func(p *PlacementRate) { p.Work, p.SumSqRate = 0, 0 }), ""},
		{"zero workers", with(func(p *PlacementRate) { p.Workers = 0 }), "placements[0].workers"},
		{"negative nodes", with(func(p *PlacementRate) { p.Nodes = -1 }), "placements[0].nodes"},
		{"nodes over workers", with(func(p *PlacementRate) { p.Nodes = 5 }), "placements[0].nodes"},
		{"zero seconds", with(func(p *PlacementRate) { p.Seconds = 0 }), "placements[0].seconds"},
		{"infinite seconds", with(func(p *PlacementRate) { p.Seconds = math.Inf(1) }), "placements[0].seconds"},
		{"NaN work", with(func(p *PlacementRate) { p.Work = math.NaN() }), "placements[0].work"},
		{"negative work", with(func(p *PlacementRate) { p.Work = -1 }), "placements[0].work"},
		{"infinite rate", with(func(p *PlacementRate) { p.Seconds, p.Work = 1e-300, 1e300 }), "placements[0].work: 1e+300 over seconds"},
		{"no intervals", with(func(p *PlacementRate) { p.Intervals = 0 }), "placements[0].intervals"},
		{"negative sumSqRate", with(func(p *PlacementRate) { p.SumSqRate = -1 }), "placements[0].sumSqRate"},
		{"infinite sumSqRate", with(func(p *PlacementRate) { p.SumSqRate = math.Inf(1) }), "placements[0].sumSqRate"},
		{"unsorted", Measurements{Placements: []PlacementRate{ok, {Workers: 2, Seconds: 1, Intervals: 1}}}, "placements[1]: workers 2, nodes 0, pods 0 not after"},
		{"pods unsorted", Measurements{Placements: []PlacementRate{{Workers: 4, Nodes: 1, Pods: 2, Seconds: 1, Intervals: 1}, {Workers: 4, Nodes: 1, Seconds: 1, Intervals: 1}}}, "placements[1]: workers 4, nodes 1, pods 0 not after"},
		{"pods not dividing workers", with(func(p *PlacementRate) { p.Pods = 3 }), "placements[0].pods: 3"},
		{"fewer pods than nodes", with(func(p *PlacementRate) { p.Workers, p.Nodes, p.Pods = 4, 2, 1 }), "placements[0].pods: 1"},
		{"one pod per worker not kept as 0", with(func(p *PlacementRate) { p.Pods = p.Workers }), "is kept as 0"},
		{"nodes unsorted", Measurements{Placements: []PlacementRate{ok, {Workers: 4, Nodes: 1, Seconds: 1, Intervals: 1}}}, "placements[1]: workers 4, nodes 1"},
		{"duplicate", Measurements{Placements: []PlacementRate{ok, ok}}, "without duplicates"},
		{"too many", many, "placements: 4097"},
		{"negative restarts", Measurements{Restarts: -1}, "restarts: -1"},
		{"restart seconds without restarts", Measurements{RestartSeconds: 3}, "restartSeconds: 3, more than"},
		{"restarts over a day each", Measurements{Restarts: 1, RestartSeconds: MaxRestartSeconds + 1}, "restartSeconds"},
		{"NaN restart seconds", Measurements{Restarts: 1, RestartSeconds: math.NaN()}, "restartSeconds: NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestMeasurementsJSONRoundTrip(t *testing.T) {
	var m Measurements
	m.Add(Observation{Workers: 1, Seconds: 30.5, Work: 61.25})
	m.Add(Observation{Workers: 8, Nodes: 2, Seconds: 0.1, Work: 1.0 / 3})
	m.Add(Observation{Workers: 8, Nodes: 2, Seconds: 29.9, Work: 200})
	m.AddRestart(42.125)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"placements":[{"workers":1,"seconds":30.5,"work":61.25,"intervals":1,"sumSqRate":4.0328`
	if !strings.HasPrefix(string(b), want) {
		t.Errorf("JSON %s, want it to begin %s", b, want)
	}
	var got Measurements
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, m)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
	if b, _ := json.Marshal(Measurements{}); string(b) != "{}" {
		t.Errorf("empty measurements encode as %s, want {}", b)
	}
}

// sameMeasurements is reflect.DeepEqual but for nil and empty placements.
func sameMeasurements(a, b Measurements) bool {
	if len(a.Placements) == 0 && len(b.Placements) == 0 {
		a.Placements, b.Placements = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func FuzzMeasurements(f *testing.F) {
	f.Add(`{}`)
	f.Add(`{"placements":[{"workers":1,"seconds":30,"work":60,"intervals":2,"sumSqRate":8.5},{"workers":4,"nodes":2,"seconds":10,"work":50,"intervals":1,"sumSqRate":25}],"restarts":2,"restartSeconds":75}`)
	f.Add(`{"placements":[{"workers":4,"nodes":1,"seconds":1,"work":3,"intervals":1,"sumSqRate":9},{"workers":4,"nodes":2,"seconds":1,"work":2,"intervals":1,"sumSqRate":4},{"workers":8,"nodes":2,"seconds":1,"work":3,"intervals":1,"sumSqRate":9}]}`)
	f.Add(`{"placements":[{"workers":2,"seconds":1e-300,"work":1e300,"intervals":1,"sumSqRate":0}]}`)
	f.Add(`{"placements":[{"workers":1,"seconds":1e300,"work":1e-300,"intervals":3,"sumSqRate":1e300}]}`)
	f.Add(`{"placements":[{"workers":2,"seconds":1,"work":1,"intervals":1,"sumSqRate":1},{"workers":1,"seconds":1,"work":1,"intervals":1,"sumSqRate":1}]}`)
	f.Add(`{"placements":[],"restarts":-1}`)
	f.Fuzz(func(t *testing.T, s string) {
		var m Measurements
		if json.Unmarshal([]byte(s), &m) != nil {
			return
		}
		if m.Validate() != nil {
			// Whatever it holds, a collector must take it without harm.
			c := New()
			c.SetJob("j", "app", m)
			checkEstimates(t, c, "j")
			if got, _ := c.Job("j"); got.Validate() != nil {
				t.Fatalf("SetJob kept invalid measurements: %v", got.Validate())
			}
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshal valid %+v: %v", m, err)
		}
		var back Measurements
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if !sameMeasurements(back, m) {
			t.Fatalf("round trip of %s:\n got %+v\nwant %+v", b, back, m)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("round trip no longer valid: %v", err)
		}
		c := New()
		c.SetGPUsPerNode(2)
		c.SetJob("j", "app", m)
		if got, _ := c.Job("j"); !sameMeasurements(got, m) {
			t.Fatalf("SetJob then Job:\n got %+v\nwant %+v", got, m)
		}
		checkEstimates(t, c, "j")
		c.Forget("j")
		if got := c.App("app"); !sameMeasurements(got, m) {
			t.Fatalf("Forget then App:\n got %+v\nwant %+v", got, m)
		}
		checkEstimates(t, c, "other")
	})
}

// checkEstimates fails unless job's estimates and detail are finite.
func checkEstimates(t *testing.T, c *Collector, job string) {
	t.Helper()
	est := c.Estimate(job, "app", 100, 16)
	if rs := est.RemainingSeconds; rs != -1 && !(rs >= 0 && finite(rs)) {
		t.Fatalf("RemainingSeconds %v", rs)
	}
	for k, s := range est.Speedup {
		if !(s >= 0) || !finite(s) {
			t.Fatalf("S(%d) = %v", k, s)
		}
	}
	d := c.Detail(job, "app")
	for _, x := range []float64{d.Rate1, d.Serial, d.NodePenalty, d.RestartSeconds, d.RemainingRelErr} {
		if !(x >= 0) || !finite(x) {
			t.Fatalf("Detail %+v", d)
		}
	}
	for _, p := range d.Placements {
		if !(p.Rate >= 0) || !finite(p.Rate) || !(p.RateRelErr >= 0) || !finite(p.RateRelErr) {
			t.Fatalf("Detail placement %+v", p)
		}
	}
}

// The estimates carry the restart time measured: the job's own, else its
// application's, else none.
func TestEstimateRestartSeconds(t *testing.T) {
	c := New()
	if e := c.Estimate("a", "app", 10, 4); e.RestartSeconds != 0 {
		t.Errorf("nothing measured: restart %v, want 0", e.RestartSeconds)
	}
	var app Measurements
	app.AddRestart(60)
	c.SetApp("app", app)
	if e := c.Estimate("a", "app", 10, 4); e.RestartSeconds != 60 {
		t.Errorf("the application's: restart %v, want 60", e.RestartSeconds)
	}
	var own Measurements
	own.AddRestart(20)
	own.AddRestart(40)
	c.SetJob("a", "app", own)
	if e := c.Estimate("a", "app", 10, 4); e.RestartSeconds != 30 {
		t.Errorf("the job's own: restart %v, want 30", e.RestartSeconds)
	}
}
