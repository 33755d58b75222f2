// FIFO: first in, first out with backfilling, the non-elastic baseline of
// Voda (T.-T. Hsieh and C.-R. Lee, "Voda: A GPU Scheduling Platform for
// Elastic Deep Learning in Kubernetes Clusters", IEEE IC2E 2023).
//
// Jobs are visited in arrival order (model.Before: submit time, then
// name); each gets its RequestedWorkers if that many GPUs are still free,
// else nothing, and the walk goes on, so a later, smaller job may start
// ahead of a blocked large one. No deviation from voda-original.md.

package algorithm

import (
	"github.com/vodascheduler/voda/internal/model"

	"github.com/vodascheduler/voda/internal/registry"
)

// NameFIFO is FIFO's registered name.
const NameFIFO = "FIFO"

// FIFO gives jobs their requested GPUs in arrival order, with backfilling.
type FIFO struct{ t tracker }

var _ Allocator = (*FIFO)(nil)

// NewFIFO is FIFO's factory; it takes no parameters.
func NewFIFO(*registry.Params) (Allocator, error) { return &FIFO{}, nil }

// Name returns NameFIFO.
func (*FIFO) Name() string { return NameFIFO }

// Allocate implements Allocator. Ties in submit time are broken by name.
func (f *FIFO) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	in, err := f.t.check(snap, nil, false)
	if err != nil {
		return model.Allocation{}, err
	}
	order := f.t.arrival(in)
	gpus, _ := firstFit(order, in.total, in.req)
	return in.allocation(order, gpus), nil
}
