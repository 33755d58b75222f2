// SRJF: shortest remaining job first, with backfilling, the non-elastic
// size-based baseline of Voda (T.-T. Hsieh and C.-R. Lee, "Voda: A GPU
// Scheduling Platform for Elastic Deep Learning in Kubernetes Clusters",
// IEEE IC2E 2023).
//
// Jobs are visited by estimated remaining time at one GPU
// (Est.RemainingSeconds), shortest first; jobs whose estimate is unknown
// (negative or NaN) come last; ties, and the unknown ones among
// themselves, go by arrival (model.Before). Each job gets its
// RequestedWorkers if that many GPUs are still free, else nothing, and
// the walk goes on (backfill). No deviation from voda-original.md.

package algorithm

import (
	"github.com/vodascheduler/voda/internal/model"

	"github.com/vodascheduler/voda/internal/registry"
)

// NameSRJF is SRJF's registered name.
const NameSRJF = "SRJF"

// SRJF gives jobs their requested GPUs, shortest remaining time first.
type SRJF struct{ t tracker }

var _ Allocator = (*SRJF)(nil)

// NewSRJF is SRJF's factory; it takes no parameters.
func NewSRJF(*registry.Params) (Allocator, error) { return &SRJF{}, nil }

// Name returns NameSRJF.
func (*SRJF) Name() string { return NameSRJF }

// Allocate implements Allocator.
func (s *SRJF) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	in, err := s.t.check(snap, s.t.keyed(jobKey(remainingKey)), false)
	if err != nil {
		return model.Allocation{}, err
	}
	order := s.t.sorted(in, nil)
	gpus, _ := firstFit(order, in.total, in.req)
	return in.allocation(order, gpus), nil
}
