package placement

import (
	"fmt"
	"sort"
	"strings"

	"github.com/vodascheduler/voda/internal/model"
)

// Placer decides where each job's workers run.
type Placer interface {
	Name() string
	// Place returns a placement for every job of alloc with GPUs, or
	// reports it unplaced. It must not modify snap or alloc.
	Place(snap *model.Snapshot, alloc model.Allocation) (Result, error)
}

// Unplaced is a job the placer could not place, and why.
type Unplaced struct {
	Job    string
	GPUs   int
	Reason string
}

// Result is a placer's answer.
type Result struct {
	Placement model.Placement
	Unplaced  []Unplaced
}

// Registry maps case-insensitive names to placer factories.
type Registry struct {
	factories map[string]func() Placer
	names     []string
}

// Builtin returns the registry of in-tree placers.
func Builtin() *Registry {
	r := &Registry{factories: map[string]func() Placer{}}
	r.mustAdd(GreedyName, func() Placer { return NewGreedy() })
	return r
}

func (r *Registry) mustAdd(name string, f func() Placer) {
	if err := r.Register(name, f); err != nil {
		// Only reachable through a programming error in Builtin.
		panic(err)
	}
}

// Register adds a placer; a duplicate name is an error.
func (r *Registry) Register(name string, f func() Placer) error {
	key := strings.ToLower(name)
	if _, ok := r.factories[key]; ok {
		return fmt.Errorf("register placer %q: already registered", name)
	}
	r.factories[key] = f
	r.names = append(r.names, name)
	return nil
}

// Names lists the registered placers.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// New returns the named placer.
func (r *Registry) New(name string) (Placer, error) {
	f, ok := r.factories[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return nil, fmt.Errorf("unknown placer %q (known: %s)", name, strings.Join(r.names, ", "))
	}
	return f(), nil
}

// Check verifies a result against the snapshot and allocation: capacity
// never exceeded, every job with GPUs either placed with exactly its count
// or reported unplaced, workers only on known nodes.
func Check(snap *model.Snapshot, alloc model.Allocation, res Result) error {
	capacity := make(map[string]int, len(snap.Nodes))
	for _, n := range snap.Nodes {
		capacity[n.Name] = n.GPUs
	}
	used := map[string]int{}
	unplaced := map[string]bool{}
	for _, u := range res.Unplaced {
		unplaced[u.Job] = true
	}
	// Every job with GPUs and every job placed, not only the ordered ones:
	// a job left out of the order must not escape the capacity check.
	names := jobOrder(snap, alloc)
	listed := make(map[string]bool, len(names))
	for _, name := range names {
		listed[name] = true
	}
	var extra []string
	for name := range res.Placement {
		if !listed[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range append(names, extra...) {
		g := alloc.GPUs[name]
		p, placed := res.Placement[name]
		switch {
		case g == 0 && placed && p.Workers() > 0:
			return fmt.Errorf("job %s: placed %d workers without an allocation", name, p.Workers())
		case g > 0 && unplaced[name]:
			if placed && p.Workers() > 0 {
				return fmt.Errorf("job %s: both placed and unplaced", name)
			}
		case g > 0 && p.Workers() != g:
			return fmt.Errorf("job %s: placed %d workers, allocated %d", name, p.Workers(), g)
		}
		for _, nw := range p {
			if _, ok := capacity[nw.Node]; !ok {
				return fmt.Errorf("job %s: unknown node %s", name, nw.Node)
			}
			if nw.Workers <= 0 {
				return fmt.Errorf("job %s: %d workers on node %s", name, nw.Workers, nw.Node)
			}
			used[nw.Node] += nw.Workers
		}
	}
	for _, n := range snap.Nodes {
		if used[n.Name] > n.GPUs {
			return fmt.Errorf("node %s: %d workers on %d GPUs", n.Name, used[n.Name], n.GPUs)
		}
	}
	return nil
}

// jobOrder lists the jobs a placer must consider, each once: alloc.Order,
// then the jobs with GPUs it left out in snapshot order, then any other
// names of alloc.GPUs sorted. The scheduler completes the order before
// placing, but a Placer must place every job with GPUs whatever the order.
func jobOrder(snap *model.Snapshot, alloc model.Allocation) []string {
	seen := make(map[string]bool, len(alloc.Order))
	out := make([]string, 0, max(len(alloc.Order), len(alloc.GPUs)))
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, name := range alloc.Order {
		add(name)
	}
	for i := range snap.Jobs {
		if name := snap.Jobs[i].Spec.Name; alloc.GPUs[name] != 0 {
			add(name)
		}
	}
	var rest []string
	for name := range alloc.GPUs {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}
