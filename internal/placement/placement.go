package placement

import (
	"fmt"
	"slices"
	"sort"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
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

// Registry is a registry of placers. It holds no global state: Builtin
// returns a fresh one each time.
type Registry = registry.Registry[Placer]

// Entry describes one registered placer.
type Entry = registry.Entry[Placer]

// DefaultName is the placer the scheduler and the simulator use unless
// told otherwise.
const DefaultName = TopologyName

// Builtin returns a registry of the in-tree placers: topology (the
// default) and greedy.
func Builtin() *Registry {
	return registry.New[Placer]("placer").MustRegister(
		Entry{
			Name:    TopologyName,
			Summary: "fewest nodes per job, workers stay where they are, defragments within a migration budget (default)",
			Params:  topologyParams(),
			New:     newTopologyFromParams,
		},
		Entry{
			Name:    GreedyName,
			Summary: "fill the node with the most free GPUs first, as the Pollux artifact's baselines do",
			New: func(*registry.Params) (Placer, error) {
				return NewGreedy(), nil
			},
		},
	)
}

// Check verifies a result against the snapshot and allocation: capacity
// never exceeded, every job with GPUs either placed with exactly its count
// or reported unplaced, workers only on known nodes. A job's workers hold
// G GPUs each (its spec's PerWorker; 1 for a job not in the snapshot): a
// job allocated k GPUs has k/G workers, and a node's used GPUs are its
// workers times their G. An error names the first job, in priority order,
// that fails.
func Check(snap *model.Snapshot, alloc model.Allocation, res Result) error {
	// The scheduler core checks every placement it makes, and nearly all
	// pass: holds says so with a third of the map lookups that ordering
	// the jobs costs. Only a failure pays for the order, to name the
	// same job whatever the maps' iteration order.
	if holds(snap, alloc, res) {
		return nil
	}
	return firstFailure(snap, alloc, res)
}

// holds reports whether res passes every check of firstFailure, visiting
// the placed and the allocated jobs in map order.
func holds(snap *model.Snapshot, alloc model.Allocation, res Result) bool {
	index := make(map[string]int, len(snap.Nodes))
	for i, n := range snap.Nodes {
		index[n.Name] = i
	}
	used := make([]int, len(snap.Nodes))
	unplaced := make(map[string]bool, len(res.Unplaced))
	for _, u := range res.Unplaced {
		unplaced[u.Job] = true
	}
	per := perWorker(snap)
	for name, p := range res.Placement {
		g, w, pw := alloc.GPUs[name], p.Workers(), per.of(name)
		switch {
		case g == 0 && w > 0:
			return false
		case g > 0 && unplaced[name]:
			if w > 0 {
				return false
			}
		case g > 0 && w*pw != g:
			return false
		}
		for _, nw := range p {
			i, ok := index[nw.Node]
			if !ok || nw.Workers <= 0 {
				return false
			}
			used[i] += nw.Workers * pw
		}
	}
	// A job with GPUs that is neither placed nor reported unplaced, or
	// allocated GPUs that are not whole workers.
	for name, g := range alloc.GPUs {
		if g > 0 && g%per.of(name) != 0 {
			return false
		}
		if g > 0 && !unplaced[name] {
			if _, placed := res.Placement[name]; !placed {
				return false
			}
		}
	}
	for _, n := range snap.Nodes {
		if used[index[n.Name]] > n.GPUs {
			return false
		}
	}
	return true
}

// firstFailure is Check for a result that fails: it visits the jobs in
// jobOrder, then the placed jobs that leaves out, sorted, and returns the
// first failure.
func firstFailure(snap *model.Snapshot, alloc model.Allocation, res Result) error {
	// Workers are counted per node name: index maps a name to a slot of
	// used (the last node of that name, should a name repeat).
	index := make(map[string]int, len(snap.Nodes))
	for i, n := range snap.Nodes {
		index[n.Name] = i
	}
	used := make([]int, len(snap.Nodes))
	workers := make([]int, len(snap.Nodes)) // told apart from used only when some G > 1
	unplaced := map[string]bool{}
	for _, u := range res.Unplaced {
		unplaced[u.Job] = true
	}
	per := perWorker(snap)
	// Every job with GPUs and every job placed, not only the ordered ones:
	// a job left out of the order must not escape the capacity check.
	names := jobOrder(snap, alloc)
	if placedListed(names, res.Placement) < len(res.Placement) {
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
		names = append(names, extra...)
	}
	for _, name := range names {
		g, pw := alloc.GPUs[name], per.of(name)
		p, placed := res.Placement[name]
		switch {
		case g == 0 && placed && p.Workers() > 0:
			return fmt.Errorf("job %s: placed %d workers without an allocation", name, p.Workers())
		case g > 0 && g%pw != 0:
			return fmt.Errorf("job %s: allocated %d GPUs, not whole workers of %d GPUs", name, g, pw)
		case g > 0 && unplaced[name]:
			if placed && p.Workers() > 0 {
				return fmt.Errorf("job %s: both placed and unplaced", name)
			}
		case g > 0 && p.Workers()*pw != g:
			if pw > 1 {
				return fmt.Errorf("job %s: placed %d workers of %d GPUs, allocated %d GPUs (%d workers)", name, p.Workers(), pw, g, g/pw)
			}
			return fmt.Errorf("job %s: placed %d workers, allocated %d", name, p.Workers(), g)
		}
		for _, nw := range p {
			i, ok := index[nw.Node]
			if !ok {
				return fmt.Errorf("job %s: unknown node %s", name, nw.Node)
			}
			if nw.Workers <= 0 {
				return fmt.Errorf("job %s: %d workers on node %s", name, nw.Workers, nw.Node)
			}
			used[i] += nw.Workers * pw
			workers[i] += nw.Workers
		}
	}
	for _, n := range snap.Nodes {
		i := index[n.Name]
		if u := used[i]; u > n.GPUs {
			if w := workers[i]; w != u {
				return fmt.Errorf("node %s: %d GPUs used by %d workers on %d GPUs", n.Name, u, w, n.GPUs)
			}
			return fmt.Errorf("node %s: %d workers on %d GPUs", n.Name, u, n.GPUs)
		}
	}
	return nil
}

// perWorkers maps the name of every job of a snapshot whose workers hold
// more than one GPU to its G; it is nil when every worker holds one, as
// in every cluster before multi-GPU workers, so Check then pays nothing.
type perWorkers map[string]int

func perWorker(snap *model.Snapshot) perWorkers {
	var out perWorkers
	for i := range snap.Jobs {
		if g := snap.Jobs[i].Spec.PerWorker(); g > 1 {
			if out == nil {
				out = perWorkers{}
			}
			out[snap.Jobs[i].Spec.Name] = g
		}
	}
	return out
}

// of returns the GPUs per worker of the named job, 1 if not listed.
func (p perWorkers) of(name string) int {
	if g, ok := p[name]; ok {
		return g
	}
	return 1
}

// placedListed counts the jobs of p that names lists; names has no
// repeats, so p has a job names leaves out exactly when the count is
// below len(p).
func placedListed(names []string, p model.Placement) int {
	n := 0
	for _, name := range names {
		if _, ok := p[name]; ok {
			n++
		}
	}
	return n
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

// allocated is a job with GPUs, in placement order: gpus is its
// allocation, a multiple of per, the GPUs each of its workers holds.
type allocated struct {
	job  *model.Job
	gpus int
	per  int
}

// appendAllocated appends job j with g GPUs to out; g must be whole
// workers of the job's G.
func appendAllocated(out []allocated, j *model.Job, g int) ([]allocated, error) {
	per := j.Spec.PerWorker()
	if g%per != 0 {
		return nil, fmt.Errorf("place job %s: %d GPUs are not whole workers of %d GPUs", j.Spec.Name, g, per)
	}
	return append(out, allocated{job: j, gpus: g, per: per}), nil
}

// noRoomReason says why workers of per GPUs, g GPUs in all, cannot be
// placed although free GPUs would hold them: the free GPUs are split
// over nodes that each hold fewer than per, or no node is that large.
func noRoomReason(g, per, room, free, largest int) string {
	if per > largest {
		return fmt.Sprintf("needs workers of %d GPUs, the largest node has %d", per, largest)
	}
	return fmt.Sprintf("needs %d GPUs in workers of %d, %d GPUs free but room for %d such workers", g, per, free, room)
}

// allocatedJobs lists the jobs of alloc with GPUs in jobOrder, each with
// its snapshot entry; a job missing from the snapshot is an error.
//
// It walks the order itself rather than calling jobOrder: with unique
// job names (what the scheduler core guarantees) a slice indexed by job
// position marks the jobs already listed, where jobOrder needs a map of
// every name, and the names of alloc.GPUs need sorting only when some of
// them are neither in the snapshot nor in alloc.Order.
func allocatedJobs(snap *model.Snapshot, alloc model.Allocation) ([]allocated, error) {
	jobs := make(map[string]int, len(snap.Jobs))
	for i := range snap.Jobs {
		jobs[snap.Jobs[i].Spec.Name] = i
	}
	if len(jobs) < len(snap.Jobs) {
		// A name repeats: which entry wins is jobOrder's business.
		return allocatedJobsByName(snap, alloc, jobs)
	}
	out := make([]allocated, 0, min(len(alloc.GPUs), len(snap.Jobs)))
	listed := make([]bool, len(snap.Jobs))
	// keys counts the names of alloc.GPUs met so far, each once; absent
	// holds the names of alloc.Order missing from the snapshot.
	keys := 0
	var absent map[string]bool
	for _, name := range alloc.Order {
		g, in := alloc.GPUs[name]
		i, ok := jobs[name]
		switch {
		case ok && !listed[i]:
			listed[i] = true
			if in {
				keys++
			}
			if g > 0 {
				var err error
				if out, err = appendAllocated(out, &snap.Jobs[i], g); err != nil {
					return nil, err
				}
			}
		case !ok && !absent[name]:
			if g > 0 {
				return nil, fmt.Errorf("place job %s: not in the snapshot", name)
			}
			if absent == nil {
				absent = map[string]bool{}
			}
			absent[name] = true
			if in {
				keys++
			}
		}
	}
	for i := range snap.Jobs {
		if listed[i] {
			continue
		}
		g, in := alloc.GPUs[snap.Jobs[i].Spec.Name]
		if in {
			keys++
		}
		if g > 0 {
			var err error
			if out, err = appendAllocated(out, &snap.Jobs[i], g); err != nil {
				return nil, err
			}
		}
	}
	if keys == len(alloc.GPUs) {
		return out, nil
	}
	// Some job of alloc is in neither; jobOrder lists those last, sorted.
	var rest []string
	for name, g := range alloc.GPUs {
		if _, ok := jobs[name]; !ok && !absent[name] && g > 0 {
			rest = append(rest, name)
		}
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("place job %s: not in the snapshot", slices.Min(rest))
	}
	return out, nil
}

// allocatedJobsByName is allocatedJobs for a snapshot whose job names
// repeat: the last job of a name stands for it.
func allocatedJobsByName(snap *model.Snapshot, alloc model.Allocation, jobs map[string]int) ([]allocated, error) {
	var out []allocated
	for _, name := range jobOrder(snap, alloc) {
		g := alloc.GPUs[name]
		if g <= 0 {
			continue
		}
		i, ok := jobs[name]
		if !ok {
			return nil, fmt.Errorf("place job %s: not in the snapshot", name)
		}
		var err error
		if out, err = appendAllocated(out, &snap.Jobs[i], g); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// carve returns the first n elements of *slab and moves *slab past them.
// The piece is capped at n, so an append to it copies it out rather than
// overwriting the next piece. Placers cut their many small per-job slices
// from one slab: one allocation instead of one per job.
func carve[T any](slab *[]T, n int) []T {
	piece := (*slab)[:n:n]
	*slab = (*slab)[n:]
	return piece
}
