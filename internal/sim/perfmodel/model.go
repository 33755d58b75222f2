package perfmodel

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// RestartCost is the time a job makes no progress after each new
// placement: the Pollux artifact's restart penalty (an elastic job
// restarting from its last checkpoint), which the trace simulator and the
// server's simulated cluster both use by default, so that a simulation
// and a simulated server charge the same for a restart.
const RestartCost = 30 * time.Second

// Model is one application's true performance.
type Model interface {
	// Name is the application name workloads refer to.
	Name() string
	// DefaultEpochs is the number of epochs a job trains unless its
	// workload entry says otherwise.
	DefaultEpochs() int
	// DefaultBatch is the global batch size used when a workload gives none.
	DefaultBatch() int
	// MaxWorkers is the largest worker count a job with global batch size
	// batch can use (each worker needs a minimum local batch).
	MaxWorkers(batch int) int
	// EpochProgress is the cumulative progress needed to finish e epochs.
	EpochProgress(e int) float64
	// Rate is the progress per second of a job with global batch size
	// batch on placement (workers per node, rank order) during epoch
	// (0-based).
	Rate(placement []int, batch, epoch int) (float64, error)
}

// Set is the collection of models a simulation can use, by name.
type Set struct {
	models map[string]Model
	names  []string
}

// NewSet returns a set holding the given models; a duplicate name is an
// error.
func NewSet(models ...Model) (*Set, error) {
	s := &Set{models: map[string]Model{}}
	for _, m := range models {
		if err := s.Add(m); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add registers a model.
func (s *Set) Add(m Model) error {
	key := strings.ToLower(m.Name())
	if _, ok := s.models[key]; ok {
		return fmt.Errorf("performance model %q defined twice", m.Name())
	}
	s.models[key] = m
	s.names = append(s.names, m.Name())
	sort.Strings(s.names)
	return nil
}

// Names returns the names of the set's models, sorted.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Get returns the named model (case-insensitive).
func (s *Set) Get(name string) (Model, error) {
	m, ok := s.models[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("no performance model for application %q (known: %s)", name, strings.Join(s.names, ", "))
	}
	return m, nil
}

// canonical rotates a placement to its lexicographically smallest rotation,
// dropping empty nodes: a ring all-reduce does not care where it starts.
func canonical(placement []int) []int {
	p := make([]int, 0, len(placement))
	for _, n := range placement {
		if n > 0 {
			p = append(p, n)
		}
	}
	best := 0
	for i := 1; i < len(p); i++ {
		if rotationLess(p, i, best) {
			best = i
		}
	}
	out := make([]int, len(p))
	for i := range p {
		out[i] = p[(best+i)%len(p)]
	}
	return out
}

// rotationLess reports whether the rotation of p starting at i sorts
// before the one starting at j.
func rotationLess(p []int, i, j int) bool {
	n := len(p)
	for k := 0; k < n; k++ {
		a, b := p[(i+k)%n], p[(j+k)%n]
		if a != b {
			return a < b
		}
	}
	return false
}

func sum(p []int) int {
	s := 0
	for _, v := range p {
		s += v
	}
	return s
}
