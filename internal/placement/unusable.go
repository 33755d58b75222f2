package placement

import "github.com/vodascheduler/voda/internal/model"

// UnusableFreeGPUs returns the GPUs that res leaves free on nodes where
// no waiting job could run a single worker: the free GPUs of every node
// with fewer free than the smallest G (GPUs per worker) among the jobs
// that wait. A job waits when res reports it unplaced, or when it is in
// the snapshot, not done, and alloc gives it no GPUs. With no job
// waiting it returns 0: free GPUs nobody wants are idle, not stranded.
// A job whose G is larger than every node is left out: no placement
// would run it, so the GPUs it cannot use are not lost to fragmentation.
//
// It is the fragmentation the topology placer's defragmentation fights,
// measured after the fact, for metrics and the simulator's reports: free
// GPUs that a waiting job wants but cannot use as they are split. A node
// where the smallest waiting G fits counts as usable in full, whatever
// is left over after such workers. res must pass Check; nodes are
// counted by name, a job missing from the snapshot as G = 1, and a node
// given a negative GPU count as none free.
func UnusableFreeGPUs(snap *model.Snapshot, alloc model.Allocation, res Result) int {
	per := perWorker(snap)
	if per == nil {
		return 0 // every worker is one GPU, which fits in any free GPU
	}
	largest := 0
	for _, nd := range snap.Nodes {
		largest = max(largest, nd.GPUs)
	}
	smallest := 0
	want := func(g int) {
		if g <= largest && (smallest == 0 || g < smallest) {
			smallest = g
		}
	}
	for _, u := range res.Unplaced {
		want(per.of(u.Job))
	}
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		if !j.State.Status.Done() && alloc.GPUs[j.Spec.Name] == 0 {
			want(j.Spec.PerWorker())
		}
	}
	if smallest <= 1 {
		// Nothing waits, or a one-GPU worker fits in any free GPU.
		return 0
	}
	used := make(map[string]int, len(snap.Nodes))
	for name, jp := range res.Placement {
		pw := per.of(name)
		for _, nw := range jp {
			used[nw.Node] += nw.Workers * pw
		}
	}
	n := 0
	for _, nd := range snap.Nodes {
		if free := nd.GPUs - used[nd.Name]; free > 0 && free < smallest {
			n += free
		}
	}
	return n
}
