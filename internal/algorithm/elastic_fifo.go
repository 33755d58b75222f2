// ElasticFIFO: Voda's default elastic policy (T.-T. Hsieh and C.-R. Lee,
// "Voda: A GPU Scheduling Platform for Elastic Deep Learning in Kubernetes
// Clusters", IEEE IC2E 2023).
//
// In arrival order (model.Before), each job first gets its MinWorkers if
// that many GPUs are free, else nothing (backfill: the walk goes on). The
// spare GPUs are then handed out one worker at a time (G GPUs for a job
// whose workers hold G), round-robin in the same order, to the jobs that
// got their min and are below MaxWorkers, passing over a job whose next
// worker does not fit; a job that did not get its min gets nothing more
// (the original handed such a job single GPUs, below its min).
//
// Deviation in how, not what: the round-robin is computed arithmetically
// rather than by walking the jobs once per GPU (O(S log G) over the S <= G
// jobs that got their min, instead of O(N*G)); the result is the same as
// the one-GPU-at-a-time walk.

package algorithm

import (
	"github.com/vodascheduler/voda/internal/model"

	"github.com/vodascheduler/voda/internal/registry"
)

// NameElasticFIFO is ElasticFIFO's registered name.
const NameElasticFIFO = "ElasticFIFO"

// ElasticFIFO gives jobs their min in arrival order, then shares the
// spare GPUs round-robin up to each job's max.
type ElasticFIFO struct{ t tracker }

var _ Allocator = (*ElasticFIFO)(nil)

// NewElasticFIFO is ElasticFIFO's factory; it takes no parameters.
func NewElasticFIFO(*registry.Params) (Allocator, error) { return &ElasticFIFO{}, nil }

// Name returns NameElasticFIFO.
func (*ElasticFIFO) Name() string { return NameElasticFIFO }

// Allocate implements Allocator.
func (f *ElasticFIFO) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	in, err := f.t.check(snap, nil, false)
	if err != nil {
		return model.Allocation{}, err
	}
	order := f.t.arrival(in)
	return in.allocation(order, minThenRoundRobin(in, order)), nil
}

// minThenRoundRobin gives each job its min in order if it fits, then hands
// the spare GPUs out one worker at a time (per[i] GPUs), round-robin in
// order, to the jobs that got their min and are below max; a job whose
// next worker does not fit in what is left is passed over, and the round
// goes on.
//
// Handing out R full rounds costs f(R) = sum over started jobs of per x
// min(headroom, R) GPUs, headroom counted in workers. With R the largest
// round count such that f(R) <= spare, every started job gets min(headroom,
// R) more workers, and what is left goes round by round, a worker each to
// the jobs in order that still have headroom and whose worker fits: what
// the one-worker-at-a-time walk would have done. With one GPU a worker
// the last, partial round gives one GPU each to the first jobs in order.
func minThenRoundRobin(in *input, order []int) []int {
	gpus, spare := firstFit(order, in.total, in.minW)
	// Only the jobs that got their min take part, in order: at most one
	// per GPU, however many wait.
	var started []int
	for _, i := range order {
		if gpus[i] > 0 {
			started = append(started, i)
		}
	}
	per := func(i int) int { return int(in.per[i]) }
	headroom := func(i int) int { return (int(in.maxW[i]) - gpus[i]) / per(i) } // in workers
	sumHead, maxHead := 0, 0
	for _, i := range started {
		h := min(headroom(i), spare/per(i)+1) // capped: only whether it exceeds spare matters
		sumHead += h * per(i)
		maxHead = max(maxHead, h)
	}
	if sumHead <= spare {
		for _, i := range started {
			gpus[i] += headroom(i) * per(i)
		}
		return gpus
	}
	cost := func(r int) int {
		n := 0
		for _, i := range started {
			n += min(headroom(i), r) * per(i)
		}
		return n
	}
	// Largest r in [0, hi] with cost(r) <= spare; cost(0) = 0 and
	// cost(maxHead) = sumHead > spare.
	lo, hi := 0, min(maxHead, spare)
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if cost(mid) <= spare {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	rounds := lo
	spare -= cost(rounds)
	extra := make([]int, len(started)) // workers beyond min, per started job
	for k, i := range started {
		extra[k] = min(headroom(i), rounds)
	}
	// The partial rounds: less than one full round's GPUs are left, so
	// each takes at most one worker per job; with mixed G a worker that
	// does not fit may leave room for a smaller one, later in the round or
	// in the next.
	for given := true; given && spare > 0; {
		given = false
		for k, i := range started {
			if extra[k] < headroom(i) && per(i) <= spare {
				extra[k]++
				spare -= per(i)
				given = true
			}
		}
	}
	for k, i := range started {
		gpus[i] += extra[k] * per(i)
	}
	return gpus
}
