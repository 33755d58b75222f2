// ElasticSRJF: the elastic variant of shortest-remaining-job-first in Voda
// (T.-T. Hsieh and C.-R. Lee, "Voda: A GPU Scheduling Platform for Elastic
// Deep Learning in Kubernetes Clusters", IEEE IC2E 2023).
//
// Jobs are ordered as in SRJF (Est.RemainingSeconds ascending, unknown
// last, ties by model.Before). In that order each job first gets its
// MinWorkers if that many GPUs are free, else nothing; the spare GPUs then
// go one worker at a time (G GPUs for workers of G), round-robin in the
// same order, to the jobs that got their min and are below MaxWorkers. A job never exceeds its max (the
// original grew a min = max job past it) and a job without its min gets
// nothing. As in ElasticFIFO the round-robin is computed arithmetically,
// with the same result as the one-GPU-at-a-time walk.

package algorithm

import (
	"github.com/vodascheduler/voda/internal/model"

	"github.com/vodascheduler/voda/internal/registry"
)

// NameElasticSRJF is ElasticSRJF's registered name.
const NameElasticSRJF = "ElasticSRJF"

// ElasticSRJF gives jobs their min shortest first, then shares the spare
// GPUs round-robin in the same order up to each job's max.
type ElasticSRJF struct{ t tracker }

var _ Allocator = (*ElasticSRJF)(nil)

// NewElasticSRJF is ElasticSRJF's factory; it takes no parameters.
func NewElasticSRJF(*registry.Params) (Allocator, error) { return &ElasticSRJF{}, nil }

// Name returns NameElasticSRJF.
func (*ElasticSRJF) Name() string { return NameElasticSRJF }

// Allocate implements Allocator.
func (s *ElasticSRJF) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	in, err := s.t.check(snap, s.t.keyed(jobKey(remainingKey)), false)
	if err != nil {
		return model.Allocation{}, err
	}
	order := s.t.sorted(in, nil)
	return in.allocation(order, minThenRoundRobin(in, order)), nil
}
