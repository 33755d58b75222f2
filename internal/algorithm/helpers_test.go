package algorithm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// jobOpt adjusts a test job.
type jobOpt func(*model.Job)

func submitted(sec int) jobOpt { return func(j *model.Job) { j.Spec.SubmitTime = at(sec) } }
func rem(s float64) jobOpt     { return func(j *model.Job) { j.Est.RemainingSeconds = s } }
func curve(s ...float64) jobOpt {
	return func(j *model.Job) { j.Est.Speedup = s }
}
func running(gpus int) jobOpt {
	return func(j *model.Job) { j.State.GPUs, j.State.Status = gpus, model.StatusRunning }
}
func restart(s float64) jobOpt { return func(j *model.Job) { j.Est.RestartSeconds = s } }
func batch(b ...int) jobOpt    { return func(j *model.Job) { j.Est.Batch = b } }
func queue(q, sinceSec int) jobOpt {
	return func(j *model.Job) { j.State.Queue, j.State.QueueSince = q, at(sinceSec) }
}

// job returns a job with the given worker bounds, submitted at t0, with an
// unknown remaining time and no speedup curve.
func job(name string, minW, req, maxW int, opts ...jobOpt) model.Job {
	j := model.Job{
		Spec: model.JobSpec{Name: name, MinWorkers: minW, RequestedWorkers: req, MaxWorkers: maxW, SubmitTime: t0},
		Est:  model.Estimates{RemainingSeconds: -1},
	}
	for _, o := range opts {
		o(&j)
	}
	return j
}

// snapshot returns a snapshot with one node per entry of gpus.
func snapshot(gpus []int, jobs ...model.Job) *model.Snapshot {
	s := &model.Snapshot{Now: at(100000), GPUType: "test"}
	for i, g := range gpus {
		s.Nodes = append(s.Nodes, model.Node{Name: fmt.Sprintf("n%d", i), GPUs: g, Index: i})
	}
	s.Jobs = jobs
	return s
}

func mustNew(t testing.TB, name string, params ...string) Allocator {
	t.Helper()
	p, err := registry.ParseParams(params)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Builtin().New(name, p)
	if err != nil {
		t.Fatalf("New(%s, %v): %v", name, params, err)
	}
	return a
}

// snapshotCopy is a deep copy of a snapshot, to compare it with later.
type snapshotCopy struct{ s *model.Snapshot }

// fingerprint deep-copies s so that unchanged can tell whether anything in
// it, slices included, was modified.
func fingerprint(s *model.Snapshot) snapshotCopy {
	if s == nil {
		return snapshotCopy{}
	}
	c := *s
	c.Nodes = append([]model.Node(nil), s.Nodes...)
	c.Jobs = append([]model.Job(nil), s.Jobs...)
	for i := range c.Jobs {
		c.Jobs[i].State.Placement = s.Jobs[i].State.Placement.Clone()
		if sp := s.Jobs[i].Est.Speedup; sp != nil {
			c.Jobs[i].Est.Speedup = append([]float64{}, sp...)
		}
	}
	return snapshotCopy{&c}
}

// unchanged reports whether s still equals the copy, field by field, NaN
// equal to NaN.
func (c snapshotCopy) unchanged(s *model.Snapshot) bool {
	if c.s == nil || s == nil {
		return c.s == nil && s == nil
	}
	sameFloat := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	if !c.s.Now.Equal(s.Now) || c.s.GPUType != s.GPUType || len(c.s.Nodes) != len(s.Nodes) || len(c.s.Jobs) != len(s.Jobs) {
		return false
	}
	for i := range s.Nodes {
		if c.s.Nodes[i] != s.Nodes[i] {
			return false
		}
	}
	for i := range s.Jobs {
		a, b := c.s.Jobs[i], s.Jobs[i]
		if a.Spec != b.Spec || !a.State.Placement.Equal(b.State.Placement) ||
			(a.State.Placement == nil) != (b.State.Placement == nil) {
			return false
		}
		a.State.Placement, b.State.Placement = nil, nil
		if !reflect.DeepEqual(a.State, b.State) || !sameFloat(a.Est.RemainingSeconds, b.Est.RemainingSeconds) ||
			len(a.Est.Speedup) != len(b.Est.Speedup) || (a.Est.Speedup == nil) != (b.Est.Speedup == nil) {
			return false
		}
		for k := range a.Est.Speedup {
			if !sameFloat(a.Est.Speedup[k], b.Est.Speedup[k]) {
				return false
			}
		}
	}
	return true
}

// checkAllocation fails the test if a breaks any invariant of the
// Allocator contract on snap.
func checkAllocation(t testing.TB, snap *model.Snapshot, a model.Allocation) {
	t.Helper()
	if err := model.CheckAllocation(snap, a); err != nil {
		t.Fatalf("CheckAllocation: %v", err)
	}
	if a.GPUs == nil || a.Order == nil {
		t.Fatalf("nil GPUs or Order: %+v", a)
	}
	if len(a.Order) != len(snap.Jobs) {
		t.Fatalf("Order has %d jobs, snapshot %d", len(a.Order), len(snap.Jobs))
	}
	for name, g := range a.GPUs {
		if g <= 0 {
			t.Fatalf("job %s listed with %d GPUs; only positive counts belong in GPUs", name, g)
		}
	}
	if a.Total() > snap.TotalGPUs() {
		t.Fatalf("%d GPUs handed out, cluster has %d", a.Total(), snap.TotalGPUs())
	}
}

// allocate runs a on snap, checking the contract: no error, invariants,
// no mutation, same answer twice.
func allocate(t testing.TB, a Allocator, snap *model.Snapshot) model.Allocation {
	t.Helper()
	before := fingerprint(snap)
	got, err := a.Allocate(snap)
	if err != nil {
		t.Fatalf("%s: Allocate: %v", a.Name(), err)
	}
	if !before.unchanged(snap) {
		t.Fatalf("%s: Allocate modified the snapshot", a.Name())
	}
	checkAllocation(t, snap, got)
	again, err := a.Allocate(snap)
	if err != nil {
		t.Fatalf("%s: second Allocate: %v", a.Name(), err)
	}
	if !reflect.DeepEqual(got, again) {
		t.Fatalf("%s: two runs differ:\n%v\n%v", a.Name(), got, again)
	}
	return got
}

// diffGPUs describes the differences between two job -> GPUs maps (a
// missing job counts as 0) in "(-want,+got)" form, or "" if they agree.
func diffGPUs(want, got map[string]int) string {
	names := map[string]bool{}
	for n := range want {
		names[n] = true
	}
	for n := range got {
		names[n] = true
	}
	keys := make([]string, 0, len(names))
	for n := range names {
		keys = append(keys, n)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, n := range keys {
		if want[n] != got[n] {
			fmt.Fprintf(&b, "  %s: -%d +%d\n", n, want[n], got[n])
		}
	}
	return b.String()
}

func diffOrder(want, got []string) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("  -%v\n  +%v\n", want, got)
}

// randomCurve returns a speedup curve for a job with the given max, of one
// of many shapes, including nil, empty, short, long, non-monotone and
// unusable ones.
func randomCurve(r *rand.Rand, maxW int) []float64 {
	concave := func(n int) []float64 {
		a := 0.02 + r.Float64()*0.3
		c := make([]float64, n)
		for k := 1; k < n; k++ {
			c[k] = float64(k) / (1 + a*float64(k-1))
		}
		return c
	}
	switch r.IntN(10) {
	case 0:
		return nil
	case 1:
		return []float64{}
	case 2: // shorter than max
		return concave(1 + r.IntN(3))
	case 3: // longer than max
		return concave(maxW + 1 + r.IntN(10))
	case 4: // non-monotone, with plateaus
		c := make([]float64, maxW+1)
		for k := 1; k <= maxW; k++ {
			c[k] = 0.5 + float64(r.IntN(4*k))/2
		}
		return c
	case 5: // superlinear
		c := make([]float64, maxW+1)
		for k := 1; k <= maxW; k++ {
			c[k] = float64(k) * (1 + 0.1*float64(k-1))
		}
		return c
	case 6: // unusable
		c := concave(maxW + 1)
		bad := []float64{math.NaN(), -1, 0, math.Inf(1), math.Inf(-1)}
		if len(c) > 1 {
			c[1+r.IntN(len(c)-1)] = bad[r.IntN(len(bad))]
		}
		return c
	case 7: // flat after one GPU
		c := make([]float64, maxW+1)
		for k := 1; k <= maxW; k++ {
			c[k] = 1
		}
		return c
	default:
		return concave(maxW + 1)
	}
}

// randomSnapshot builds a small random snapshot with many ties and edge
// cases. Jobs are in random order (a snapshot need not be sorted).
func randomSnapshot(r *rand.Rand, maxJobs, maxNodes int) *model.Snapshot {
	s := &model.Snapshot{Now: at(5000 + r.IntN(5000)), GPUType: "test"}
	for i := range r.IntN(maxNodes + 1) {
		s.Nodes = append(s.Nodes, model.Node{Name: fmt.Sprintf("n%d", i), GPUs: r.IntN(9), Index: i})
	}
	nj := r.IntN(maxJobs + 1)
	perm := r.Perm(nj)
	for k := range nj {
		minW := 1 + r.IntN(4)
		maxW := minW + r.IntN(9)
		if r.IntN(30) == 0 {
			maxW = minW + 500
		}
		j := model.Job{Spec: model.JobSpec{
			Name:             fmt.Sprintf("j%03d", perm[k]),
			MinWorkers:       minW,
			MaxWorkers:       maxW,
			RequestedWorkers: minW + r.IntN(maxW-minW+1),
			SubmitTime:       at(r.IntN(20)),
		}}
		switch r.IntN(6) {
		case 0:
			j.Est.RemainingSeconds = -1
		case 1:
			j.Est.RemainingSeconds = math.NaN()
		case 2:
			j.Est.RemainingSeconds = float64(r.IntN(5) * 100)
		default:
			j.Est.RemainingSeconds = r.Float64() * 10000
		}
		j.Est.Speedup = randomCurve(r, maxW)
		st := &j.State
		st.Status = model.StatusWaiting
		st.Queue = r.IntN(3)
		st.QueueSince = at(r.IntN(30))
		st.QueueService = float64(r.IntN(8)) * 1800
		st.QueueRunSeconds = float64(r.IntN(4)) * 300
		if r.IntN(2) == 0 {
			st.GPUs = minW + r.IntN(maxW-minW+1)
			st.Status = model.StatusRunning
		} else if r.IntN(3) > 0 {
			st.WaitingSince = at(r.IntN(5000))
		}
		s.Jobs = append(s.Jobs, j)
	}
	return s
}

func builtinAllocators(t testing.TB) []Allocator {
	t.Helper()
	var out []Allocator
	for _, name := range Builtin().Names() {
		out = append(out, mustNew(t, name))
	}
	return out
}

func nan() float64 { return math.NaN() }

func sprint(v any) string { return fmt.Sprintf("%v", v) }

func TestFingerprintDetectsChanges(t *testing.T) {
	base := func() *model.Snapshot {
		return snapshot([]int{4}, job("b", 1, 1, 2, submitted(1), curve(0, 1, nan())), job("a", 1, 1, 2, rem(nan())))
	}
	for name, change := range map[string]func(*model.Snapshot){
		"sorted jobs":    func(s *model.Snapshot) { s.Sort() },
		"speedup value":  func(s *model.Snapshot) { s.Jobs[0].Est.Speedup[1] = 2 },
		"remaining":      func(s *model.Snapshot) { s.Jobs[1].Est.RemainingSeconds = 1 },
		"queue":          func(s *model.Snapshot) { s.Jobs[1].State.Queue = 1 },
		"placement":      func(s *model.Snapshot) { s.Jobs[1].State.Placement = model.JobPlacement{{Node: "n0", Workers: 1}} },
		"node":           func(s *model.Snapshot) { s.Nodes[0].GPUs = 3 },
		"speedup to nil": func(s *model.Snapshot) { s.Jobs[0].Est.Speedup = nil },
	} {
		s := base()
		fp := fingerprint(s)
		if !fp.unchanged(s) {
			t.Fatalf("%s: unchanged snapshot (with NaNs) reported as changed", name)
		}
		change(s)
		if fp.unchanged(s) {
			t.Errorf("%s: change not detected", name)
		}
	}
}
