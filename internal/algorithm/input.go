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

// cmpArrival orders jobs as model.Before does: submit time, then name.
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

// cmpRemaining orders jobs by remaining time, shortest first, unknown
// last, ties by arrival.
func cmpRemaining(a, b *model.Job) int {
	ra, ka := remaining(a)
	rb, kb := remaining(b)
	switch {
	case ka && !kb:
		return -1
	case !ka && kb:
		return 1
	case ka && kb && ra < rb:
		return -1
	case ka && kb && ra > rb:
		return 1
	}
	return cmpArrival(a, b)
}

// sortedIndices returns the indices of snap.Jobs sorted by cmp, leaving
// snap.Jobs untouched. cmp must be a total order (names are unique, so any
// comparator ending in cmpArrival is), which makes the result independent
// of the snapshot's job order.
func sortedIndices(snap *model.Snapshot, cmp func(a, b *model.Job) int) []int {
	idx := make([]int, len(snap.Jobs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int { return cmp(&snap.Jobs[i], &snap.Jobs[j]) })
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
