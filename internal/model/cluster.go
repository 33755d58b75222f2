package model

import (
	"fmt"
	"sort"
	"time"
)

// Node is a machine with GPUs of one type.
type Node struct {
	Name string
	// GPUs is the node's allocatable GPU count.
	GPUs int
	// Index orders nodes for placement tie-breaks (lower first).
	Index int
	// Cordoned nodes keep the workers they run but take no new ones: a
	// cycle sees such a node with only the GPUs its workers use.
	Cordoned bool
}

// NodeWorkers is a number of one job's workers on one node.
type NodeWorkers struct {
	Node    string
	Workers int
}

// JobPlacement lists where a job's workers run, in rank order: the first
// entry holds rank 0. The order matters to ring all-reduce performance.
type JobPlacement []NodeWorkers

// Workers returns the total number of workers.
func (p JobPlacement) Workers() int {
	n := 0
	for _, nw := range p {
		n += nw.Workers
	}
	return n
}

// Nodes returns the number of nodes with at least one worker.
func (p JobPlacement) Nodes() int {
	n := 0
	for _, nw := range p {
		if nw.Workers > 0 {
			n++
		}
	}
	return n
}

// Equal reports whether two placements put the same workers on the same
// nodes in the same order.
func (p JobPlacement) Equal(q JobPlacement) bool {
	if len(p) != len(q) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy that shares no memory with p.
func (p JobPlacement) Clone() JobPlacement {
	if p == nil {
		return nil
	}
	return append(JobPlacement(nil), p...)
}

// Placement maps job name to its placement.
type Placement map[string]JobPlacement

// Snapshot is the immutable input of one scheduling cycle for one GPU type.
// Allocators and placers must not modify it, and its builder must not
// either once it is handed over: a later snapshot may share a job's
// speedup curve with it (the scheduler's do), but a changed curve is a new
// slice, never the old one written in place. Allocators rely on it: what
// they derive from a curve is reused while a job keeps the same slice.
type Snapshot struct {
	Now     time.Time
	GPUType string
	// Nodes are the ready nodes, sorted by Index.
	Nodes []Node
	// Jobs are the live (not done) jobs, sorted by Before.
	Jobs []Job
	// Reserved are GPUs the allocator must leave unallocated, 0 to
	// TotalGPUs: what a team's entitlement, or the priority classes above,
	// leave to the jobs of the snapshot. 0 for the whole cluster.
	Reserved int
}

// Capacity returns the GPUs the allocator may hand out: the nodes' less
// Reserved.
func (s *Snapshot) Capacity() int { return s.TotalGPUs() - s.Reserved }

// TotalGPUs returns the GPUs on all nodes.
func (s *Snapshot) TotalGPUs() int {
	n := 0
	for _, nd := range s.Nodes {
		n += nd.GPUs
	}
	return n
}

// Sort puts nodes and jobs in their canonical order.
func (s *Snapshot) Sort() {
	sort.SliceStable(s.Nodes, func(i, j int) bool { return s.Nodes[i].Index < s.Nodes[j].Index })
	sort.SliceStable(s.Jobs, func(i, j int) bool { return Before(&s.Jobs[i], &s.Jobs[j]) })
}

// Allocation is an allocator's answer: GPUs per job, and the priority
// order it considered jobs in, which placers follow when they must choose
// whom to place first.
type Allocation struct {
	// GPUs maps job name to its GPU count; jobs missing get 0.
	GPUs map[string]int
	// Order lists the snapshot's jobs, highest priority first.
	Order []string
	// Batch maps a job to the global batch size the algorithm chose with
	// its GPUs; only goodput-aware algorithms fill it, and a job missing
	// keeps the batch size it runs.
	Batch map[string]int
}

// Total returns the number of GPUs handed out.
func (a Allocation) Total() int {
	n := 0
	for _, g := range a.GPUs {
		n += g
	}
	return n
}

// InvariantError says which rule an allocation broke.
type InvariantError struct {
	Job    string
	Reason string
}

func (e *InvariantError) Error() string {
	if e.Job == "" {
		return "allocation invariant: " + e.Reason
	}
	return fmt.Sprintf("allocation invariant: job %s: %s", e.Job, e.Reason)
}

// CheckAllocation verifies that the allocation hands out no more GPUs than
// the snapshot has, gives each job 0 or a count within [min, max], names
// only jobs of the snapshot and orders each job exactly once.
func CheckAllocation(s *Snapshot, a Allocation) error {
	known := make(map[string]*Job, len(s.Jobs))
	for i := range s.Jobs {
		known[s.Jobs[i].Spec.Name] = &s.Jobs[i]
	}
	// Visit jobs in a fixed order so the first broken rule reported does
	// not depend on map order: unknown names (sorted), then snapshot order.
	var unknown []string
	for name := range a.GPUs {
		if _, ok := known[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return &InvariantError{Job: unknown[0], Reason: "not in the snapshot"}
	}
	total := 0
	for i := range s.Jobs {
		j := &s.Jobs[i]
		name := j.Spec.Name
		g := a.GPUs[name]
		// Negative first: with MinWorkers >= 1 a negative count is also
		// outside [min, max], and the more precise reason would never show.
		if g < 0 {
			return &InvariantError{Job: name, Reason: fmt.Sprintf("negative GPUs %d", g)}
		}
		per := j.Spec.PerWorker()
		if g != 0 && (g < j.Spec.MinWorkers*per || g > j.Spec.MaxWorkers*per) {
			return &InvariantError{Job: name, Reason: fmt.Sprintf("%d GPUs outside [%d, %d]", g, j.Spec.MinWorkers*per, j.Spec.MaxWorkers*per)}
		}
		if g%per != 0 {
			return &InvariantError{Job: name, Reason: fmt.Sprintf("%d GPUs are not whole workers of %d GPUs", g, per)}
		}
		total += g
	}
	if total > s.Capacity() {
		if s.Reserved > 0 {
			return &InvariantError{Reason: fmt.Sprintf("%d GPUs allocated, %d may be (%d on the nodes, %d reserved)", total, s.Capacity(), s.TotalGPUs(), s.Reserved)}
		}
		return &InvariantError{Reason: fmt.Sprintf("%d GPUs allocated, cluster has %d", total, s.TotalGPUs())}
	}
	if a.Order != nil {
		seen := make(map[string]bool, len(a.Order))
		for _, name := range a.Order {
			if _, ok := known[name]; !ok {
				return &InvariantError{Job: name, Reason: "ordered but not in the snapshot"}
			}
			if seen[name] {
				return &InvariantError{Job: name, Reason: "ordered twice"}
			}
			seen[name] = true
		}
	}
	return nil
}
