package progress

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func rep(gen string, workers int, steps int64, epoch float64) Report {
	return Report{Generation: gen, Workers: workers, Nodes: 1, Steps: steps, Epoch: epoch}
}

// TestIngestSequence follows a job through a start, steady reports, a
// resize and a report out of step with its allocation.
func TestIngestSequence(t *testing.T) {
	alloc := Allocation{Workers: 2, ChangedAt: at(0)}
	type step struct {
		r        Report
		now      float64
		alloc    Allocation
		used     bool
		reason   string
		restart  float64
		obsWork  float64 // epochs in the interval measured, when used
		obsSecs  float64
		measured int // placements measured so far
	}
	steps := []step{
		{rep("a", 2, 0, 0), 40, alloc, false, ReasonFirst, 40, 0, 0, 0},
		{rep("a", 2, 100, 0.5), 70, alloc, false, ReasonWarmUp, 0, 0, 0, 0},
		{rep("a", 2, 200, 1.0), 100, alloc, true, "", 0, 0.5, 30, 1},
		{rep("a", 2, 300, 1.5), 130, alloc, true, "", 0, 0.5, 30, 1},
		// Resized to 4 at 140: the new generation's first report at 160
		// measures a restart of 20 s.
		{rep("b", 4, 300, 1.5), 160, Allocation{Workers: 4, ChangedAt: at(140)}, false, ReasonFirst, 20, 0, 0, 1},
		{rep("b", 4, 400, 2.5), 190, Allocation{Workers: 4, ChangedAt: at(140)}, false, ReasonWarmUp, 0, 0, 0, 1},
		{rep("b", 4, 500, 3.5), 220, Allocation{Workers: 4, ChangedAt: at(140)}, true, "", 0, 1, 30, 2},
		// The scheduler shrank the job to 2, but it still runs on 4.
		{rep("b", 4, 600, 4.5), 250, Allocation{Workers: 2, ChangedAt: at(245)}, false, ReasonAllocation, 0, 0, 0, 2},
	}
	var s *State
	for i, st := range steps {
		next, out, err := Ingest(s, st.r, at(st.now), st.alloc)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if out.Used != st.used || out.Reason != st.reason || out.RestartSeconds != st.restart {
			t.Errorf("step %d: outcome %+v, want used %v reason %q restart %v", i, out, st.used, st.reason, st.restart)
		}
		if st.used && (out.Observation.Work != st.obsWork || out.Observation.Seconds != st.obsSecs || out.Observation.Workers != st.r.Workers) {
			t.Errorf("step %d: observation %+v, want %v epochs in %v s", i, out.Observation, st.obsWork, st.obsSecs)
		}
		if got := len(next.Measured.Placements); got != st.measured {
			t.Errorf("step %d: %d placements measured, want %d", i, got, st.measured)
		}
		s = &next
	}
	if s.Generations != 2 || s.Measured.Restarts != 2 || s.Measured.RestartSeconds != 60 {
		t.Errorf("final state: %d generations, %d restarts over %v s; want 2, 2, 60", s.Generations, s.Measured.Restarts, s.Measured.RestartSeconds)
	}
	if p, ok := s.Progress(9); !ok || p != 0.5 {
		t.Errorf("Progress(9 epochs) = %v, %v; want 0.5", p, ok)
	}
	if r, ok := s.RemainingEpochs(9); !ok || r != 4.5 {
		t.Errorf("RemainingEpochs(9) = %v, %v; want 4.5", r, ok)
	}
}

func TestIngestRefusesContradictions(t *testing.T) {
	alloc := Allocation{Workers: 2}
	prev, _, _ := Ingest(nil, Report{Generation: "g", Workers: 2, Steps: 100, Samples: 1000, Epoch: 2}, at(0), alloc)
	for _, c := range []struct {
		name   string
		r      Report
		field  string
		reason string
	}{
		{"steps decreased", Report{Generation: "g", Workers: 2, Steps: 99, Samples: 1000, Epoch: 2}, "steps", `99 is below 100, reported earlier in generation "g"`},
		{"samples decreased", Report{Generation: "g", Workers: 2, Steps: 100, Samples: 999, Epoch: 2}, "samples", "below"},
		{"epoch decreased", Report{Generation: "g", Workers: 2, Steps: 100, Samples: 1000, Epoch: 1.9}, "epoch", "below"},
		{"workers changed", Report{Generation: "g", Workers: 3, Steps: 100, Samples: 1000, Epoch: 2}, "workers", "changed from 2 to 3 within generation"},
	} {
		got, _, err := Ingest(&prev, c.r, at(30), alloc)
		if err == nil || err.Field != c.field || !strings.Contains(err.Reason, c.reason) {
			t.Errorf("%s: %v, want %s: ...%s...", c.name, err, c.field, c.reason)
		}
		if got.Latest.Steps != prev.Latest.Steps || got.Latest.Epoch != prev.Latest.Epoch || got.At != prev.At {
			t.Errorf("%s: the refused report changed the state", c.name)
		}
	}
	// A new generation may start lower: resumed from a checkpoint.
	if _, _, err := Ingest(&prev, Report{Generation: "h", Workers: 2, Steps: 50, Epoch: 1}, at(60), alloc); err != nil {
		t.Errorf("a new generation from a checkpoint: %v", err)
	}
}

// A restart cost is measured only for an allocation change after the
// previous generation began, and only within an hour.
func TestIngestRestartCost(t *testing.T) {
	prev, _, _ := Ingest(nil, rep("a", 2, 0, 0), at(100), Allocation{Workers: 2})
	for _, c := range []struct {
		name  string
		alloc Allocation
		want  float64
	}{
		{"change before the old generation", Allocation{Workers: 2, ChangedAt: at(50)}, 0},
		{"change after it", Allocation{Workers: 2, ChangedAt: at(150)}, 50},
		{"other worker count", Allocation{Workers: 4, ChangedAt: at(150)}, 0},
		{"over an hour", Allocation{Workers: 2, ChangedAt: at(101)}, 0},
	} {
		now := at(200)
		if c.name == "over an hour" {
			now = at(101 + 3601)
		}
		_, out, err := Ingest(&prev, rep("b", 2, 0, 0), now, c.alloc)
		if err != nil || out.RestartSeconds != c.want {
			t.Errorf("%s: restart %v (%v), want %v", c.name, out.RestartSeconds, err, c.want)
		}
	}
}

// A job whose pods hold 2 GPUs each reports its processes (4 on 2 pods,
// then 8 on 4): each measurement is kept under its pods, apart from what
// the same processes on pods of one GPU would measure.
func TestIngestKeepsPodsOfSeveralGPUs(t *testing.T) {
	var s *State
	for i, st := range []struct {
		r     Report
		now   float64
		alloc Allocation
	}{
		{rep("a", 4, 0, 0), 10, Allocation{Workers: 4, Pods: 2, ChangedAt: at(0)}},
		{rep("a", 4, 100, 0.5), 40, Allocation{Workers: 4, Pods: 2, ChangedAt: at(0)}},
		{rep("a", 4, 200, 1.0), 70, Allocation{Workers: 4, Pods: 2, ChangedAt: at(0)}},
		{rep("b", 8, 200, 1.0), 100, Allocation{Workers: 8, Pods: 4, ChangedAt: at(80)}},
		{rep("b", 8, 300, 2.0), 130, Allocation{Workers: 8, Pods: 4, ChangedAt: at(80)}},
		{rep("b", 8, 400, 3.0), 160, Allocation{Workers: 8, Pods: 4, ChangedAt: at(80)}},
	} {
		next, _, err := Ingest(s, st.r, at(st.now), st.alloc)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		s = &next
	}
	got := s.Measured.Placements
	if len(got) != 2 || got[0].Workers != 4 || got[0].Pods != 2 || got[1].Workers != 8 || got[1].Pods != 4 {
		t.Errorf("placements %+v, want 4 workers on 2 pods and 8 on 4", got)
	}
}
