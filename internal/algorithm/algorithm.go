package algorithm

import (
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
	"iter"
)

// Allocator decides job -> #GPUs for one snapshot.
type Allocator interface {
	// Name returns the algorithm's registered name.
	Name() string
	// Allocate returns the GPUs of every job of the snapshot. It must not
	// modify snap.
	Allocate(snap *model.Snapshot) (model.Allocation, error)
}

// Prioritizer is implemented by allocators with priority queues. The
// scheduler calls Requeue at the start of every cycle and applies the
// changes before calling Allocate on the updated snapshot. A change is a
// priority-change event.
type Prioritizer interface {
	Requeue(snap *model.Snapshot) []model.QueueChange
}

// Reclaimer is implemented by allocators that divide the GPUs among
// teams (Teams). Reclaim returns, sorted, the waiting jobs of the teams
// that hold less than they are guaranteed while another team holds more
// than its guarantee, of total GPUs: GPUs the scheduler must take back at
// once, not when the rate limit next allows changing running jobs. Nil
// when none. It reads the jobs once, without a snapshot, so that the
// scheduler may ask after every event.
type Reclaimer interface {
	Reclaim(total int, jobs iter.Seq[*model.Job]) []string
}

// Registry is a registry of allocators: Builtin returns Voda's nine.
type Registry = registry.Registry[Allocator]

// Entry describes one registered algorithm. Its Name is the canonical
// name, as the original Voda spells it; an algorithm that resizes jobs
// within [min, max] carries the tag TagElastic.
type Entry = registry.Entry[Allocator]

// TagElastic marks the entries of elastic algorithms.
const TagElastic = "elastic"

// DefaultName is the algorithm of a GPU type with no stored setting, and
// the simulator's, as in the original.
const DefaultName = NameElasticFIFO
