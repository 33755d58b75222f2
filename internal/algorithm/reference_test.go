package algorithm

// Naive, obviously-correct versions of the fast algorithms, straight from
// their definitions (one GPU at a time, full scans), and tests that the
// fast ones agree with them exactly.

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vodascheduler/voda/internal/model"
)

// refFirstFit gives each job in order its min if that many GPUs are still
// free, else nothing, and returns the GPUs left.
func refFirstFit(snap *model.Snapshot, order []int, total int) ([]int, int) {
	gpus := make([]int, len(snap.Jobs))
	for _, i := range order {
		if m := snap.Jobs[i].Spec.MinWorkers; m <= total {
			gpus[i] = m
			total -= m
		}
	}
	return gpus, total
}

func refMinThenRoundRobin(snap *model.Snapshot, order []int, total int) []int {
	gpus, spare := refFirstFit(snap, order, total)
	for spare > 0 {
		gave := false
		for _, i := range order {
			if spare > 0 && gpus[i] > 0 && gpus[i] < snap.Jobs[i].Spec.MaxWorkers {
				gpus[i]++
				spare--
				gave = true
			}
		}
		if !gave {
			break
		}
	}
	return gpus
}

func refElasticTiresias(snap *model.Snapshot, total, pendingLimit int) []int {
	order := sortedIndices(snap, byQueue)
	est := speedups(snap)
	gpus, spare := refFirstFit(snap, order, total)
	pending := 0
	for _, g := range gpus {
		if g == 0 {
			pending++
		}
	}
	hold := pending > pendingLimit
	for spare > 0 {
		best, bestGain, bestStep := -1, 0.0, 0
		for _, i := range order {
			j := &snap.Jobs[i]
			if hold && j.State.Queue >= 1 {
				continue
			}
			var gain float64
			step := 1
			switch g := gpus[i]; {
			case g == 0:
				step = j.Spec.MinWorkers
				if step > spare {
					continue
				}
				gain = est[i].SpeedupAt(step) / float64(step)
			case g < j.Spec.MaxWorkers:
				gain = est[i].SpeedupAt(g+1) - est[i].SpeedupAt(g)
			default:
				continue
			}
			if gain > 0 && (best < 0 || gain > bestGain) {
				best, bestGain, bestStep = i, gain, step
			}
		}
		if best < 0 {
			break
		}
		gpus[best] += bestStep
		spare -= bestStep
	}
	return gpus
}

// refAFSL is the tournament of afsl.go's comment, one full scan per GPU.
func refAFSL(snap *model.Snapshot, total int) []int {
	order := sortedIndices(snap, byRemaining)
	est := speedups(snap)
	gpus := make([]int, len(snap.Jobs))
	free := total
	// gains returns a job's challenger and incumbent gains and whether it
	// is a candidate.
	gains := func(i int) (longer, shorter float64, ok bool) {
		s := snap.Jobs[i].Spec
		switch g := gpus[i]; {
		case g == 0:
			return 1, math.Inf(1), s.MinWorkers <= free
		case g < s.MaxWorkers:
			s0, s1 := est[i].SpeedupAt(g), est[i].SpeedupAt(g+1)
			return (s1 - s0) / s1, (s1 - s0) / s0, s1-s0 > 0
		}
		return 0, 0, false
	}
	for free > 0 {
		w := -1
		for _, i := range order {
			l, _, ok := gains(i)
			if !ok {
				continue
			}
			if w < 0 {
				w = i
				continue
			}
			if _, s, _ := gains(w); l > s {
				w = i
			}
		}
		if w < 0 {
			break
		}
		step := 1
		if gpus[w] == 0 {
			step = snap.Jobs[w].Spec.MinWorkers
		}
		gpus[w] += step
		free -= step
	}
	return gpus
}

// speedups returns every job's estimates with unusable speedup curves
// (one entry, or a value at k >= 1 that is not finite and positive)
// replaced by nil: the definition the allocators' curves follow.
func speedups(snap *model.Snapshot) []model.Estimates {
	est := make([]model.Estimates, len(snap.Jobs))
	for i := range snap.Jobs {
		e := snap.Jobs[i].Est
		if len(e.Speedup) == 1 {
			e.Speedup = nil
		}
		for k := 1; k < len(e.Speedup); k++ {
			if v := e.Speedup[k]; !(v > 0) || math.IsInf(v, 1) {
				e.Speedup = nil
				break
			}
		}
		est[i] = e
	}
	return est
}

// mustInput checks snap as an allocator does.
func mustInput(t testing.TB, snap *model.Snapshot) *input {
	t.Helper()
	in, err := new(tracker).check(snap, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func gpusByName(snap *model.Snapshot, gpus []int) map[string]int {
	m := map[string]int{}
	for i, g := range gpus {
		if g > 0 {
			m[snap.Jobs[i].Spec.Name] = g
		}
	}
	return m
}

func TestFastMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for n := range 1500 {
		var snap *model.Snapshot
		if n%10 == 0 {
			snap = randomSnapshot(r, 200, 40)
		} else {
			snap = randomSnapshot(r, 30, 6)
		}
		total := snap.TotalGPUs()
		check := func(name string, a Allocator, want []int) {
			t.Helper()
			got := allocate(t, a, snap)
			if d := diffGPUs(gpusByName(snap, want), got.GPUs); d != "" {
				t.Fatalf("snapshot %d: %s differs from the reference (-want,+got):\n%s", n, name, d)
			}
		}
		check(NameElasticFIFO, &ElasticFIFO{}, refMinThenRoundRobin(snap, sortedIndices(snap, byArrival), total))
		check(NameElasticSRJF, &ElasticSRJF{}, refMinThenRoundRobin(snap, sortedIndices(snap, byRemaining), total))
		check(NameAFSL, &AFSL{}, refAFSL(snap, total))
		for _, limit := range []int{0, 2, 10} {
			et := &ElasticTiresias{las: lasQueues{threshold: 3600, starvation: 8}, pendingLimit: limit}
			check(NameElasticTiresias, et, refElasticTiresias(snap, total, limit))
		}
	}
}

// objective is FfDL's total speedup.
func objective(snap *model.Snapshot, est []model.Estimates, gpus []int) float64 {
	sum := 0.0
	for i, g := range gpus {
		sum += est[i].SpeedupAt(g)
	}
	return sum
}

func validCounts(t *testing.T, snap *model.Snapshot, gpus []int, total int) {
	t.Helper()
	sum := 0
	for i, g := range gpus {
		s := snap.Jobs[i].Spec
		if g != 0 && (g < s.MinWorkers || g > s.MaxWorkers) {
			t.Fatalf("job %s: %d GPUs outside [%d, %d]", s.Name, g, s.MinWorkers, s.MaxWorkers)
		}
		sum += g
	}
	if sum > total {
		t.Fatalf("%d GPUs handed out, %d exist", sum, total)
	}
}

// bruteForceFfDL enumerates every allocation of a tiny snapshot.
func bruteForceFfDL(snap *model.Snapshot, est []model.Estimates, total int) float64 {
	best := 0.0
	var rec func(i, left int, val float64)
	rec = func(i, left int, val float64) {
		if i == len(snap.Jobs) {
			best = max(best, val)
			return
		}
		rec(i+1, left, val)
		s := snap.Jobs[i].Spec
		for g := s.MinWorkers; g <= min(s.MaxWorkers, left); g++ {
			rec(i+1, left-g, val+est[i].SpeedupAt(g))
		}
	}
	rec(0, total, 0)
	return best
}

func TestFfDLDPIsOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for n := range 400 {
		snap := randomSnapshot(r, 6, 2)
		for i := range snap.Jobs { // keep enumeration small
			s := &snap.Jobs[i].Spec
			s.MaxWorkers = min(s.MaxWorkers, s.MinWorkers+4)
			s.RequestedWorkers = s.MinWorkers
		}
		total := snap.TotalGPUs()
		est := speedups(snap)
		in := mustInput(t, snap)
		capacity, ok := ffdlDPSize(in)
		if !ok {
			t.Fatal("tiny snapshot too big for the DP")
		}
		gpus := ffdlDP(in, sortedIndices(snap, byArrival), newCurves(snap), capacity)
		validCounts(t, snap, gpus, total)
		if got, want := objective(snap, est, gpus), bruteForceFfDL(snap, est, total); math.Abs(got-want) > 1e-9*max(1, want) {
			t.Fatalf("snapshot %d: DP objective %v, optimum %v", n, got, want)
		}
	}
}

// TestFfDLGreedyMatchesDPOnConcave: with concave curves and min = 1 the
// greedy fallback reaches the DP's optimum.
func TestFfDLGreedyMatchesDPOnConcave(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for n := range 500 {
		snap := randomSnapshot(r, 30, 5)
		for i := range snap.Jobs {
			j := &snap.Jobs[i]
			j.Spec.MinWorkers, j.Spec.RequestedWorkers = 1, 1
			if j.Spec.MaxWorkers > 40 {
				j.Spec.MaxWorkers = 12
			}
			j.Est.Speedup = concaveCurve(r, j.Spec.MaxWorkers+r.IntN(3)-1)
		}
		total := snap.TotalGPUs()
		est := speedups(snap)
		order := sortedIndices(snap, byArrival)
		in := mustInput(t, snap)
		capacity, ok := ffdlDPSize(in)
		if !ok {
			t.Fatal("snapshot too big for the DP")
		}
		dp := ffdlDP(in, order, newCurves(snap), capacity)
		greedy := ffdlGreedy(in, order, newCurves(snap))
		validCounts(t, snap, greedy, total)
		if a, b := objective(snap, est, dp), objective(snap, est, greedy); math.Abs(a-b) > 1e-9*max(1, a) {
			t.Fatalf("snapshot %d: DP objective %v, greedy %v", n, a, b)
		}
	}
}

// TestFfDLGreedyValid: on any input the greedy fallback respects the
// invariants and never does better than the optimum.
func TestFfDLGreedyValid(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for range 500 {
		snap := randomSnapshot(r, 30, 5)
		total := snap.TotalGPUs()
		est := speedups(snap)
		order := sortedIndices(snap, byArrival)
		in := mustInput(t, snap)
		greedy := ffdlGreedy(in, order, newCurves(snap))
		validCounts(t, snap, greedy, total)
		if capacity, ok := ffdlDPSize(in); ok {
			dp := ffdlDP(in, order, newCurves(snap), capacity)
			if a, b := objective(snap, est, dp), objective(snap, est, greedy); b > a+1e-9*max(1, a) {
				t.Fatalf("greedy %v beats the DP %v", b, a)
			}
		}
	}
}

// concaveCurve returns S(k) = k/(1+a(k-1)) for k < n, a random in
// [0.02, 0.32); nil for n < 1.
func concaveCurve(r *rand.Rand, n int) []float64 {
	if n < 1 {
		return nil
	}
	a := 0.02 + r.Float64()*0.3
	c := make([]float64, n)
	for k := 1; k < n; k++ {
		c[k] = float64(k) / (1 + a*float64(k-1))
	}
	return c
}

func TestMaxTreeFirstAbove(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for n := range 70 {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(r.IntN(10))
			if r.IntN(5) == 0 {
				vals[i] = math.Inf(-1)
			}
		}
		tree := newMaxTree(vals)
		for range 200 {
			if n > 0 && r.IntN(2) == 0 {
				p := r.IntN(n)
				vals[p] = float64(r.IntN(10))
				tree.set(p, vals[p])
			}
			from, bar := r.IntN(n+2), float64(r.IntN(11))-0.5
			if r.IntN(4) == 0 {
				bar = math.Inf(-1)
			}
			want := -1
			for p := from; p < n; p++ {
				if vals[p] > bar {
					want = p
					break
				}
			}
			if got := tree.firstAbove(from, bar); got != want {
				t.Fatalf("n=%d firstAbove(%d, %v) = %d, want %d (values %v)", n, from, bar, got, want, vals)
			}
		}
	}
}
