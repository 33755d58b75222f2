// ElasticTiresias: Tiresias' queues with elastic sizing, after Y. Wu et
// al., "Elastic Deep Learning in Multi-Tenant GPU Clusters", IEEE
// Transactions on Parallel and Distributed Systems, 2021.
//
// Queues and Requeue are Tiresias' (threshold, starvation). Allocate:
//  1. In queue order (Queue, QueueSince, model.Before) each job gets its
//     MinWorkers if they fit in what is left, else nothing.
//  2. If more than pending_limit jobs got nothing, the cluster is
//     congested: jobs in queue >= 1 are held at their min and only queue-0
//     jobs may grow. (The paper and voda-original.md say "shrink
//     low-priority running jobs to their min"; since step 1 starts every job
//     at its min, holding them there is the same thing.)
//  3. The spare GPUs go one worker at a time to the eligible job with the
//     largest marginal gain per GPU, (S(n+G) - S(n)) / G for workers of G
//     GPUs (Est.SpeedupAt), ties by queue order; a job whose next worker
//     no longer fits drops out. A
//     job at 0 GPUs competes with S(min)/min per GPU and takes its min at
//     once if that many are free. (After step 1's first fit, every job left
//     at 0 has min > spare, so this case cannot arise today; it is kept so
//     that the rule stays right if step 1 changes.)
//
// Deviations: a GPU is handed out only for a positive gain, so spare GPUs
// that would speed no job up stay idle instead of costing a resize;
// unusable speedup curves (see usableCurve in input.go) count as unknown,
// that is linear. A heap makes step 3 O((N + G) log N).

package algorithm

import (
	"fmt"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
)

// NameElasticTiresias is ElasticTiresias' registered name.
const NameElasticTiresias = "ElasticTiresias"

// DefaultElasticTiresiasPendingLimit is how many jobs may wait before
// low-priority jobs are held at their min.
const DefaultElasticTiresiasPendingLimit = 10

// ElasticTiresias is Tiresias' two queues with min-first allocation and
// growth by marginal speedup gain.
type ElasticTiresias struct {
	las          lasQueues
	pendingLimit int
	t            tracker
}

var (
	_ Allocator   = (*ElasticTiresias)(nil)
	_ Prioritizer = (*ElasticTiresias)(nil)
)

// NewElasticTiresias is ElasticTiresias' factory. Parameters: threshold
// and starvation as in Tiresias, and pending_limit (default 10): with more
// waiting jobs than that, only queue-0 jobs grow beyond their min.
func NewElasticTiresias(p *registry.Params) (Allocator, error) {
	las, err := readLASParams(p)
	if err != nil {
		return nil, err
	}
	limit, err := p.Int("pending_limit", DefaultElasticTiresiasPendingLimit)
	if err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("param pending_limit: %d must be >= 0", limit)
	}
	return &ElasticTiresias{las: las, pendingLimit: limit}, nil
}

// Name returns NameElasticTiresias.
func (*ElasticTiresias) Name() string { return NameElasticTiresias }

// Requeue implements Prioritizer with Tiresias' rules.
func (t *ElasticTiresias) Requeue(snap *model.Snapshot) []model.QueueChange {
	return t.las.requeue(snap)
}

// Allocate implements Allocator.
func (t *ElasticTiresias) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	t.t.mu.Lock()
	defer t.t.mu.Unlock()
	in, order, err := queueOrder(&t.t, snap)
	if err != nil {
		return model.Allocation{}, err
	}
	gpus, spare := firstFit(order, in.total, in.minW)
	if spare == 0 {
		return in.allocation(order, gpus), nil
	}
	pending := 0
	for _, g := range gpus {
		if g == 0 {
			pending++
		}
	}
	hold := pending > t.pendingLimit

	est := newCurves(snap)
	next := marginalGain(in, est, gpus)
	h := make(gainHeap, 0, len(order))
	for r, i := range order {
		if hold && snap.Jobs[i].State.Queue >= 1 {
			continue
		}
		if gpus[i] == 0 {
			if m := int(in.minW[i]); m <= spare {
				h = append(h, gainItem{gain: est.at(i, m) / float64(m), rank: int32(r), job: int32(i)})
			}
			continue
		}
		if gain, ok := next(i); ok {
			h = append(h, gainItem{gain: gain, rank: int32(r), job: int32(i)})
		}
	}
	h.init()
	growAuction(h, nil, gpus, spare, in, next)
	return in.allocation(order, gpus), nil
}
