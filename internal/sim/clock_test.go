package sim

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/sim/perfmodel"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

// late is 2^23 s (97 days): past it a float64 of seconds resolves 1.86 ns,
// coarser than the nanoseconds the core keeps its due times in.
const late = 1 << 23

// offGrid is a fraction of a second that float64 seconds cannot hold
// between 2^23 and 2^24 s: 0.7 s is 375,809,638.4 steps of 2^-29 s, so
// the nearest float64 to late+k+offGrid seconds (any whole k) lies 0.75 ns
// below it, and a time read back from it rounds to a nanosecond early.
// The core's due times are its cycles' times plus whole seconds (rate
// limit, tick): cycles at such times have due times that are traps too.
const offGrid = 0.7

// lateWorkload is a generated workload whose jobs arrive from half an
// hour before late on, at offGrid past whole seconds.
func lateWorkload(n int, seed uint64) []workload.Job {
	jobs := workload.Generate(workload.GenOptions{Jobs: n, Seed: seed})
	for i := range jobs {
		jobs[i].Submit += late - 1800 + offGrid
	}
	return jobs
}

// A run past 2^23 simulated seconds finishes. The engine kept time as
// float64 seconds: a due time of the core read back from them fell a
// nanosecond short of itself, no cycle ran, the next event was now again,
// and the run never ended. The deadline turns such a hang into a failure.
func TestDefect_RunPastTwoToTheTwentyThreeSecondsFinishes(t *testing.T) {
	// The premise: a due time at offGrid past 2^23 s, read back from
	// float64 seconds, is a nanosecond early.
	due := (late+30)*time.Second + 700*time.Millisecond
	if back := time.Duration(math.Round(due.Seconds() * 1e9)); back >= due {
		t.Fatalf("%v read back from float64 seconds is %v, not early: the test's workloads set no trap", due, back)
	}
	tests := []struct {
		name     string
		jobs     []workload.Job
		interval time.Duration
		alg      string
	}{
		{name: "event-driven", jobs: lateWorkload(60, 1), alg: algorithm.DefaultName},
		{name: "event-driven/FIFO", jobs: lateWorkload(60, 2), alg: "FIFO"},
		{name: "event-driven/one long job", alg: algorithm.DefaultName, jobs: []workload.Job{
			// An hour on one GPU across 2^23 s, ticks every minute.
			{Name: "long", App: "amdahl", Submit: late - 120 + offGrid, MinWorkers: 1, MaxWorkers: 1, Requested: 1, Duration: 3600},
		}},
		{name: "interval", jobs: lateWorkload(60, 1), interval: time.Hour, alg: algorithm.DefaultName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			pl, err := placement.Builtin().New(placement.DefaultName, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Run(ctx, tt.jobs, Options{
				Nodes: 4, GPUsPerNode: 4, Interval: tt.interval,
				Allocator: newAlloc(t, tt.alg), Placer: pl, Models: parametricSet(t),
			})
			if err != nil {
				t.Fatalf("run: %v (the engine stalled)", err)
			}
			if s := report.Summarize(r); s.Completed != len(tt.jobs) {
				t.Fatalf("%d of %d jobs completed", s.Completed, len(tt.jobs))
			}
			if r.EndTime <= late {
				t.Fatalf("run ended at %v s, want past %v s", r.EndTime, late)
			}
			for _, j := range r.Jobs {
				if j.Start < j.Submit || j.End <= j.Start {
					t.Errorf("job %s: submitted %v, started %v, ended %v", j.Name, j.Submit, j.Start, j.End)
				}
				// In interval mode jobs start on the interval's grid,
				// exactly.
				if tt.interval > 0 && nanos(j.Start)%tt.interval != 0 {
					t.Errorf("job %s started at %v s, off the %v grid", j.Name, j.Start, tt.interval)
				}
			}
		})
	}
}

// rateModel is a model whose rate is whatever the test says: a broken
// model, to show what the engine does with one.
type rateModel struct{ rate float64 }

func (rateModel) Name() string                            { return "broken" }
func (rateModel) DefaultEpochs() int                      { return 3 }
func (rateModel) DefaultBatch() int                       { return 32 }
func (rateModel) MaxWorkers(int) int                      { return 4 }
func (rateModel) EpochProgress(e int) float64             { return 100 * float64(e) }
func (m rateModel) Rate([]int, int, int) (float64, error) { return m.rate, nil }

// An event loop that cannot move on reports it instead of hanging. An
// infinite rate predicts a job's finish at the end of its restart, where
// its first epoch has not begun: the next event is always now and nothing
// changes. A NaN rate would order before every event.
func TestDefect_StalledRunIsAnError(t *testing.T) {
	tests := []struct {
		name string
		rate float64
		want string
	}{
		{name: "infinite rate", rate: math.Inf(1), want: "stalled at 30s"},
		{name: "NaN rate", rate: math.NaN(), want: "predicts its finish in NaN s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			models, err := perfmodel.NewSet(rateModel{rate: tt.rate})
			if err != nil {
				t.Fatal(err)
			}
			jobs := []workload.Job{{Name: "a", App: "broken", MinWorkers: 1, MaxWorkers: 1, Requested: 1}}
			_, err = Run(ctx, jobs, Options{Nodes: 1, GPUsPerNode: 1, Allocator: newAlloc(t, "FIFO"), Placer: placement.NewGreedy(), Models: models})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// The engine's clock is whole nanoseconds: converting seconds rounds to
// the nearest and saturates instead of wrapping.
func TestNanos(t *testing.T) {
	tests := []struct {
		sec  float64
		want time.Duration
	}{
		{0, 0},
		{1.5, 1500 * time.Millisecond},
		{1e-9, 1},
		{0.4e-9, 0},
		{-2, -2 * time.Second},
		{late + 0.25, late*time.Second + 250*time.Millisecond},
		{1e12, math.MaxInt64}, // 31,700 years
		{math.Inf(1), math.MaxInt64},
		{math.NaN(), math.MaxInt64},
		{-1e12, math.MinInt64},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.sec), func(t *testing.T) {
			if got := nanos(tt.sec); got != tt.want {
				t.Errorf("nanos(%v) = %d, want %d", tt.sec, got, tt.want)
			}
		})
	}
}
