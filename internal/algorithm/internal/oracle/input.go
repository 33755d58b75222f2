package oracle

import (
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

// input is a snapshot that passed checkSnapshot.
type input struct {
	snap  *model.Snapshot
	total int // the snapshot's GPUs
	// names holds every job name. Built once for the duplicate check, it
	// becomes the answer's GPUs map, so a decision builds one map, not two.
	names map[string]int
}

// checkSnapshot rejects input no allocator can answer sensibly. It checks
// only what allocators rely on: node GPU counts, unique non-empty job
// names and 1 <= min <= requested <= max.
func checkSnapshot(snap *model.Snapshot) (*input, error) {
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
	names := make(map[string]int, len(snap.Jobs))
	for i := range snap.Jobs {
		s := &snap.Jobs[i].Spec
		if s.Name == "" {
			return nil, fmt.Errorf("job #%d: empty name", i)
		}
		if _, dup := names[s.Name]; dup {
			return nil, fmt.Errorf("job %s: name appears twice in the snapshot", s.Name)
		}
		names[s.Name] = 0
		if s.MinWorkers < 1 || s.MinWorkers > s.MaxWorkers ||
			s.RequestedWorkers < s.MinWorkers || s.RequestedWorkers > s.MaxWorkers {
			return nil, fmt.Errorf("job %s: workers min %d, requested %d, max %d: want 1 <= min <= requested <= max",
				s.Name, s.MinWorkers, s.RequestedWorkers, s.MaxWorkers)
		}
	}
	return &input{snap: snap, total: total, names: names}, nil
}

// allocation turns per-job GPU counts (indexed like snap.Jobs) and a
// priority order of job indices into the answer. It consumes in.names.
func (in *input) allocation(order []int, gpus []int) model.Allocation {
	a := model.Allocation{GPUs: in.names, Order: make([]string, 0, len(order))}
	in.names = nil
	for _, i := range order {
		name := in.snap.Jobs[i].Spec.Name
		a.Order = append(a.Order, name)
		if gpus[i] > 0 {
			a.GPUs[name] = gpus[i]
		} else {
			delete(a.GPUs, name)
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

// sortItem is what the sort moves: a job index and a float that decides
// most comparisons on its own. The float never contradicts the ordering (a
// smaller float means an earlier job); equal floats fall back to the full
// comparison.
type sortItem struct {
	fast float64
	idx  int32
}

// queueKey holds what byQueue compares after the queue, copied out of the
// snapshot: queue ties are common, and comparing compact keys beats
// reading whole jobs at random.
type queueKey struct {
	since  time.Time
	submit time.Time
	name   string
}

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

// sortedIndices returns the indices of snap.Jobs in the given order,
// leaving snap.Jobs untouched. Names are unique (checkSnapshot), so the
// order is total and does not depend on how the snapshot lists its jobs.
func sortedIndices(snap *model.Snapshot, by ordering) []int {
	items := make([]sortItem, len(snap.Jobs))
	var keys []queueKey
	if by == byQueue {
		keys = make([]queueKey, len(snap.Jobs))
	}
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		fast := 0.0
		switch by {
		case byRemaining:
			fast = math.Inf(1)
			if r, ok := remaining(j); ok {
				fast = r
			}
		case byQueue:
			fast = float64(j.State.Queue)
			keys[i] = queueKey{since: j.State.QueueSince, submit: j.Spec.SubmitTime, name: j.Spec.Name}
		}
		items[i] = sortItem{fast: fast, idx: int32(i)}
	}
	slices.SortFunc(items, func(a, b sortItem) int {
		if a.fast < b.fast { // never NaN
			return -1
		}
		if a.fast > b.fast {
			return 1
		}
		switch by {
		case byQueue:
			ka, kb := &keys[a.idx], &keys[b.idx]
			if c := ka.since.Compare(kb.since); c != 0 {
				return c
			}
			if c := ka.submit.Compare(kb.submit); c != 0 {
				return c
			}
			return strings.Compare(ka.name, kb.name)
		case byRemaining: // a known +Inf goes before an unknown
			_, ka := remaining(&snap.Jobs[a.idx])
			_, kb := remaining(&snap.Jobs[b.idx])
			if ka != kb {
				if ka {
					return -1
				}
				return 1
			}
		}
		return cmpArrival(&snap.Jobs[a.idx], &snap.Jobs[b.idx])
	})
	idx := make([]int, len(items))
	for i, it := range items {
		idx[i] = int(it.idx)
	}
	return idx
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
