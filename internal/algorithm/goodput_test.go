package algorithm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/model"
)

// TestGoodputBatch: Batch holds Est.BatchAt(k) for the jobs given k > 0
// GPUs whose estimates name a batch size, and nothing else.
func TestGoodputBatch(t *testing.T) {
	snap := snapshot([]int{8},
		// 2 GPUs: Batch[2].
		job("two", 1, 1, 2, rem(100), batch(0, 32, 64, 128)),
		// 5 GPUs, beyond the slice's end: the last entry.
		job("five", 1, 1, 5, rem(200), batch(0, 32, 64)),
		// Fixed batch (nil): not listed.
		job("fixed", 1, 1, 1, rem(300)),
		// A single entry reads as unknown: not listed.
		job("short", 1, 1, 1, rem(300), batch(0)),
		// No GPUs left: not listed.
		job("waits", 1, 1, 1, rem(400), batch(0, 16)))
	got := allocate(t, mustNew(t, NameGoodput), snap)
	if d := diffGPUs(map[string]int{"two": 2, "five": 5, "fixed": 1}, got.GPUs); d != "" {
		t.Fatalf("GPUs (-want,+got):\n%s", d)
	}
	if want := map[string]int{"two": 64, "five": 64}; !reflect.DeepEqual(got.Batch, want) {
		t.Errorf("Batch = %v, want %v", got.Batch, want)
	}
	// No job with a batch size: no map.
	got = allocate(t, mustNew(t, NameGoodput), snapshot([]int{8}, job("a", 1, 1, 4, rem(100))))
	if got.Batch != nil {
		t.Errorf("Batch = %v, want nil", got.Batch)
	}
}

// goodputSnapshot is randomSnapshot with restart times and batch sizes.
func goodputSnapshot(r *rand.Rand, maxJobs, maxNodes int) *model.Snapshot {
	s := randomSnapshot(r, maxJobs, maxNodes)
	for i := range s.Jobs {
		e := &s.Jobs[i].Est
		switch r.IntN(4) {
		case 0: // unknown
		case 1:
			e.RestartSeconds = []float64{-1, math.NaN(), math.Inf(1)}[r.IntN(3)]
		default:
			e.RestartSeconds = r.Float64() * 120
		}
		if st := &s.Jobs[i].State; st.GPUs > 0 && r.IntN(2) == 0 {
			st.PrevGPUs = r.IntN(2*st.GPUs + 1)
			st.LastChange = s.Now.Add(-time.Duration(r.IntN(600)) * time.Second)
		}
		if r.IntN(2) == 0 {
			e.Batch = make([]int, 1+r.IntN(10))
			for k := 1; k < len(e.Batch); k++ {
				e.Batch[k] = 32 * k
			}
		}
	}
	return s
}

// TestGoodputShuffled: the answer does not depend on how the snapshot
// lists its jobs.
func TestGoodputShuffled(t *testing.T) {
	a := mustNew(t, NameGoodput)
	r := rand.New(rand.NewPCG(31, 32))
	for range 300 {
		snap := goodputSnapshot(r, 40, 6)
		want := allocate(t, a, snap)
		shuffled := *snap
		shuffled.Jobs = append([]model.Job(nil), snap.Jobs...)
		r.Shuffle(len(shuffled.Jobs), func(i, j int) {
			shuffled.Jobs[i], shuffled.Jobs[j] = shuffled.Jobs[j], shuffled.Jobs[i]
		})
		if got := allocate(t, a, &shuffled); !reflect.DeepEqual(want, got) {
			t.Fatalf("shuffling changed the answer:\n%v\n%v", want, got)
		}
	}
}

// TestGoodputProperties checks on random snapshots what Goodput promises
// beyond the Allocator contract: a running job grows only if the time
// saved pays back payback restarts, a settling job does not turn back,
// and Batch follows Est.BatchAt.
func TestGoodputProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, params := range [][]string{nil, {"payback=0"}, {"payback=3", "hold=1"}, {"payback=100", "hold=10"}, {"size=1", "settle=1"}, {"size=0", "settle=0"}} {
		a := mustNew(t, NameGoodput, params...)
		g := a.(*Goodput)
		for range 300 {
			snap := goodputSnapshot(r, 40, 6)
			got := allocate(t, a, snap)
			jobs := g.jobs(snap)
			held := 0
			for i := range snap.Jobs {
				held += max(snap.Jobs[i].State.GPUs, 0)
			}
			for i := range snap.Jobs {
				j := &snap.Jobs[i]
				name := j.Spec.Name
				c, k := j.State.GPUs, got.GPUs[name]
				if c > 0 && k > c && !g.paysBack(&jobs[i], c, k) {
					t.Fatalf("%v: %s grew from %d to %d without paying back", params, name, c, k)
				}
				// Settling jobs keep what they hold when the snapshot is
				// consistent (its jobs hold no more than its GPUs).
				if g.settling(snap, j) && held <= snap.TotalGPUs() {
					if p := j.State.PrevGPUs; (c >= p && k < c) || (c <= p && k > c) {
						t.Fatalf("%v: %s settling after %d -> %d turned back to %d", params, name, p, c, k)
					}
				}
				b, listed := got.Batch[name]
				if want := j.Est.BatchAt(k); (k > 0 && want > 0) != listed || (listed && b != want) {
					t.Fatalf("%v: %s on %d GPUs: Batch %d (listed %v), BatchAt %d", params, name, k, b, listed, want)
				}
			}
		}
	}
}

// BenchmarkGoodputRunning times Goodput on the benchmark snapshot after a
// first decision has started jobs and a third of them changed (shorter
// remaining time, another GPU count): the restart rounds' cost.
func BenchmarkGoodputRunning(b *testing.B) {
	for _, gpus := range []int{64, 800, 8000} {
		b.Run("jobs=10000/gpus="+sprint(gpus), func(b *testing.B) {
			snap := benchSnapshot(10000, gpus, 1)
			a := mustNew(b, NameGoodput)
			first, err := a.Allocate(snap)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(9, 9))
			for i := range snap.Jobs {
				j := &snap.Jobs[i]
				j.State.GPUs = first.GPUs[j.Spec.Name]
				if r.IntN(3) == 0 {
					j.Est.RemainingSeconds *= r.Float64()
					j.State.GPUs = 1 + r.IntN(j.Spec.MaxWorkers)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Allocate(snap); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// changed marks a running job's last change: from prev GPUs, secs seconds
// before the snapshot's time (at(100000)).
func changed(prev int, secs float64) jobOpt {
	return func(j *model.Job) {
		j.State.PrevGPUs = prev
		j.State.LastChange = at(100000).Add(-time.Duration(secs * float64(time.Second)))
	}
}

// TestGoodputLooksPastValleys: a curve that dips when a job spills onto a
// second node and rises past it (bert's and yolov3's measured curves do)
// still draws the job across the dip when the GPUs are free. A greedy one
// GPU at a time stopped at 4.
func TestGoodputLooksPastValleys(t *testing.T) {
	valley := curve(0, 1, 2, 3, 4, 3.5, 3.8, 4.5, 7)
	for _, tc := range []struct {
		name string
		gpus []int
		jobs []model.Job
		want map[string]int
	}{
		{"alone, idle cluster", []int{4, 4}, []model.Job{job("a", 1, 1, 8, rem(1e4), valley)}, map[string]int{"a": 8}},
		{"running at 4, payback met", []int{4, 4}, []model.Job{job("a", 1, 1, 8, rem(1e4), valley, running(4))}, map[string]int{"a": 8}},
		// Only 2 GPUs beyond 4 are free: the dip is not worth crossing.
		{"no room past the dip", []int{4, 2}, []model.Job{job("a", 1, 1, 8, rem(1e4), valley)}, map[string]int{"a": 4}},
		// A second job takes GPUs one at a time while they are worth more
		// to it than the jump is worth to a.
		{"shared", []int{4, 4, 4}, []model.Job{
			job("a", 1, 1, 8, rem(1e4), valley),
			job("b", 1, 1, 4, rem(1e4), curve(0, 1, 2, 3, 4)),
		}, map[string]int{"a": 8, "b": 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := allocate(t, mustNew(t, NameGoodput), snapshot(tc.gpus, tc.jobs...))
			if d := diffGPUs(tc.want, got.GPUs); d != "" {
				t.Errorf("GPUs (-want,+got):\n%s", d)
			}
		})
	}
}

// TestGoodputSettles: within (1 + settle) restarts of its last change a
// job may go on in the same direction or stop, but not turn back.
func TestGoodputSettles(t *testing.T) {
	linear := curve(0, 1, 2, 3, 4, 5, 6, 7, 8)
	// "short" is worth far more per GPU than "long": without settling it
	// takes all but what its max leaves.
	short := job("short", 1, 1, 6, rem(100), linear)
	for _, tc := range []struct {
		name   string
		params []string
		long   model.Job
		want   map[string]int
	}{
		{"grew 30 s ago: keeps its GPUs", nil,
			job("long", 1, 1, 8, rem(1e5), linear, running(4), restart(30), changed(2, 30)),
			map[string]int{"short": 4, "long": 4}},
		{"started 30 s ago: keeps its GPUs", nil,
			job("long", 1, 1, 8, rem(1e5), linear, running(4), restart(30), changed(0, 30)),
			map[string]int{"short": 4, "long": 4}},
		{"grew long ago: shrinks", nil,
			job("long", 1, 1, 8, rem(1e5), linear, running(4), restart(30), changed(2, 121)),
			map[string]int{"short": 6, "long": 2}},
		{"settle=0: shrinks at once", []string{"settle=0"},
			job("long", 1, 1, 8, rem(1e5), linear, running(4), restart(30), changed(2, 30)),
			map[string]int{"short": 6, "long": 2}},
		// Restart unknown: the default 30 s.
		{"grew 100 s ago, restart unknown", nil,
			job("long", 1, 1, 8, rem(1e5), linear, running(4), changed(2, 100)),
			map[string]int{"short": 4, "long": 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := allocate(t, mustNew(t, NameGoodput, tc.params...), snapshot([]int{4, 4}, short, tc.long))
			if d := diffGPUs(tc.want, got.GPUs); d != "" {
				t.Errorf("GPUs (-want,+got):\n%s", d)
			}
		})
	}
	// A job that shrank is not grown while it settles, even alone.
	for _, tc := range []struct {
		since float64
		want  int
	}{{30, 3}, {200, 8}} {
		j := job("a", 1, 1, 8, rem(1e5), linear, running(3), restart(30), changed(6, tc.since))
		got := allocate(t, mustNew(t, NameGoodput), snapshot([]int{4, 4}, j))
		if got.GPUs["a"] != tc.want {
			t.Errorf("shrank %v s ago: %d GPUs, want %d", tc.since, got.GPUs["a"], tc.want)
		}
	}
}

// waiting sets a waiting job's WaitingSince to secs before the snapshot's
// time (at(100000)).
func waiting(secs float64) jobOpt {
	return func(j *model.Job) {
		j.State.WaitingSince = at(100000).Add(-time.Duration(secs * float64(time.Second)))
	}
}

// TestGoodputServesStarvingJobs: a job whose claimed speedup is tiny is
// worth nothing per GPU next to a liar's linear curve, and waits; once it
// has waited starve seconds it is served its minimum ahead of every other
// job's step, but a settling job's keep.
func TestGoodputServesStarvingJobs(t *testing.T) {
	linear := curve(0, 1, 2, 3, 4, 5, 6, 7, 8)
	flat := curve(0, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6)
	liar := job("liar", 1, 1, 8, rem(10), linear)
	for _, tc := range []struct {
		name   string
		params []string
		jobs   []model.Job
		want   map[string]int
	}{
		{"waited less than starve", nil,
			[]model.Job{liar, job("honest", 2, 2, 8, rem(1e9), flat, waiting(1799))},
			map[string]int{"liar": 8, "honest": 0}},
		{"waited starve: its minimum first", nil,
			[]model.Job{liar, job("honest", 2, 2, 8, rem(1e9), flat, waiting(1800))},
			map[string]int{"liar": 6, "honest": 2}},
		{"starve=60", []string{"starve=60"},
			[]model.Job{liar, job("honest", 2, 2, 8, rem(1e9), flat, waiting(61))},
			map[string]int{"liar": 6, "honest": 2}},
		{"starve=+Inf: never", []string{"starve=+Inf"},
			[]model.Job{liar, job("honest", 2, 2, 8, rem(1e9), flat, waiting(1e9))},
			map[string]int{"liar": 8, "honest": 0}},
		{"unknown wait: not starving", nil,
			[]model.Job{liar, job("honest", 2, 2, 8, rem(1e9), flat)},
			map[string]int{"liar": 8, "honest": 0}},
		{"two starving: both served, in submission order", nil,
			[]model.Job{liar, job("a", 4, 4, 8, rem(1e9), flat, waiting(1e4)), job("b", 4, 4, 8, rem(1e9), flat, waiting(2e3), submitted(1))},
			map[string]int{"liar": 0, "a": 4, "b": 4}},
		{"more starving than GPUs: the earlier submitted", nil,
			[]model.Job{job("a", 6, 6, 8, rem(1e9), flat, waiting(2e3)), job("b", 6, 6, 8, rem(1e9), flat, waiting(1e4), submitted(1))},
			map[string]int{"a": 6, "b": 0}},
		{"a settling job keeps its GPUs first", nil,
			[]model.Job{job("liar", 1, 1, 8, rem(10), linear, running(8), restart(30), changed(0, 30)),
				job("honest", 2, 2, 8, rem(1e9), flat, waiting(1e4))},
			map[string]int{"liar": 8, "honest": 0}},
		{"a settled job is shrunk for it", nil,
			[]model.Job{job("liar", 1, 1, 8, rem(10), linear, running(8), restart(30), changed(0, 1000)),
				job("honest", 2, 2, 8, rem(1e9), flat, waiting(1e4))},
			map[string]int{"liar": 6, "honest": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := allocate(t, mustNew(t, NameGoodput, tc.params...), snapshot([]int{4, 4}, tc.jobs...))
			if d := diffGPUs(tc.want, got.GPUs); d != "" {
				t.Errorf("GPUs (-want,+got):\n%s", d)
			}
		})
	}
}

// TestGoodputStarvationBound replays cycles of a minute: jobs that claim
// a linear curve keep arriving, each worth far more per GPU than a job
// whose claimed speedup is tiny. The latter runs within starve plus a
// cycle of its submission, and again within starve plus a cycle of every
// time it loses its GPUs; without the bound it never runs.
func TestGoodputStarvationBound(t *testing.T) {
	const cycle = 60
	for _, tc := range []struct {
		name   string
		starve float64
		want   bool // the tiny job runs
	}{{"default", DefaultGoodputStarve, true}, {"starve=600", 600, true}, {"never", math.Inf(1), false}} {
		t.Run(tc.name, func(t *testing.T) {
			var params []string
			if tc.starve != DefaultGoodputStarve {
				params = append(params, fmt.Sprintf("starve=%v", tc.starve))
			}
			a := mustNew(t, NameGoodput, params...)
			linear := curve(0, 1, 2, 3, 4, 5, 6, 7, 8)
			tiny := job("tiny", 1, 1, 8, rem(1e9), curve(0, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6))
			tiny.State.WaitingSince = t0
			jobs := []model.Job{tiny}
			var ran int
			waitingSince := t0
			for c := 1; c <= 200; c++ {
				now := t0.Add(time.Duration(c*cycle) * time.Second)
				// A new fast job every ten minutes, each long enough to
				// want the whole cluster.
				if c%10 == 1 {
					jobs = append(jobs, job(fmt.Sprintf("fast%03d", c), 1, 1, 8, rem(1e4), linear, submitted(c*cycle)))
				}
				snap := &model.Snapshot{Now: now, GPUType: "test", Nodes: []model.Node{{Name: "n0", GPUs: 4}, {Name: "n1", GPUs: 4, Index: 1}}, Jobs: jobs}
				snap.Sort()
				got := allocate(t, a, snap)
				next := snap.Jobs[:0:0]
				for _, j := range snap.Jobs {
					k := got.GPUs[j.Spec.Name]
					if k != j.State.GPUs {
						j.State.PrevGPUs, j.State.LastChange = j.State.GPUs, now
					}
					switch {
					case k == 0 && j.State.GPUs > 0, k == 0 && j.State.WaitingSince.IsZero():
						j.State.WaitingSince = now
					case k > 0:
						j.State.WaitingSince = time.Time{}
					}
					j.State.GPUs = k
					if k > 0 {
						j.State.Status = model.StatusRunning
					} else {
						j.State.Status = model.StatusWaiting
					}
					if j.Spec.Name == "tiny" {
						if k > 0 {
							ran++
							waitingSince = time.Time{}
						} else if waitingSince.IsZero() {
							waitingSince = now
						}
						if !waitingSince.IsZero() && now.Sub(waitingSince).Seconds() > tc.starve+cycle {
							t.Fatalf("cycle %d: tiny has waited %v, over starve %v plus a cycle", c, now.Sub(waitingSince), tc.starve)
						}
					}
					next = append(next, j)
				}
				jobs = next
			}
			if (ran > 0) != tc.want {
				t.Errorf("tiny ran %d cycles of 200, want running: %v", ran, tc.want)
			}
		})
	}
}
