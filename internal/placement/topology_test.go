package placement

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/model"
)

// remaining sets a job's estimated remaining time on one GPU (negative:
// unknown) and a linear speedup.
func remaining(j model.Job, sec float64) model.Job {
	j.Est.RemainingSeconds = sec
	return j
}

func topology(t testing.TB, o TopologyOptions) *Topology {
	t.Helper()
	p, err := NewTopology(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTopologyPlace(t *testing.T) {
	noMoves := TopologyOptions{RestartCost: DefaultRestartCost, NodePenalty: DefaultNodePenalty}
	def := DefaultTopologyOptions()
	const long = 3600.0 // seconds left: long enough to be worth a move
	tests := []struct {
		name     string
		opts     TopologyOptions
		nodes    []model.Node
		jobs     []model.Job
		alloc    model.Allocation
		want     model.Placement
		unplaced []Unplaced
	}{
		{
			name:  "new job on the node that fits it most tightly",
			opts:  def,
			nodes: nodes(8, 4, 6),
			jobs:  []model.Job{job("a", 0, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n1", 4)}},
		},
		{
			name:  "new job too big for one node: largest first, then the tightest",
			opts:  def,
			nodes: nodes(4, 8, 4, 2),
			jobs:  []model.Job{job("a", 0, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 10}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n1", 8), at("n3", 2)}},
		},
		{
			name:  "larger needs are placed first so they stay whole",
			opts:  noMoves,
			nodes: nodes(4, 8),
			jobs:  []model.Job{job("a", 0, nil), job("b", 1, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 8}, Order: []string{"a", "b"}},
			want:  model.Placement{"b": {at("n1", 8)}, "a": {at("n0", 4)}},
		},
		{
			name:  "unchanged job stays, rank order included",
			opts:  def,
			nodes: nodes(4, 4, 4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("n2", 1), at("n0", 3)}), job("b", 1, model.JobPlacement{at("n2", 3), at("n1", 1)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 4}, Order: []string{"a", "b"}},
			// Each could fit on one node, but no node has room for either.
			want: model.Placement{"a": {at("n2", 1), at("n0", 3)}, "b": {at("n2", 3), at("n1", 1)}},
		},
		{
			name:  "growing job fills the nodes it already uses first",
			opts:  def,
			nodes: nodes(4, 4, 4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("n1", 2)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n1", 4)}},
		},
		{
			name:  "growing job beyond its node keeps its workers and adds the fewest nodes",
			opts:  noMoves,
			nodes: nodes(4, 4, 2, 4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("n1", 3)}), job("b", 1, model.JobPlacement{at("n0", 1)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 6, "b": 1}, Order: []string{"a", "b"}},
			want:  model.Placement{"a": {at("n1", 4), at("n2", 2)}, "b": {at("n0", 1)}},
		},
		{
			name:  "shrinking job gives back from the nodes where it has fewest workers",
			opts:  noMoves,
			nodes: nodes(4, 4, 4, 4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("n0", 3), at("n1", 1), at("n2", 2), at("n3", 2)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 5}, Order: []string{"a"}},
			// n1 (1) goes, then one of the two 2s: the later in rank order.
			want: model.Placement{"a": {at("n0", 3), at("n2", 2)}},
		},
		{
			name:  "a shrinking job restarts anyway, so it also gathers onto one node",
			opts:  def,
			nodes: nodes(4, 4, 4),
			jobs:  []model.Job{remaining(job("a", 0, model.JobPlacement{at("n0", 2), at("n1", 2), at("n2", 2)}), 1)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n0", 4)}},
		},
		{
			name:  "a growing job restarts anyway, so it moves whole to a node that holds it",
			opts:  def,
			nodes: nodes(4, 4),
			jobs: []model.Job{
				remaining(job("a", 0, model.JobPlacement{at("n0", 2)}), 1),
				remaining(job("b", 1, model.JobPlacement{at("n0", 2)}), long),
			},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 2}, Order: []string{"a", "b"}},
			want:  model.Placement{"a": {at("n1", 4)}, "b": {at("n0", 2)}},
		},
		{
			name:  "keep_resized keeps a growing job's workers where they are",
			opts:  TopologyOptions{KeepResized: true, MigrationBudget: DefaultMigrationBudget, RestartCost: DefaultRestartCost, NodePenalty: DefaultNodePenalty},
			nodes: nodes(4, 4),
			jobs: []model.Job{
				remaining(job("a", 0, model.JobPlacement{at("n0", 2)}), 1),
				remaining(job("b", 1, model.JobPlacement{at("n0", 2)}), long),
			},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 2}, Order: []string{"a", "b"}},
			want:  model.Placement{"a": {at("n0", 2), at("n1", 2)}, "b": {at("n0", 2)}},
		},
		{
			name:  "fragmented job consolidates once room appears",
			opts:  def,
			nodes: nodes(4, 4),
			jobs:  []model.Job{remaining(job("a", 0, model.JobPlacement{at("n1", 2), at("n0", 2)}), long)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4}, Order: []string{"a"}},
			// Rank 0's node stays.
			want: model.Placement{"a": {at("n1", 4)}},
		},
		{
			name:  "no consolidation when the job ends before a restart pays off",
			opts:  def,
			nodes: nodes(4, 4),
			jobs:  []model.Job{remaining(job("a", 0, model.JobPlacement{at("n1", 2), at("n0", 2)}), 4*60)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4}, Order: []string{"a"}},
			// 4 min on one GPU is 1 min on four: the move saves 20 s of it.
			want: model.Placement{"a": {at("n1", 2), at("n0", 2)}},
		},
		{
			name:  "no consolidation beyond the migration budget",
			opts:  TopologyOptions{MigrationBudget: 1, RestartCost: DefaultRestartCost, NodePenalty: DefaultNodePenalty},
			nodes: nodes(4, 4),
			jobs:  []model.Job{remaining(job("a", 0, model.JobPlacement{at("n1", 2), at("n0", 2)}), long)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n1", 2), at("n0", 2)}},
		},
		{
			name:  "the budget goes to the job that moves fewest workers when the first does not fit",
			opts:  TopologyOptions{MigrationBudget: 1, RestartCost: DefaultRestartCost, NodePenalty: DefaultNodePenalty},
			nodes: nodes(4, 4, 4, 4),
			jobs: []model.Job{
				remaining(job("a", 0, model.JobPlacement{at("n0", 2), at("n1", 2)}), long),
				remaining(job("b", 1, model.JobPlacement{at("n2", 3), at("n3", 1)}), long),
			},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 4}, Order: []string{"a", "b"}},
			want:  model.Placement{"a": {at("n0", 2), at("n1", 2)}, "b": {at("n2", 4)}},
		},
		{
			name:  "swap: a job on one node moves so a spread job gets a node of its own",
			opts:  def,
			nodes: nodes(4, 4),
			jobs: []model.Job{
				remaining(job("a", 0, model.JobPlacement{at("n0", 2), at("n1", 2)}), long),
				remaining(job("b", 1, model.JobPlacement{at("n0", 2)}), long),
				remaining(job("c", 2, model.JobPlacement{at("n1", 2)}), long),
			},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 2, "c": 2}, Order: []string{"a", "b", "c"}},
			want:  model.Placement{"a": {at("n0", 4)}, "b": {at("n1", 2)}, "c": {at("n1", 2)}},
		},
		{
			name:  "no swap when the two restarts cost more than the spread job saves",
			opts:  def,
			nodes: nodes(4, 4),
			jobs: []model.Job{
				remaining(job("a", 0, model.JobPlacement{at("n0", 2), at("n1", 2)}), 600),
				remaining(job("b", 1, model.JobPlacement{at("n0", 2)}), long),
				remaining(job("c", 2, model.JobPlacement{at("n1", 2)}), long),
			},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 2, "c": 2}, Order: []string{"a", "b", "c"}},
			// 600 s on one GPU is 150 s on four; one node saves 50 s < 60 s.
			want: model.Placement{"a": {at("n0", 2), at("n1", 2)}, "b": {at("n0", 2)}, "c": {at("n1", 2)}},
		},
		{
			name:  "a new node is used to consolidate",
			opts:  def,
			nodes: nodes(4, 4, 4),
			jobs: []model.Job{
				remaining(job("a", 0, model.JobPlacement{at("n0", 2), at("n1", 2)}), long),
				remaining(job("b", 1, model.JobPlacement{at("n0", 2)}), long),
				remaining(job("c", 2, model.JobPlacement{at("n1", 2)}), long),
			},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 2, "c": 2}, Order: []string{"a", "b", "c"}},
			want:  model.Placement{"a": {at("n2", 4)}, "b": {at("n0", 2)}, "c": {at("n1", 2)}},
		},
		{
			name:  "workers on a removed node are re-placed next to the rest",
			opts:  noMoves,
			nodes: nodes(4, 4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("gone", 2), at("n1", 2)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4}, Order: []string{"a"}},
			want:  model.Placement{"a": {at("n1", 4)}},
		},
		{
			name:  "a shrunken node keeps the higher-priority job's workers",
			opts:  noMoves,
			nodes: nodes(4, 4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("n0", 4)}), job("b", 1, model.JobPlacement{at("n0", 4)})},
			alloc: model.Allocation{GPUs: map[string]int{"a": 4, "b": 4}, Order: []string{"b", "a"}},
			want:  model.Placement{"b": {at("n0", 4)}, "a": {at("n1", 4)}},
		},
		{
			name:  "heterogeneous nodes: a big job takes the big node",
			opts:  def,
			nodes: nodes(2, 2, 8, 4),
			jobs:  []model.Job{job("a", 0, nil), job("b", 1, nil), job("c", 2, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 2, "b": 8, "c": 4}, Order: []string{"a", "b", "c"}},
			want:  model.Placement{"a": {at("n0", 2)}, "b": {at("n2", 8)}, "c": {at("n3", 4)}},
		},
		{
			name:     "an allocation beyond the cluster: the job that does not fit is reported",
			opts:     def,
			nodes:    nodes(4, 4),
			jobs:     []model.Job{job("a", 0, model.JobPlacement{at("n0", 2)}), job("b", 1, nil)},
			alloc:    model.Allocation{GPUs: map[string]int{"a": 4, "b": 6}, Order: []string{"a", "b"}},
			want:     model.Placement{"a": {at("n0", 4)}},
			unplaced: []Unplaced{{Job: "b", GPUs: 6, Reason: "needs 6 GPUs, 4 free"}},
		},
		{
			name:  "an unplaced job gives back what it kept",
			opts:  noMoves,
			nodes: nodes(4, 4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("n0", 2)}), job("b", 1, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 10, "b": 8}, Order: []string{"b", "a"}},
			want:  model.Placement{"b": {at("n0", 4), at("n1", 4)}},
			unplaced: []Unplaced{
				{Job: "a", GPUs: 10, Reason: "needs 10 GPUs, 0 free"},
			},
		},
		{
			name:     "no nodes",
			opts:     def,
			jobs:     []model.Job{job("a", 0, nil)},
			alloc:    model.Allocation{GPUs: map[string]int{"a": 1}, Order: []string{"a"}},
			want:     model.Placement{},
			unplaced: []Unplaced{{Job: "a", GPUs: 1, Reason: "needs 1 GPUs, 0 free"}},
		},
		{
			name:  "job without GPUs gets no placement and frees its node",
			opts:  def,
			nodes: nodes(4),
			jobs:  []model.Job{job("a", 0, model.JobPlacement{at("n0", 4)}), job("b", 1, nil)},
			alloc: model.Allocation{GPUs: map[string]int{"a": 0, "b": 4}, Order: []string{"a", "b"}},
			want:  model.Placement{"b": {at("n0", 4)}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkPlace(t, topology(t, tc.opts), &model.Snapshot{Nodes: tc.nodes, Jobs: tc.jobs}, tc.alloc, tc.want, tc.unplaced)
		})
	}
}

func TestTopologyUnknownJob(t *testing.T) {
	snap := &model.Snapshot{Nodes: nodes(4)}
	_, err := topology(t, DefaultTopologyOptions()).Place(snap, model.Allocation{GPUs: map[string]int{"ghost": 1}})
	if err == nil {
		t.Fatal("Place() with a job missing from the snapshot: error = nil")
	}
}

func TestNewTopologyRejectsBadOptions(t *testing.T) {
	for _, o := range []TopologyOptions{
		{MigrationBudget: -1},
		{RestartCost: -1},
		{NodePenalty: -0.1},
	} {
		if _, err := NewTopology(o); err == nil {
			t.Errorf("NewTopology(%+v) error = nil", o)
		}
	}
}

func TestBound(t *testing.T) {
	b := NewBound(nodes(2, 8, 0, 4))
	for _, tc := range []struct{ workers, want int }{
		{0, 0}, {-1, 0}, {1, 1}, {8, 1}, {9, 2}, {12, 2}, {13, 3}, {14, 3}, {15, 3}, {100, 3},
	} {
		if got := b.MinNodes(tc.workers); got != tc.want {
			t.Errorf("MinNodes(%d) = %d, want %d", tc.workers, got, tc.want)
		}
	}
	p := model.Placement{
		"one":    {at("n1", 8)},
		"split":  {at("n0", 2), at("n3", 2)},
		"needed": {at("n1", 8), at("n3", 1)},
		"wide":   {at("n1", 4), at("n3", 4), at("n0", 1)},
	}
	if got := Spread(nodes(2, 8, 0, 4), p); got != 2 {
		t.Errorf("Spread() = %d, want 2 (split and wide)", got)
	}
}

// movedWorkers counts the workers that change node from cur (restricted
// to nodes that still exist) to next, the way the scheduler counts
// migrations: workers added on a node beyond what the job had there, less
// the job's growth.
func movedWorkers(cur, next model.JobPlacement, capacity map[string]int) int {
	old := map[string]int{}
	total := 0
	for _, nw := range cur {
		if _, ok := capacity[nw.Node]; ok {
			old[nw.Node] += nw.Workers
			total += nw.Workers
		}
	}
	if total == 0 || next.Workers() == 0 {
		return 0
	}
	added := 0
	for _, nw := range next {
		added += max(0, nw.Workers-old[nw.Node])
	}
	return max(0, added-max(0, next.Workers()-total))
}

func TestTopologyProperties(t *testing.T) {
	const cases = 2000
	rng := rand.New(rand.NewPCG(20261121, 3))
	consolidated := 0 // cases where consolidation moved workers
	for c := range cases {
		snap, alloc := randomCase(rng)
		for i := range snap.Jobs {
			// Remaining time: unknown, short or long.
			snap.Jobs[i].Est.RemainingSeconds = []float64{-1, 30, 7200}[rng.IntN(3)]
		}
		capacity := capacities(snap)
		budget := 1 + rng.IntN(12)
		still := topology(t, TopologyOptions{KeepResized: true, RestartCost: DefaultRestartCost, NodePenalty: DefaultNodePenalty})
		moving := topology(t, TopologyOptions{MigrationBudget: budget, RestartCost: DefaultRestartCost, NodePenalty: DefaultNodePenalty})

		// Keeping resized jobs' workers, without consolidation: workers
		// stay, shrinking jobs give back from the nodes where they have
		// fewest, nothing moves.
		res0, fail := placeAndCheck(t, c, still, snap, alloc)
		for i := range snap.Jobs {
			j := &snap.Jobs[i]
			name, g := j.Spec.Name, alloc.GPUs[j.Spec.Name]
			got := res0.Placement[name]
			prev := map[string]int{}
			prevTotal := 0
			for _, nw := range j.State.Placement {
				if _, ok := capacity[nw.Node]; ok {
					prev[nw.Node] += nw.Workers
					prevTotal += nw.Workers
				}
			}
			if m := movedWorkers(j.State.Placement, got, capacity); m != 0 {
				fail("job %s: %d workers moved without consolidation: %v -> %v", name, m, j.State.Placement, got)
			}
			now := map[string]int{}
			for _, nw := range got {
				now[nw.Node] = nw.Workers
			}
			switch {
			case g == 0:
			case g >= prevTotal:
				for node, w := range prev {
					if now[node] < w {
						fail("job %s grows %d -> %d but lost workers on %s: %v -> %v", name, prevTotal, g, node, j.State.Placement, got)
					}
				}
				if g == prevTotal && onNodes(j.State.Placement, capacity) && !got.Equal(j.State.Placement) {
					fail("job %s: unchanged but placed %v, was %v", name, got, j.State.Placement)
				}
			default:
				for node, w := range now {
					if w > prev[node] {
						fail("job %s shrinks %d -> %d but added a worker on %s: %v -> %v", name, prevTotal, g, node, j.State.Placement, got)
					}
				}
				for a, wa := range prev {
					if now[a] == wa {
						continue
					}
					for b, wb := range prev {
						if wb < wa && now[b] > 0 {
							fail("job %s shrinks: reduced %s (%d) but kept %s (%d): %v -> %v", name, a, wa, b, wb, j.State.Placement, got)
						}
					}
				}
			}
		}
		// Fed back unchanged, nothing moves.
		if again, err := still.Place(feedBack(snap, res0), alloc); err != nil || !reflect.DeepEqual(res0, again) {
			fail("Place() on its own result without consolidation: %v\n%s", err, cmp.Diff(res0, again))
		}

		// With the defaults: an untouched job (same count, same nodes)
		// moves only onto fewer nodes, or whole from one node to another
		// as a swap partner; their moves stay within the budget.
		res, fail := placeAndCheck(t, c, moving, snap, alloc)
		total := 0
		for i := range snap.Jobs {
			j := &snap.Jobs[i]
			name := j.Spec.Name
			cur, got := j.State.Placement, res.Placement[name]
			if g := alloc.GPUs[name]; g == 0 || g != cur.Workers() || !onNodes(cur, capacity) {
				continue
			}
			total += movedWorkers(cur, got, capacity)
			if !got.Equal(cur) && got.Nodes() >= cur.Nodes() && (got.Nodes() != 1 || cur.Nodes() != 1) {
				fail("untouched job %s re-placed from %v to %v: neither onto fewer nodes nor a swap", name, cur, got)
			}
		}
		if total > budget {
			fail("%d workers of untouched jobs moved, budget %d", total, budget)
		}
		if total > 0 {
			consolidated++
		}

		// Repeated with the same allocation, consolidation converges and
		// then nothing moves.
		cur, curSnap := res, feedBack(snap, res)
		for round := 0; ; round++ {
			if round > len(snap.Jobs)+1 {
				fail("consolidation still moving after %d rounds", round)
			}
			next, err := moving.Place(curSnap, alloc)
			if err != nil {
				fail("round %d: %v", round, err)
			}
			moved := 0
			for i := range curSnap.Jobs {
				j := &curSnap.Jobs[i]
				moved += movedWorkers(j.State.Placement, next.Placement[j.Spec.Name], capacity)
			}
			if moved > budget {
				fail("round %d: %d workers moved, budget %d", round, moved, budget)
			}
			if moved == 0 {
				if !reflect.DeepEqual(cur, next) {
					fail("round %d: nothing moved but the result changed:\n%s", round, cmp.Diff(cur, next))
				}
				break
			}
			cur, curSnap = next, feedBack(curSnap, next)
		}
	}
	// The random cases must exercise consolidation, or the checks above
	// prove little.
	if consolidated < cases/20 {
		t.Errorf("consolidation moved workers in only %d of %d cases", consolidated, cases)
	}
	t.Logf("consolidation moved workers in %d of %d cases", consolidated, cases)
}
