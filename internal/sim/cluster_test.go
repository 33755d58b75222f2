package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

// oneSize is a cluster of nodes nodes of perNode GPUs.
func oneSize(t testing.TB, nodes, perNode int) *cluster {
	t.Helper()
	c, err := newCluster(Options{Nodes: nodes, GPUsPerNode: perNode})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mixed(t testing.TB, groups ...NodeGroup) *cluster {
	t.Helper()
	c, err := newCluster(Options{NodeGroups: groups})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseNodeGroups(t *testing.T) {
	tests := []struct {
		in   string
		want []NodeGroup
		// err holds substrings of the error when the input is bad.
		err []string
	}{
		{in: "16x4", want: []NodeGroup{{16, 4}}},
		{in: "4x8,8x4", want: []NodeGroup{{4, 8}, {8, 4}}},
		{in: " 4 x 8 , 8X4 ", want: []NodeGroup{{4, 8}, {8, 4}}},
		{in: "1x8,2x8", want: []NodeGroup{{1, 8}, {2, 8}}},
		{in: "65536x16", want: []NodeGroup{{65536, 16}}}, // every limit reached exactly
		{in: "1x1024", want: []NodeGroup{{1, 1024}}},
		{in: "", err: []string{"no node groups", "4x8,8x4"}},
		{in: "  ", err: []string{"no node groups"}},
		{in: "4x8,", err: []string{`group ""`, "NODESxGPUS"}},
		{in: ",4x8", err: []string{`group ""`}},
		{in: "4", err: []string{`group "4"`, "NODESxGPUS"}},
		{in: "4*8", err: []string{`group "4*8"`, "NODESxGPUS"}},
		{in: "0x8", err: []string{"group 0x8", "at least 1 node"}},
		{in: "4x0", err: []string{"group 4x0", "at least 1 GPU"}},
		{in: "-1x8", err: []string{`group "-1x8"`, `nodes "-1"`, "positive whole number"}},
		{in: "4x-8", err: []string{`group "4x-8"`, `GPUs per node "-8"`, "positive whole number"}},
		{in: "+4x8", err: []string{`nodes "+4"`}},
		{in: "fourx8", err: []string{`nodes "four"`}},
		{in: "4xeight", err: []string{`GPUs per node "eight"`}},
		{in: "2.5x8", err: []string{`nodes "2.5"`}},
		{in: "4x8.0", err: []string{`GPUs per node "8.0"`}},
		{in: "1e3x8", err: []string{`nodes "1e3"`}},
		{in: "4x8x2", err: []string{`GPUs per node "8x2"`}},
		{in: "x8", err: []string{`nodes ""`}},
		{in: "99999999999999999999x8", err: []string{"nodes 99999999999999999999 is too large"}},
		{in: "65537x1", err: []string{"group 65537x1", "more than 65536 nodes"}},
		{in: "65536x1,1x1", err: []string{"group 1x1", "more than 65536 nodes"}},
		{in: "1x1025", err: []string{"group 1x1025", "1025 GPUs per node", "at most 1024"}},
		{in: "1024x1024,1x1", err: []string{"group 1x1", "more than 1048576 GPUs"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseNodeGroups(tc.in)
			if tc.err != nil {
				if err == nil {
					t.Fatalf("ParseNodeGroups(%q) = %v, want an error", tc.in, got)
				}
				for _, s := range tc.err {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNodeGroups(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseNodeGroups(%q) (-want,+got):\n%s", tc.in, diff)
			}
		})
	}
}

// FuzzParseNodeGroups: no input panics; whatever parses is within the
// limits, builds a cluster of as many GPUs, and reads back the same from
// its canonical form.
func FuzzParseNodeGroups(f *testing.F) {
	for _, s := range []string{"16x4", "4x8,8x4", " 1 X 2 ,3x4", "0x8", "4x", "x", ",", "65536x16", "1x1025", "-1x8", "1e3x8", "4x8x2", "٣x8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		groups, err := ParseNodeGroups(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if err := CheckNodeGroups(groups); err != nil {
			t.Fatalf("ParseNodeGroups(%q) = %v, which CheckNodeGroups rejects: %v", s, groups, err)
		}
		again, err := ParseNodeGroups(FormatNodeGroups(groups))
		if err != nil || !slices.Equal(again, groups) {
			t.Fatalf("%q read back from %q as %v (%v), want %v", FormatNodeGroups(groups), s, again, err, groups)
		}
		c, err := newCluster(Options{NodeGroups: groups})
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, g := range groups {
			total += g.Nodes * g.GPUs
		}
		if c.total != total || c.workers(1) != total || total > MaxGPUs {
			t.Fatalf("%v: total %d, workers of 1 GPU %d; want %d (at most %d)", groups, c.total, c.workers(1), total, MaxGPUs)
		}
	})
}

func TestNewClusterRejects(t *testing.T) {
	for name, o := range map[string]Options{
		"no nodes":           {GPUsPerNode: 4},
		"no GPUs":            {Nodes: 4},
		"groups and nodes":   {Nodes: 4, NodeGroups: []NodeGroup{{1, 8}}},
		"groups and size":    {GPUsPerNode: 4, NodeGroups: []NodeGroup{{1, 8}}},
		"empty group":        {NodeGroups: []NodeGroup{{1, 8}, {0, 4}}},
		"too many nodes":     {Nodes: MaxNodes + 1, GPUsPerNode: 1},
		"too large a node":   {Nodes: 1, GPUsPerNode: MaxGPUsPerNode + 1},
		"too many GPUs":      {NodeGroups: []NodeGroup{{MaxNodes / 2, MaxGPUsPerNode}}},
		"negative GPUs":      {NodeGroups: []NodeGroup{{1, -8}}},
		"negative node size": {Nodes: -1, GPUsPerNode: 8},
	} {
		if c, err := newCluster(o); err == nil {
			t.Errorf("%s: cluster %v, want an error", name, c)
		}
	}
}

// packedWorkersBefore is how the simulator packed k workers of g GPUs on
// nodes of one size before clusters could mix sizes.
func packedWorkersBefore(k, g, perNode int) []int {
	per := max(perNode/g, 1) * g
	var p []int
	for n := k * g; n > 0; n -= min(n, per) {
		p = append(p, min(n, per))
	}
	return p
}

func TestClusterPack(t *testing.T) {
	small := []NodeGroup{{1, 8}, {2, 4}} // 16 GPUs: 8, 4, 4
	tests := []struct {
		name   string
		groups []NodeGroup
		k, g   int
		want   []int
	}{
		{name: "one GPU each, largest node first", groups: small, k: 12, g: 1, want: []int{8, 4}},
		{name: "smaller nodes listed first", groups: []NodeGroup{{2, 4}, {1, 8}}, k: 12, g: 1, want: []int{8, 4}},
		{name: "workers of 4 use both sizes", groups: small, k: 3, g: 4, want: []int{8, 4}},
		{name: "workers of 8 skip the 4-GPU nodes", groups: small, k: 2, g: 8, want: []int{8, 8}},
		{name: "past the cluster: more of the largest", groups: small, k: 20, g: 1, want: []int{8, 4, 4, 4}},
		{name: "workers of 3: two on an 8, one on a 4", groups: small, k: 4, g: 3, want: []int{6, 3, 3}},
		{name: "larger than every node: one a node", groups: small, k: 2, g: 16, want: []int{16, 16}},
		{name: "nothing", groups: small, k: 0, g: 4, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mixed(t, tc.groups...).pack(tc.k, tc.g); !slices.Equal(got, tc.want) {
				t.Errorf("pack(%d, %d) on %v = %v, want %v", tc.k, tc.g, tc.groups, got, tc.want)
			}
		})
	}
	// On one size of node, packing is what it was.
	for _, perNode := range []int{1, 3, 4, 8} {
		c := oneSize(t, 3, perNode)
		for g := 1; g <= 10; g++ {
			for k := 0; k <= 12; k++ {
				if got, want := c.pack(k, g), packedWorkersBefore(k, g, perNode); !slices.Equal(got, want) {
					t.Errorf("3x%d: pack(%d, %d) = %v, before %v", perNode, k, g, got, want)
				}
			}
		}
	}
}

func TestClusterWorkers(t *testing.T) {
	c := mixed(t, NodeGroup{1, 8}, NodeGroup{2, 4})
	for g, want := range map[int]int{1: 16, 2: 8, 3: 4, 4: 4, 5: 1, 8: 1, 9: 0, 16: 0} {
		if got := c.workers(g); got != want {
			t.Errorf("workers(%d) = %d, want %d", g, got, want)
		}
	}
	if c.total != 16 || c.largest() != 8 || c.String() != "1x8,2x4" {
		t.Errorf("total %d, largest %d, %q; want 16, 8, 1x8,2x4", c.total, c.largest(), c.String())
	}
}

// placements records the nodes each job was ever placed on, by the
// placer it wraps.
type placements struct {
	placement.Placer
	nodes map[string]map[string]bool
}

func (p *placements) Place(snap *model.Snapshot, alloc model.Allocation) (placement.Result, error) {
	res, err := p.Placer.Place(snap, alloc)
	for job, jp := range res.Placement {
		for _, nw := range jp {
			if p.nodes[job] == nil {
				p.nodes[job] = map[string]bool{}
			}
			p.nodes[job][nw.Node] = true
		}
	}
	return res, err
}

// sizesUsed is the sizes of the nodes job was ever placed on, ascending.
func (p *placements) sizesUsed(job string, size map[string]int) []int {
	var s []int
	for n := range p.nodes[job] {
		if !slices.Contains(s, size[n]) {
			s = append(s, size[n])
		}
	}
	slices.Sort(s)
	return s
}

// Jobs of G GPUs a worker on one 8-GPU node and two 4-GPU nodes
// (node-000 holds 8, node-001 and node-002 4), linear jobs of 10 epochs
// (600 s of one-GPU work), alone or side by side, hand-computed: a worker
// of 8 runs only on the 8-GPU node; workers of 4 fit either size; a G no
// node holds, or more workers of 8 than there are 8-GPU nodes, waits and
// the run ends without it. The cluster counts all 16 GPUs. Event-driven
// runs are checked to the second; runs at a fixed interval for where the
// jobs ran and that the run ends.
func TestMixedNodeSizes(t *testing.T) {
	groups := []NodeGroup{{1, 8}, {2, 4}}
	size := map[string]int{"node-000": 8, "node-001": 4, "node-002": 4}
	linear := func(name string, g, workers int) workload.Job {
		return workload.Job{Name: name, App: "linear", MinWorkers: workers, MaxWorkers: workers, Requested: workers, GPUsPerWorker: g, Epochs: 10}
	}
	type result struct {
		jct   float64 // 0: never started
		sizes []int   // the sizes of the nodes it ran on
	}
	tests := []struct {
		name string
		jobs []workload.Job
		want map[string]result
		util float64
	}{
		{
			// a: 600/8 + 30 = 105 s on the 8-GPU node; b: 600/4 + 30 =
			// 180 s on a 4-GPU node. 8x105 + 4x180 = 1560 GPU-seconds over
			// 16 GPUs x 180 s.
			name: "G=8 beside G=4",
			jobs: []workload.Job{linear("a", 8, 1), linear("b", 4, 1)},
			want: map[string]result{"a": {105, []int{8}}, "b": {180, []int{4}}},
			util: 1560.0 / (16 * 180),
		},
		{
			// Three workers of 4: two on the 8-GPU node, one on a 4-GPU
			// node; 600/12 + 30 = 80 s on 12 of 16 GPUs.
			name: "G=4 spans both sizes",
			jobs: []workload.Job{linear("c", 4, 3)},
			want: map[string]result{"c": {80, []int{4, 8}}},
			util: 12.0 / 16,
		},
		{
			// Two workers of 8 need two 8-GPU nodes; there is one, though
			// the cluster has 16 GPUs. e runs alone: 600/4 + 30 = 180 s.
			name: "two workers of 8 wait",
			jobs: []workload.Job{linear("e", 1, 4), linear("z8x2", 8, 2)},
			want: map[string]result{"z8x2": {}, "e": {180, nil}},
			util: 4.0 / 16,
		},
		{
			name: "G larger than every node waits",
			jobs: []workload.Job{linear("e", 1, 4), linear("z16", 16, 1)},
			want: map[string]result{"z16": {}, "e": {180, nil}},
			util: 4.0 / 16,
		},
	}
	for _, tc := range tests {
		for _, placer := range []string{placement.TopologyName, placement.GreedyName} {
			for _, interval := range []float64{0, 60} {
				t.Run(fmt.Sprintf("%s/%s/interval=%gs", tc.name, placer, interval), func(t *testing.T) {
					pl, err := placement.Builtin().New(placer, nil)
					if err != nil {
						t.Fatal(err)
					}
					rec := &placements{Placer: pl, nodes: map[string]map[string]bool{}}
					r, err := Run(context.Background(), tc.jobs, Options{NodeGroups: groups, Interval: time.Duration(interval) * time.Second,
						Allocator: newAlloc(t, "FIFO"), Placer: rec, Models: parametricSet(t)})
					if err != nil {
						t.Fatal(err)
					}
					if r.GPUs != 16 || r.Cluster != "1x8,2x4" {
						t.Errorf("cluster %d GPUs (%q), want 16 (1x8,2x4)", r.GPUs, r.Cluster)
					}
					lastEnd := 0.0
					for _, j := range r.Jobs {
						want := tc.want[j.Name]
						if want.jct == 0 {
							if j.Done || j.Start >= 0 || len(rec.nodes[j.Name]) > 0 {
								t.Errorf("%s started at %v (done %v, nodes %v), want it waiting", j.Name, j.Start, j.Done, rec.nodes[j.Name])
							}
							continue
						}
						lastEnd = max(lastEnd, j.End)
						if !j.Done {
							t.Errorf("%s did not finish", j.Name)
						}
						// With an interval the first cycle runs at 60 s, and
						// epochs end on whole seconds: only event-driven
						// times are the hand-computed ones.
						if got := j.End - j.Start; interval == 0 && (j.Start != 0 || math.Abs(got-want.jct) > 1e-6) {
							t.Errorf("%s: started at %v, ran %v s; want 0, %v s", j.Name, j.Start, got, want.jct)
						}
						if want.sizes != nil {
							if got := rec.sizesUsed(j.Name, size); !slices.Equal(got, want.sizes) {
								t.Errorf("%s ran on nodes %v of sizes %v, want sizes %v", j.Name, rec.nodes[j.Name], got, want.sizes)
							}
						}
					}
					// A job that waits forever does not keep the run going:
					// it stops at the last completion, or the cycle after.
					if r.EndTime > lastEnd+60 {
						t.Errorf("run ended at %v s, last completion at %v s", r.EndTime, lastEnd)
					}
					if got := report.Summarize(r).GPUUtilization; interval == 0 && math.Abs(got-tc.util) > 1e-9 {
						t.Errorf("utilisation %v, want %v", got, tc.util)
					}
				})
			}
		}
	}
}

// A duration job takes its duration at its requested count packed on as
// few nodes as possible, the largest first: 12 GPUs on an 8-GPU and a
// 4-GPU node (two nodes, as the placers put it), plus one restart.
func TestDurationJobOnMixedNodes(t *testing.T) {
	jobs := []workload.Job{{Name: "d", App: "amdahl", MinWorkers: 1, MaxWorkers: 12, Requested: 12, Duration: 3600}}
	for _, oracle := range []bool{false, true} {
		r, err := Run(context.Background(), jobs, Options{NodeGroups: []NodeGroup{{2, 4}, {1, 8}}, Estimator: estimatorOf(oracle),
			Allocator: newAlloc(t, "FIFO"), Placer: topologyPlacer(t), Models: parametricSet(t)})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Jobs[0].End; !r.Jobs[0].Done || math.Abs(got-3630) > 1e-6 {
			t.Errorf("oracle=%v: duration job ended at %v (done %v), want 3630", oracle, got, r.Jobs[0].Done)
		}
	}
}

// A job's worker range stops at the workers of its G the nodes hold: on
// one 8-GPU and two 4-GPU nodes, one of 8, four of 4. A job widened to
// the model's range gets that many, not the cluster's 16 GPUs in workers
// of G; one asking for more, as the workload gave it, asks for that many,
// and runs (given two workers of 8 it would be left unplaced whole and
// wait for ever); a minimum the nodes do not hold stays, and waits. With
// one GPU a worker the range is the workload's, past the cluster or not.
func TestWorkerRangeBoundByNodesThatHoldThem(t *testing.T) {
	groups := []NodeGroup{{1, 8}, {2, 4}}
	job := func(name string, g, lo, req, hi int, widen bool) workload.Job {
		return workload.Job{Name: name, App: "linear", MinWorkers: lo, MaxWorkers: hi, Requested: req, GPUsPerWorker: g, Epochs: 10, WidenMax: widen}
	}
	tests := []struct {
		job           workload.Job
		requested, hi int
		jct           float64 // 0: waits
	}{
		{job: job("g8-widened", 8, 1, 1, 1, true), requested: 1, hi: 1, jct: 600.0/8 + 30},
		{job: job("g4-widened", 4, 1, 1, 1, true), requested: 1, hi: 4, jct: 600.0/16 + 30},
		{job: job("g8-asks-3", 8, 1, 3, 3, false), requested: 1, hi: 1, jct: 600.0/8 + 30},
		{job: job("g4-asks-6", 4, 2, 6, 8, false), requested: 4, hi: 4, jct: 600.0/16 + 30},
		{job: job("g8-needs-2", 8, 2, 2, 3, false), requested: 2, hi: 2},
		{job: job("g1-widened", 1, 1, 1, 1, true), requested: 1, hi: 16, jct: 600.0/16 + 30},
		{job: job("g1-asks-20", 1, 1, 20, 24, false), requested: 20, hi: 24, jct: 600.0/16 + 30},
	}
	for _, tc := range tests {
		t.Run(tc.job.Name, func(t *testing.T) {
			opts := Options{NodeGroups: groups, Models: parametricSet(t)}
			got, err := Settings([]workload.Job{tc.job}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if s := got[0]; s.MinWorkers != tc.job.MinWorkers || s.Requested != tc.requested || s.MaxWorkers != tc.hi {
				t.Errorf("workers min %d, requested %d, max %d; want %d, %d, %d", s.MinWorkers, s.Requested, s.MaxWorkers, tc.job.MinWorkers, tc.requested, tc.hi)
			}
			opts.Allocator, opts.Placer = newAlloc(t, "ElasticFIFO"), topologyPlacer(t)
			r, err := Run(context.Background(), []workload.Job{tc.job}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if j := r.Jobs[0]; j.Done != (tc.jct > 0) || (j.Done && math.Abs(j.End-tc.jct) > 1e-6) {
				t.Errorf("done %v at %v s, want done at %v s (0: waiting)", j.Done, j.End, tc.jct)
			}
		})
	}
}

// On one size of node too, a job whose workers no node holds waits, and
// the run ends at the last job that can run rather than at MaxTime: the
// engine once counted a job's minimum workers against the cluster's GPUs,
// so a job of one worker of 16 GPUs on 8-GPU nodes kept it cycling for a
// simulated year.
func TestUnplaceableWorkersStopTheRun(t *testing.T) {
	jobs := []workload.Job{
		{Name: "e", App: "linear", MinWorkers: 4, MaxWorkers: 4, Requested: 4, Epochs: 10},
		{Name: "z16", App: "linear", MinWorkers: 1, MaxWorkers: 1, Requested: 1, GPUsPerWorker: 16, Epochs: 10},
	}
	for _, interval := range []time.Duration{0, time.Minute} {
		r := run(t, jobs, Options{Nodes: 2, GPUsPerNode: 8, Interval: interval, Allocator: newAlloc(t, "FIFO"), Placer: topologyPlacer(t)})
		e, z := r.Jobs[0], r.Jobs[1]
		if !e.Done || z.Done || z.Start >= 0 {
			t.Errorf("interval %v: e done %v; z16 done %v, started at %v; want e done and z16 waiting", interval, e.Done, z.Done, z.Start)
		}
		if r.EndTime > e.End+60 {
			t.Errorf("interval %v: run ended at %v s, e at %v s", interval, r.EndTime, e.End)
		}
	}
}
