package algorithm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/vodascheduler/voda/internal/model"
)

// maxClusterGPUs bounds the GPUs of one snapshot. Far above any real GPU
// pool of one type, it keeps sums from overflowing and bounds the
// one-GPU-at-a-time loops of the elastic algorithms.
const maxClusterGPUs = 1 << 20

// input is a snapshot that passed check.
type input struct {
	snap  *model.Snapshot
	total int // the snapshot's GPUs
	// sorted says snap.Jobs are strictly in arrival order (cmpArrival), as
	// the scheduler builds them (model.Snapshot documents it): then job
	// indices compare as arrival does, and the tracker can reuse the
	// previous decision's work.
	sorted bool
	// jobColumns hold every job's name and worker counts, indexed like
	// snap.Jobs.
	*jobColumns
}

// checkNodes sums the snapshot's GPUs, less those reserved, rejecting
// negative counts and overflow.
func checkNodes(snap *model.Snapshot) (*input, error) {
	if snap == nil {
		return nil, errors.New("nil snapshot")
	}
	total := 0
	for _, nd := range snap.Nodes {
		if nd.GPUs < 0 {
			return nil, fmt.Errorf("node %s: negative GPU count %d", nd.Name, nd.GPUs)
		}
		if nd.GPUs > maxClusterGPUs-total {
			return nil, fmt.Errorf("snapshot has more than %d GPUs", maxClusterGPUs)
		}
		total += nd.GPUs
	}
	if snap.Reserved < 0 || snap.Reserved > total {
		return nil, fmt.Errorf("%d GPUs reserved of %d", snap.Reserved, total)
	}
	return &input{snap: snap, total: total - snap.Reserved}, nil
}

// checkSpec rejects a job no allocator can answer sensibly: an empty name,
// a negative or impossible G, or workers outside 1 <= min <= requested <=
// max.
func checkSpec(i int, s *model.JobSpec) error {
	if s.Name == "" {
		return fmt.Errorf("job #%d: empty name", i)
	}
	if s.GPUsPerWorker < 0 || s.GPUsPerWorker > maxClusterGPUs {
		return fmt.Errorf("job %s: %d GPUs per worker: want 0 (one) to %d", s.Name, s.GPUsPerWorker, maxClusterGPUs)
	}
	if s.MinWorkers < 1 || s.MinWorkers > s.MaxWorkers ||
		s.RequestedWorkers < s.MinWorkers || s.RequestedWorkers > s.MaxWorkers {
		return fmt.Errorf("job %s: workers min %d, requested %d, max %d: want 1 <= min <= requested <= max",
			s.Name, s.MinWorkers, s.RequestedWorkers, s.MaxWorkers)
	}
	return nil
}

// uniqueNames is the stateless duplicate check.
func uniqueNames(snap *model.Snapshot) error {
	names := make(map[string]struct{}, len(snap.Jobs))
	for i := range snap.Jobs {
		name := snap.Jobs[i].Spec.Name
		if _, dup := names[name]; dup {
			return dupError(name)
		}
		names[name] = struct{}{}
	}
	return nil
}

func dupError(name string) error {
	return fmt.Errorf("job %s: name appears twice in the snapshot", name)
}

// allocation turns per-job GPU counts (indexed like snap.Jobs) and a
// priority order of job indices into the answer. GPUs lists only the jobs
// given GPUs, so it costs what runs, not what waits.
func (in *input) allocation(order []int, gpus []int) model.Allocation {
	running := 0
	for _, g := range gpus {
		if g > 0 {
			running++
		}
	}
	a := model.Allocation{GPUs: make(map[string]int, running), Order: make([]string, len(order))}
	for k, i := range order {
		name := in.name[i]
		a.Order[k] = name
		if gpus[i] > 0 {
			a.GPUs[name] = gpus[i]
		}
	}
	return a
}

// ordering names a priority order of jobs.
type ordering int

const (
	// byArrival is model.Before: submit time, then name.
	byArrival ordering = iota
	// byRemaining is Est.RemainingSeconds ascending, unknown (negative or
	// NaN) last, ties by arrival.
	byRemaining
	// byQueue is State.Queue ascending, then State.QueueSince, then arrival.
	byQueue
)

// cmpArrival orders jobs as model.Before does: submit time, then name.
// time.Time.Compare agrees with Before and Equal, monotonic readings
// included.
func cmpArrival(a, b *model.Job) int {
	if c := a.Spec.SubmitTime.Compare(b.Spec.SubmitTime); c != 0 {
		return c
	}
	return strings.Compare(a.Spec.Name, b.Spec.Name)
}

// remaining returns a job's estimated remaining time at one GPU and
// whether it is known (negative or NaN means unknown).
func remaining(j *model.Job) (float64, bool) {
	r := j.Est.RemainingSeconds
	if r < 0 || math.IsNaN(r) {
		return 0, false
	}
	return r, true
}

// keyOf returns the sort key of job i for an ordering (zero for
// byArrival: arrival alone decides).
func keyOf(snap *model.Snapshot, by ordering) func(i int) sortKey {
	switch by {
	case byRemaining:
		return func(i int) sortKey { return remainingKey(&snap.Jobs[i]) }
	case byQueue:
		return func(i int) sortKey { return queueKey(&snap.Jobs[i]) }
	}
	return func(int) sortKey { return sortKey{} }
}

// remainingKey orders by Est.RemainingSeconds ascending, a known +Inf
// before an unknown one.
func remainingKey(j *model.Job) sortKey {
	if r, ok := remaining(j); ok {
		return sortKey{f: r}
	}
	return sortKey{f: math.Inf(1), unknown: true}
}

// queueKey orders by State.Queue, then State.QueueSince.
func queueKey(j *model.Job) sortKey {
	return sortKey{f: float64(j.State.Queue), t: j.State.QueueSince}
}

// sortedIndices returns the indices of snap.Jobs in the given order,
// leaving snap.Jobs untouched, with a full sort (the tracker avoids it for
// snapshots in arrival order). Names are unique (tracker.check), so the
// order is total and does not depend on how the snapshot lists its jobs.
func sortedIndices(snap *model.Snapshot, by ordering) []int {
	return sortByKey(snap, keyOf(snap, by))
}

// sortByKey sorts the job indices by key, ties by arrival.
func sortByKey(snap *model.Snapshot, key func(i int) sortKey) []int {
	n := len(snap.Jobs)
	keys := make([]sortKey, n)
	idx := make([]int, n)
	for i := range n {
		keys[i] = key(i)
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmpKey(&keys[a], &keys[b]); c != 0 {
			return c
		}
		return cmpArrival(&snap.Jobs[a], &snap.Jobs[b])
	})
	return idx
}

// usableCurve reports whether a speedup curve can be used as it is. A
// curve is unusable when it has a single entry (SpeedupAt would read S(0)
// for every k) or a value at k >= 1 that is not a finite positive number:
// one bad estimate from the collector must not stall the cluster nor make
// a job look infinitely good. Allocators read an unusable curve as nil,
// which model.Estimates.SpeedupAt reads as linear.
func usableCurve(c []float64) bool {
	if len(c) == 1 {
		return false
	}
	for k := 1; k < len(c); k++ {
		if v := c[k]; !(v > 0) || math.IsInf(v, 1) {
			return false
		}
	}
	return true
}

// curves reads the jobs' speedups, unusable curves taken as linear. Each
// curve is checked when first read, so a decision reads only the curves of
// the jobs it considers, not those of every waiting job.
type curves struct {
	jobs  []model.Job
	state []uint8 // per job: curveUnchecked, curveUsable or curveLinear
}

const (
	curveUnchecked uint8 = iota
	curveUsable
	curveLinear
)

func newCurves(snap *model.Snapshot) *curves {
	return &curves{jobs: snap.Jobs, state: make([]uint8, len(snap.Jobs))}
}

// at returns job j's speedup on k GPUs.
func (c *curves) at(j, k int) float64 {
	e := &c.jobs[j].Est
	if c.state[j] == curveUnchecked {
		c.state[j] = curveLinear
		if usableCurve(e.Speedup) {
			c.state[j] = curveUsable
		}
	}
	return speedupAt(e.Speedup, c.state[j] == curveUsable, k)
}

// speedupAt returns S(k) of a curve, read as linear unless usable.
func speedupAt(curve []float64, usable bool, k int) float64 {
	if !usable {
		curve = nil
	}
	return model.Estimates{Speedup: curve}.SpeedupAt(k)
}

// firstFit walks order and gives each job want[job] GPUs if that many are
// still free, else nothing (later, smaller jobs may still fit: backfill).
// Every job wants at least one GPU, so the walk stops when none is left.
// It returns the counts indexed like snap.Jobs and the GPUs left.
func firstFit(order []int, total int, want []int32) ([]int, int) {
	gpus := make([]int, len(want))
	left := total
	for _, i := range order {
		if left == 0 {
			break
		}
		if w := int(want[i]); w <= left {
			gpus[i] = w
			left -= w
		}
	}
	return gpus, left
}

// arrivalRanks returns each job's rank in arrival order.
func arrivalRanks(in *input) []int32 {
	rank := make([]int32, len(in.snap.Jobs))
	if in.sorted {
		for i := range rank {
			rank[i] = int32(i)
		}
		return rank
	}
	for r, i := range sortedIndices(in.snap, byArrival) {
		rank[i] = int32(r)
	}
	return rank
}
