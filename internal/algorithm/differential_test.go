package algorithm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/algorithm/internal/oracle"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
)

// evolvingSnapshot is a random cluster whose snapshot changes a little
// between calls, as the scheduler's does between cycles: jobs arrive and
// finish, running jobs' remaining times shrink, queues, curves, mins and
// restart histories change, and now and then the snapshot is bad (a
// duplicate name) or not in arrival order.
type evolvingSnapshot struct {
	r    *rand.Rand
	next int // the next job number
	snap *model.Snapshot
}

func newEvolvingSnapshot(seed uint64, jobs, gpus int) *evolvingSnapshot {
	e := &evolvingSnapshot{r: rand.New(rand.NewPCG(seed, 28))}
	s := &model.Snapshot{Now: at(100000), GPUType: "diff"}
	for i := 0; i*8 < gpus; i++ {
		s.Nodes = append(s.Nodes, model.Node{Name: fmt.Sprintf("n%04d", i), GPUs: min(8, gpus-i*8), Index: i})
	}
	for range jobs {
		s.Jobs = append(s.Jobs, e.newJob())
	}
	s.Sort()
	e.snap = s
	return e
}

// newJob returns a job with many ties: submit times, remaining times and
// queue times come from small sets.
func (e *evolvingSnapshot) newJob() model.Job {
	r := e.r
	minW := 1 + r.IntN(3)
	maxW := minW + []int{0, 1, 3, 7, 15}[r.IntN(5)]
	j := model.Job{Spec: model.JobSpec{
		Name:             fmt.Sprintf("j%06d", e.next),
		MinWorkers:       minW,
		MaxWorkers:       maxW,
		RequestedWorkers: minW + r.IntN(maxW-minW+1),
		SubmitTime:       at(r.IntN(50)),
	}}
	e.next++
	j.Est.RemainingSeconds = e.remaining()
	j.Est.Speedup = randomCurve(r, maxW)
	if r.IntN(4) == 0 {
		j.Est.RestartSeconds = float64(r.IntN(100))
	}
	if r.IntN(3) == 0 {
		j.Est.Batch = []int{0}
		for k := 1; k <= maxW; k++ {
			j.Est.Batch = append(j.Est.Batch, 32*k)
		}
	}
	st := &j.State
	st.Status = model.StatusWaiting
	st.Queue = r.IntN(3)
	st.QueueSince = at(r.IntN(40))
	if r.IntN(3) == 0 {
		st.GPUs = minW + r.IntN(maxW-minW+1)
		st.Status = model.StatusRunning
	}
	return j
}

func (e *evolvingSnapshot) remaining() float64 {
	switch e.r.IntN(8) {
	case 0:
		return -1
	case 1:
		return math.NaN()
	case 2:
		return math.Inf(1)
	case 3:
		return float64(e.r.IntN(5) * 100)
	default:
		return e.r.Float64() * 10000
	}
}

// step changes the snapshot in place (as a new snapshot: a fresh Jobs
// slice, so the previous one stays as it was) and returns it.
func (e *evolvingSnapshot) step() *model.Snapshot {
	r := e.r
	old := e.snap
	s := &model.Snapshot{Now: old.Now.Add(60e9), GPUType: old.GPUType, Nodes: old.Nodes}
	n := len(old.Jobs)
	churn := 1 + n/50
	for _, j := range old.Jobs {
		if r.IntN(n+1) < churn && r.IntN(2) == 0 {
			continue // finished
		}
		switch r.IntN(10) {
		case 0: // progressed
			if j.Est.RemainingSeconds > 0 {
				j.Est.RemainingSeconds = max(j.Est.RemainingSeconds-float64(r.IntN(500)), 0)
			}
		case 1:
			j.Est.RemainingSeconds = e.remaining()
		case 2:
			j.State.Queue = r.IntN(3)
			j.State.QueueSince = at(r.IntN(40))
		case 3:
			j.State.GPUs = 0
		case 4:
			j.State.GPUs = j.Spec.MinWorkers
		case 5: // below its min, as after losing a node
			j.State.GPUs = max(1, j.Spec.MinWorkers-1)
		case 6: // a new curve (a new slice, as the core gives), maybe unusable
			j.Est.Speedup = randomCurve(r, j.Spec.MaxWorkers)
		case 7: // another min, with the same curve
			j.Spec.MinWorkers = 1 + r.IntN(j.Spec.RequestedWorkers)
		case 8: // a resize just now, or a while ago, with a new restart cost
			j.State.PrevGPUs = r.IntN(j.Spec.MaxWorkers + 1)
			j.State.LastChange = s.Now.Add(-time.Duration(r.IntN(300)) * time.Second)
			j.Est.RestartSeconds = float64(r.IntN(100))
		}
		s.Jobs = append(s.Jobs, j)
	}
	for range r.IntN(churn + 1) {
		s.Jobs = append(s.Jobs, e.newJob())
	}
	if r.IntN(5) == 0 { // GPUs come and go
		s.Nodes = slices.Clone(s.Nodes)
		if len(s.Nodes) > 0 {
			s.Nodes[r.IntN(len(s.Nodes))].GPUs = r.IntN(9)
		}
	}
	s.Sort()
	e.snap = s
	return s
}

// perturbed returns a copy of snap that is bad or unsorted, or snap
// itself: the paths an allocator takes for snapshots the scheduler does
// not build.
func (e *evolvingSnapshot) perturbed(snap *model.Snapshot) *model.Snapshot {
	r := e.r
	if len(snap.Jobs) < 2 {
		return snap
	}
	c := *snap
	c.Jobs = slices.Clone(snap.Jobs)
	switch r.IntN(13) {
	case 0: // shuffled
		r.Shuffle(len(c.Jobs), func(a, b int) { c.Jobs[a], c.Jobs[b] = c.Jobs[b], c.Jobs[a] })
	case 1: // two adjacent jobs swapped
		k := r.IntN(len(c.Jobs) - 1)
		c.Jobs[k], c.Jobs[k+1] = c.Jobs[k+1], c.Jobs[k]
	case 2: // a duplicate name, submitted at another time, still sorted
		a, b := r.IntN(len(c.Jobs)), r.IntN(len(c.Jobs))
		c.Jobs[b].Spec.Name = c.Jobs[a].Spec.Name
		c.Sort()
	case 3: // bad workers
		c.Jobs[r.IntN(len(c.Jobs))].Spec.MinWorkers = 0
	case 4: // a negative queue (the Tiresias variants reject it)
		c.Jobs[r.IntN(len(c.Jobs))].State.Queue = -1
	default:
		return snap
	}
	return &c
}

// TestDifferentialAgainstOracle runs every built-in algorithm and its
// frozen copy from before the issue-28 speed work (package oracle) on
// sequences of evolving random snapshots, from tiny to 10,000 jobs, and
// requires the same answers: GPUs, Order and Batch, or an error from both.
// The same allocator instance sees the whole sequence, so state it keeps
// between calls is exercised on changed, unchanged, unsorted and bad
// snapshots.
func TestDifferentialAgainstOracle(t *testing.T) {
	type size struct{ jobs, gpus, steps, seeds int }
	sizes := []size{{0, 8, 3, 2}, {1, 8, 10, 10}, {5, 8, 20, 40}, {40, 64, 20, 20}, {300, 64, 10, 6}, {2000, 800, 6, 2}, {10000, 8000, 4, 1}}
	if testing.Short() {
		sizes = sizes[:5]
	}
	old := oracle.Builtin()
	for _, name := range Builtin().Names() {
		t.Run(name, func(t *testing.T) {
			for _, sz := range sizes {
				for seed := range uint64(sz.seeds) {
					p, err := registry.ParseParams(nil)
					if err != nil {
						t.Fatal(err)
					}
					want, err := old.New(name, p)
					if err != nil {
						t.Fatal(err)
					}
					got := mustNew(t, name)
					e := newEvolvingSnapshot(seed*1000+uint64(sz.jobs), sz.jobs, sz.gpus)
					snap := e.snap
					for step := range sz.steps {
						for _, s := range []*model.Snapshot{snap, e.perturbed(snap), snap} {
							wa, werr := want.Allocate(s)
							ga, gerr := got.Allocate(s)
							where := fmt.Sprintf("jobs=%d seed=%d step=%d", sz.jobs, seed, step)
							if (werr == nil) != (gerr == nil) {
								t.Fatalf("%s: error: oracle %v, new %v", where, werr, gerr)
							}
							if !reflect.DeepEqual(wa, ga) {
								t.Fatalf("%s: answers differ\nGPUs (-oracle,+new):\n%sOrder:\n%sBatch (-oracle,+new):\n%s", where,
									diffGPUs(wa.GPUs, ga.GPUs), diffOrder(wa.Order, ga.Order), diffGPUs(wa.Batch, ga.Batch))
							}
						}
						snap = e.step()
					}
				}
			}
		})
	}
}
