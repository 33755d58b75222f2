package sim

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/registry"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

func parametricSet(t testing.TB) *perfmodel.Set {
	t.Helper()
	var ms []perfmodel.Model
	for _, p := range perfmodel.BuiltinParametric() {
		ms = append(ms, p)
	}
	s, err := perfmodel.NewSet(ms...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newAlloc(t testing.TB, name string, params ...string) algorithm.Allocator {
	t.Helper()
	p, err := registry.ParseParams(params)
	if err != nil {
		t.Fatal(err)
	}
	a, err := algorithm.Builtin().New(name, p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func run(t testing.TB, jobs []workload.Job, o Options) *report.Run {
	t.Helper()
	if o.Nodes == 0 {
		o.Nodes, o.GPUsPerNode = 4, 4
	}
	if o.Placer == nil {
		o.Placer = placement.NewGreedy()
	}
	if o.Models == nil {
		o.Models = parametricSet(t)
	}
	r, err := Run(context.Background(), jobs, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// One linear job alone: its JCT is its work divided by its GPUs plus one
// restart cost, in both modes.
func TestSingleJobCompletesOnTime(t *testing.T) {
	jobs := []workload.Job{{Name: "a", App: "linear", Submit: 10, MinWorkers: 4, MaxWorkers: 4, Requested: 4, Epochs: 10}}
	// linear: 60 s of one-GPU work per epoch, perfect scaling.
	want := 10*60.0/4 + 30
	for _, tt := range []struct {
		name     string
		interval time.Duration
	}{{"event-driven", 0}, {"fixed interval", 60 * time.Second}} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, jobs, Options{Interval: tt.interval, Allocator: newAlloc(t, "FIFO")})
			j := r.Jobs[0]
			if !j.Done {
				t.Fatal("job did not finish")
			}
			// Event-driven: at once, as it starts on free GPUs (the rate
			// limit holds only changes to running jobs); fixed interval:
			// the next interval.
			start := 10.0
			if tt.interval > 0 {
				start = 60
			}
			if j.Start != start {
				t.Fatalf("started at %v, want %v", j.Start, start)
			}
			if got := j.End - start; math.Abs(got-want) > 1e-6 {
				t.Fatalf("run time %v, want %v", got, want)
			}
			if j.Restarts != 0 || j.GPUSeconds != want*4 {
				t.Fatalf("restarts %d, GPU-seconds %v; want 0 and %v", j.Restarts, j.GPUSeconds, want*4)
			}
		})
	}
}

// Restart cost: with a preemptive algorithm a job pays it on every new
// placement.
func TestRestartCostOnEveryPlacement(t *testing.T) {
	jobs := []workload.Job{
		{Name: "long", App: "linear", Submit: 0, MinWorkers: 1, MaxWorkers: 16, Requested: 16, Epochs: 100},
		{Name: "short", App: "linear", Submit: 100, MinWorkers: 1, MaxWorkers: 16, Requested: 8, Epochs: 2},
	}
	r := run(t, jobs, Options{Allocator: newAlloc(t, "ElasticFIFO"), RateLimit: -1})
	var long report.JobResult
	for _, j := range r.Jobs {
		if j.Name == "long" {
			long = j
		}
	}
	if long.Restarts < 2 {
		t.Fatalf("long job restarted %d times, want a shrink and a grow back", long.Restarts)
	}
	// 100 epochs of 60 s on 16 GPUs is 375 s without restarts and sharing.
	if long.End-long.Submit <= 375+30*float64(long.Restarts+1) {
		t.Fatalf("long job took %v s, too fast for %d restarts", long.End-long.Submit, long.Restarts)
	}
}

func TestDeterministic(t *testing.T) {
	jobs := workload.Generate(workload.GenOptions{Jobs: 60, Seed: 7})
	for _, name := range algorithm.Builtin().Names() {
		t.Run(name, func(t *testing.T) {
			o := Options{Allocator: newAlloc(t, name)}
			a, b := run(t, jobs, o), run(t, jobs, o)
			// Wall-clock figures differ from run to run.
			for _, r := range []*report.Run{a, b} {
				r.WallSeconds, r.PlaceTotal, r.PlaceMax = 0, 0, 0
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatal("two runs of the same input differ")
			}
			for _, j := range a.Jobs {
				if !j.Done {
					t.Fatalf("job %s did not finish", j.Name)
				}
			}
		})
	}
}

// Oracle and online estimates both finish every job; the oracle must not
// be worse for SRJF-style algorithms by more than noise on a workload where
// remaining times matter.
func TestOracleAndOnlineEstimates(t *testing.T) {
	jobs := workload.Generate(workload.GenOptions{Jobs: 80, Seed: 3})
	for _, oracle := range []bool{false, true} {
		r := run(t, jobs, Options{Allocator: newAlloc(t, "SRJF"), Estimator: estimatorOf(oracle)})
		s := report.Summarize(r)
		if s.Completed != len(jobs) {
			t.Fatalf("oracle=%v: %d of %d jobs completed", oracle, s.Completed, len(jobs))
		}
	}
}

// A job that can never fit does not hang the simulation: the run stops and
// reports it unfinished.
func TestUnrunnableJobStops(t *testing.T) {
	jobs := []workload.Job{
		{Name: "ok", App: "linear", Submit: 0, MinWorkers: 1, MaxWorkers: 1, Requested: 1, Epochs: 1},
		{Name: "huge", App: "linear", Submit: 0, MinWorkers: 100, MaxWorkers: 100, Requested: 100, Epochs: 1},
	}
	for _, interval := range []time.Duration{0, time.Minute} {
		r := run(t, jobs, Options{Allocator: newAlloc(t, "FIFO"), Interval: interval})
		done := map[string]bool{}
		for _, j := range r.Jobs {
			done[j.Name] = j.Done
		}
		if !done["ok"] || done["huge"] {
			t.Fatalf("interval %v: done = %v, want ok finished and huge not", interval, done)
		}
	}
}

func TestDurationJobsTakeTheirDuration(t *testing.T) {
	jobs := []workload.Job{{Name: "d", App: "amdahl", Submit: 0, MinWorkers: 1, MaxWorkers: 8, Requested: 8, Duration: 3600}}
	r := run(t, jobs, Options{Allocator: newAlloc(t, "FIFO"), Nodes: 2, GPUsPerNode: 4})
	// Packed on two nodes as the duration assumes, plus one restart cost.
	if got := r.Jobs[0].End; math.Abs(got-3630) > 1e-6 {
		t.Fatalf("duration job ended at %v, want 3630", got)
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	jobs := []workload.Job{{Name: "a", App: "linear", MinWorkers: 1, MaxWorkers: 1, Requested: 1}}
	a := newAlloc(t, "FIFO")
	tests := map[string]Options{
		"no nodes":    {GPUsPerNode: 4, Allocator: a, Placer: placement.NewGreedy(), Models: parametricSet(t)},
		"no models":   {Nodes: 1, GPUsPerNode: 4, Allocator: a, Placer: placement.NewGreedy()},
		"unknown app": {Nodes: 1, GPUsPerNode: 4, Allocator: a, Placer: placement.NewGreedy(), Models: parametricSet(t)},
	}
	for name, o := range tests {
		j := jobs
		if name == "unknown app" {
			j = []workload.Job{{Name: "a", App: "nope", MinWorkers: 1, MaxWorkers: 1, Requested: 1}}
		}
		if _, err := Run(context.Background(), j, o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Run(context.Background(), nil, Options{Nodes: 1, GPUsPerNode: 1, Allocator: a, Placer: placement.NewGreedy(), Models: parametricSet(t)}); err == nil {
		t.Error("empty workload: no error")
	}
}

// A worker range the workload states is kept; only formats without one
// (WidenMax) get the model's range.
func TestWorkerRangeWidenedOnlyWhenAsked(t *testing.T) {
	for _, widen := range []bool{false, true} {
		jobs := []workload.Job{{Name: "a", App: "linear", MinWorkers: 1, MaxWorkers: 2, Requested: 2, Epochs: 10, WidenMax: widen}}
		r := run(t, jobs, Options{Allocator: newAlloc(t, "ElasticFIFO")})
		peak := 0
		for _, c := range r.Changes {
			peak = max(peak, c.GPUs)
		}
		want := 2
		if widen {
			want = 16 // the whole 4 x 4 cluster
		}
		if peak != want || r.Jobs[0].MaxWorkers != want {
			t.Errorf("widen=%v: peak %d GPUs, max %d; want %d", widen, peak, r.Jobs[0].MaxWorkers, want)
		}
	}
}

// Every run records its placer and per-cycle placement metrics. Three
// rigid jobs on two 4-GPU nodes: a and b take two GPUs each, then c needs
// four. Greedy puts a and b on different nodes (most free GPUs first), so
// c must span both while a fits on one node; topology fits b next to a
// and c on the other node.
func TestRunRecordsPlacementMetrics(t *testing.T) {
	jobs := []workload.Job{
		{Name: "a", App: "linear", Submit: 0, MinWorkers: 2, MaxWorkers: 2, Requested: 2, Epochs: 20},
		{Name: "b", App: "linear", Submit: 0, MinWorkers: 2, MaxWorkers: 2, Requested: 2, Epochs: 20},
		{Name: "c", App: "linear", Submit: 0, MinWorkers: 4, MaxWorkers: 4, Requested: 4, Epochs: 40},
	}
	for _, tc := range []struct {
		placer   string
		interval time.Duration
		spread   bool // whether some cycle has a job spread out
	}{
		{placement.GreedyName, time.Minute, true},
		{placement.GreedyName, 0, true},
		{placement.TopologyName, time.Minute, false},
		{placement.TopologyName, 0, false},
	} {
		t.Run(fmt.Sprintf("%s/interval=%v", tc.placer, tc.interval), func(t *testing.T) {
			pl, err := placement.Builtin().New(tc.placer, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := run(t, jobs, Options{Nodes: 2, GPUsPerNode: 4, Interval: tc.interval, Allocator: newAlloc(t, "FIFO"), Placer: pl})
			if r.Placer != tc.placer {
				t.Errorf("Placer = %q, want %q", r.Placer, tc.placer)
			}
			// A cycle starts the jobs and one more sees each finish at
			// least: 600 s at 60 s per cycle gives about ten.
			if r.Cycles < 2 {
				t.Errorf("Cycles = %d, want at least 2", r.Cycles)
			}
			if r.PlaceTotal < 0 || r.PlaceMax > r.PlaceTotal {
				t.Errorf("PlaceTotal %v, PlaceMax %v: want 0 <= max <= total", r.PlaceTotal, r.PlaceMax)
			}
			if r.SpreadJobCycles < 0 || r.SpreadJobCycles > r.Cycles*len(jobs) {
				t.Errorf("SpreadJobCycles = %d, want within [0, %d]", r.SpreadJobCycles, r.Cycles*len(jobs))
			}
			if got := r.SpreadJobCycles > 0; got != tc.spread {
				t.Errorf("SpreadJobCycles = %d over %d cycles, want spread %v", r.SpreadJobCycles, r.Cycles, tc.spread)
			}
			s := report.Summarize(r)
			if s.Placer != tc.placer || s.Cycles != r.Cycles {
				t.Errorf("summary placer %q, cycles %d; want %q, %d", s.Placer, s.Cycles, tc.placer, r.Cycles)
			}
			for _, j := range r.Jobs {
				if !j.Done {
					t.Errorf("job %s did not finish", j.Name)
				}
			}
		})
	}
}

// BenchmarkSimulateGenerated measures the event-driven simulator on a
// large generated workload (5,000 jobs, 512 GPUs).
func BenchmarkSimulateGenerated(b *testing.B) {
	jobs := workload.Generate(workload.GenOptions{Jobs: 5000, Seed: 1})
	models := parametricSet(b)
	b.ReportAllocs()
	for b.Loop() {
		run(b, jobs, Options{Nodes: 64, GPUsPerNode: 8, Allocator: newAlloc(b, "ElasticFIFO"), Models: models})
	}
}

// BenchmarkSimulateGeneratedSizes is the simulator's cost table
// (docs/simulator.md): generated workloads of growing size on 128 nodes
// of 4 GPUs, event-driven, the default algorithm and placer. Cost should
// grow about linearly with the jobs; the largest runs past 2^23
// simulated seconds (97 days), where a float64 clock once hung.
func BenchmarkSimulateGeneratedSizes(b *testing.B) {
	models := parametricSet(b)
	for _, n := range []int{5000, 20000, 50000, 100000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			jobs := workload.Generate(workload.GenOptions{Jobs: n, Seed: 1})
			pl, err := placement.Builtin().New(placement.DefaultName, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				run(b, jobs, Options{Nodes: 128, GPUsPerNode: 4, Allocator: newAlloc(b, algorithm.DefaultName), Placer: pl, Models: models})
			}
		})
	}
}

// A workload row with max_workers 2^31-1 made the simulator allocate a
// speedup curve of 2^31 floats (16 GiB) and die. Curves stop at the
// cluster's GPUs, online and oracle alike.
func TestDefect_HugeMaxWorkersCostsNoMoreThanTheCluster(t *testing.T) {
	jobs := []workload.Job{
		{Name: "huge", App: "linear", Submit: 0, MinWorkers: 1, MaxWorkers: math.MaxInt32, Requested: 1, Epochs: 2},
		{Name: "small", App: "amdahl", Submit: 5, MinWorkers: 1, MaxWorkers: 2, Requested: 1, Epochs: 2},
	}
	for _, oracle := range []bool{false, true} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := run(t, jobs, Options{Allocator: newAlloc(t, "ElasticFIFO"), Estimator: estimatorOf(oracle)})
		runtime.ReadMemStats(&after)
		if s := report.Summarize(r); s.Completed != len(jobs) {
			t.Fatalf("oracle=%v: %d of %d jobs completed", oracle, s.Completed, len(jobs))
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("oracle=%v: the run allocated %d MiB for 16 GPUs", oracle, grew>>20)
		}
	}
}
