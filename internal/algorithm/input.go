package algorithm

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vodascheduler/voda/internal/model"
)

// maxClusterGPUs bounds the GPUs of one snapshot. Far above any real GPU
// pool of one type, it keeps sums from overflowing and bounds the
// one-GPU-at-a-time loops of the elastic algorithms.
const maxClusterGPUs = 1 << 20

// checkSnapshot rejects input no allocator can answer sensibly and returns
// the snapshot's GPU count. It checks only what allocators rely on: node
// GPU counts, unique non-empty job names and 1 <= min <= requested <= max.
func checkSnapshot(snap *model.Snapshot) (int, error) {
	if snap == nil {
		return 0, errors.New("nil snapshot")
	}
	total := 0
	for _, nd := range snap.Nodes {
		if nd.GPUs < 0 {
			return 0, fmt.Errorf("node %s: negative GPU count %d", nd.Name, nd.GPUs)
		}
		if nd.GPUs > maxClusterGPUs-total {
			return 0, fmt.Errorf("snapshot has more than %d GPUs", maxClusterGPUs)
		}
		total += nd.GPUs
	}
	seen := make(map[string]struct{}, len(snap.Jobs))
	for i := range snap.Jobs {
		s := &snap.Jobs[i].Spec
		if s.Name == "" {
			return 0, fmt.Errorf("job #%d: empty name", i)
		}
		if _, dup := seen[s.Name]; dup {
			return 0, fmt.Errorf("job %s: name appears twice in the snapshot", s.Name)
		}
		seen[s.Name] = struct{}{}
		if s.MinWorkers < 1 || s.MinWorkers > s.MaxWorkers ||
			s.RequestedWorkers < s.MinWorkers || s.RequestedWorkers > s.MaxWorkers {
			return 0, fmt.Errorf("job %s: workers min %d, requested %d, max %d: want 1 <= min <= requested <= max",
				s.Name, s.MinWorkers, s.RequestedWorkers, s.MaxWorkers)
		}
	}
	return total, nil
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

// orderKey is the part of a job an ordering looks at, copied out of the
// snapshot so that sorting touches compact data rather than whole jobs.
type orderKey struct {
	group  int       // byQueue: the queue; byRemaining: 1 if unknown
	rem    float64   // byRemaining: the remaining time when known
	since  time.Time // byQueue: when the job entered its queue
	submit time.Time
	name   string
}

// cmpKeys compares every field in turn; fields an ordering does not use
// are zero in all keys. Times compare as time.Time.Compare does, so the
// arrival part agrees with model.Before exactly.
func cmpKeys(a, b *orderKey) int {
	if a.group != b.group {
		return cmp.Compare(a.group, b.group)
	}
	if a.rem != b.rem {
		return cmp.Compare(a.rem, b.rem)
	}
	if c := a.since.Compare(b.since); c != 0 {
		return c
	}
	if c := a.submit.Compare(b.submit); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// sortItem is what the sort moves: a job index and a float that decides
// most comparisons on its own. The float never contradicts cmpKeys (a
// smaller float means an earlier key); equal floats fall back to it.
type sortItem struct {
	fast float64
	idx  int32
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

// sortedIndices returns the indices of snap.Jobs in the given order,
// leaving snap.Jobs untouched. Names are unique (checkSnapshot), so the
// order is total and does not depend on how the snapshot lists its jobs.
func sortedIndices(snap *model.Snapshot, by ordering) []int {
	keys := make([]orderKey, len(snap.Jobs))
	items := make([]sortItem, len(snap.Jobs))
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		k := orderKey{submit: j.Spec.SubmitTime, name: j.Spec.Name}
		fast := 0.0
		switch by {
		case byRemaining:
			if r, ok := remaining(j); ok {
				k.rem, fast = r, r
			} else {
				k.group, fast = 1, math.Inf(1)
			}
		case byQueue:
			k.group, k.since = j.State.Queue, j.State.QueueSince
			fast = float64(k.group)
		}
		keys[i] = k
		items[i] = sortItem{fast: fast, idx: int32(i)}
	}
	slices.SortFunc(items, func(a, b sortItem) int {
		if a.fast < b.fast { // never NaN
			return -1
		}
		if a.fast > b.fast {
			return 1
		}
		return cmpKeys(&keys[a.idx], &keys[b.idx])
	})
	idx := make([]int, len(items))
	for i, it := range items {
		idx[i] = int(it.idx)
	}
	return idx
}

// buildAllocation turns per-job GPU counts (indexed like snap.Jobs) and a
// priority order of job indices into an Allocation.
func buildAllocation(snap *model.Snapshot, order []int, gpus []int) model.Allocation {
	n := 0
	for _, g := range gpus {
		if g > 0 {
			n++
		}
	}
	a := model.Allocation{GPUs: make(map[string]int, n), Order: make([]string, 0, len(order))}
	for _, i := range order {
		name := snap.Jobs[i].Spec.Name
		a.Order = append(a.Order, name)
		if gpus[i] > 0 {
			a.GPUs[name] = gpus[i]
		}
	}
	return a
}

// speedups returns every job's estimates with unusable speedup curves
// replaced by nil, which model.Estimates.SpeedupAt reads as linear. A curve
// is unusable when it has a single entry (SpeedupAt would read S(0) for
// every k) or a value at k >= 1 that is not a finite positive number: one
// bad estimate from the collector must not stall the cluster nor make a
// job look infinitely good. Curves are shared, not copied.
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

// firstFit walks order and gives each job want(job) GPUs if that many are
// still free, else nothing (later, smaller jobs may still fit: backfill).
// It returns the counts indexed like snap.Jobs and the GPUs left.
func firstFit(snap *model.Snapshot, order []int, total int, want func(*model.Job) int) ([]int, int) {
	gpus := make([]int, len(snap.Jobs))
	left := total
	for _, i := range order {
		if w := want(&snap.Jobs[i]); w <= left {
			gpus[i] = w
			left -= w
		}
	}
	return gpus, left
}

func requested(j *model.Job) int { return j.Spec.RequestedWorkers }

func minimum(j *model.Job) int { return j.Spec.MinWorkers }
