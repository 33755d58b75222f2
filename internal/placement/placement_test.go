package placement

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
)

func greedyEntry(name string) Entry {
	return Entry{Name: name, New: func(*registry.Params) (Placer, error) { return NewGreedy(), nil }}
}

func TestBuiltinRegistry(t *testing.T) {
	r := Builtin()
	if diff := cmp.Diff([]string{TopologyName, GreedyName}, r.Names()); diff != "" {
		t.Errorf("Builtin().Names() (-want,+got):\n%s", diff)
	}
	if _, ok := r.Lookup(DefaultName); !ok {
		t.Errorf("DefaultName %q is not registered", DefaultName)
	}
	for _, tc := range []struct{ in, want string }{
		{"greedy", GreedyName}, {"GREEDY", GreedyName}, {" greedy ", GreedyName},
		{"topology", TopologyName}, {"Topology", TopologyName},
	} {
		p, err := r.New(tc.in, nil)
		if err != nil {
			t.Errorf("New(%q) error: %v", tc.in, err)
			continue
		}
		if got := p.Name(); got != tc.want {
			t.Errorf("New(%q).Name() = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRegistryParams(t *testing.T) {
	r := Builtin()
	params := func(kv ...string) *registry.Params {
		p, err := registry.ParseParams(kv)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	pl, err := r.New("topology", params("migration_budget=4", "restart_cost=10", "node_penalty=1.5", "keep_resized=true"))
	if err != nil {
		t.Fatalf("New(topology, valid params) error: %v", err)
	}
	want := TopologyOptions{MigrationBudget: 4, KeepResized: true, RestartCost: 10, NodePenalty: 1.5}
	if got := pl.(*Topology).Options(); got != want {
		t.Errorf("options = %+v, want %+v", got, want)
	}
	if got := mustTopology(t, r, nil).Options(); got != DefaultTopologyOptions() {
		t.Errorf("default options = %+v, want %+v", got, DefaultTopologyOptions())
	}
	for _, tc := range []struct {
		name string
		kv   []string
		want string
	}{
		{"topology", []string{"migration_budget=-1"}, "migration_budget -1: must not be negative"},
		{"topology", []string{"migration_budget=many"}, `param migration_budget: "many" is not an integer`},
		{"topology", []string{"restart_cost=-3"}, "restart_cost -3: must be a non-negative number"},
		{"topology", []string{"node_penalty=NaN"}, "node_penalty NaN"},
		{"topology", []string{"budget=3"}, "unknown param(s) budget"},
		{"topology", []string{"keep_resized=maybe"}, `param keep_resized: "maybe" is not true or false`},
		{"greedy", []string{"migration_budget=3"}, "placer greedy: unknown param(s) migration_budget"},
	} {
		_, err := r.New(tc.name, params(tc.kv...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s, %v) error = %v, want it to contain %q", tc.name, tc.kv, err, tc.want)
		}
	}
}

func mustTopology(t *testing.T, r *Registry, p *registry.Params) *Topology {
	t.Helper()
	pl, err := r.New(TopologyName, p)
	if err != nil {
		t.Fatal(err)
	}
	return pl.(*Topology)
}

// TestBuiltinIsFresh checks that registries share no state.
func TestBuiltinIsFresh(t *testing.T) {
	r := Builtin()
	if err := r.Register(greedyEntry("spread")); err != nil {
		t.Fatalf("Register(spread) error: %v", err)
	}
	if _, err := Builtin().New("spread", nil); err == nil {
		t.Errorf("Builtin().New(spread) error = nil, want unknown: registries must not share state")
	}
}

func TestCheck(t *testing.T) {
	snap := &model.Snapshot{
		Nodes: nodes(4, 2),
		Jobs:  []model.Job{job("a", 0, nil), job("b", 1, nil), job("c", 2, nil)},
	}
	alloc := model.Allocation{GPUs: map[string]int{"a": 3, "b": 2, "c": 0}, Order: []string{"a", "b", "c"}}
	tests := []struct {
		name  string
		alloc model.Allocation
		res   Result
		// want is a substring of the error; "" means valid.
		want string
	}{
		{
			name: "valid",
			res:  Result{Placement: model.Placement{"a": {at("n0", 3)}, "b": {at("n1", 1), at("n0", 1)}}},
		},
		{
			name: "unplaced job",
			res: Result{Placement: model.Placement{"a": {at("n0", 3)}},
				Unplaced: []Unplaced{{Job: "b", GPUs: 2, Reason: "r"}}},
		},
		{
			name: "unplaced job with an empty entry",
			res: Result{Placement: model.Placement{"a": {at("n0", 3)}, "b": nil},
				Unplaced: []Unplaced{{Job: "b", GPUs: 2, Reason: "r"}}},
		},
		{
			name: "job without GPUs with an empty entry",
			res:  Result{Placement: model.Placement{"a": {at("n0", 3)}, "b": {at("n1", 2)}, "c": {}}},
		},
		{
			name: "over capacity",
			res:  Result{Placement: model.Placement{"a": {at("n0", 3)}, "b": {at("n0", 2)}}},
			want: "node n0: 5 workers on 4 GPUs",
		},
		{
			name: "too few workers",
			res:  Result{Placement: model.Placement{"a": {at("n0", 2)}, "b": {at("n1", 2)}}},
			want: "job a: placed 2 workers, allocated 3",
		},
		{
			name: "too many workers",
			res:  Result{Placement: model.Placement{"a": {at("n0", 4)}, "b": {at("n1", 2)}}},
			want: "job a: placed 4 workers, allocated 3",
		},
		{
			name: "job dropped silently",
			res:  Result{Placement: model.Placement{"a": {at("n0", 3)}}},
			want: "job b: placed 0 workers, allocated 2",
		},
		{
			name: "unknown node",
			res:  Result{Placement: model.Placement{"a": {at("n0", 3)}, "b": {at("gone", 2)}}},
			want: "job b: unknown node gone",
		},
		{
			name: "zero-worker entry",
			res:  Result{Placement: model.Placement{"a": {at("n0", 3), at("n1", 0)}, "b": {at("n1", 2)}}},
			want: "job a: 0 workers on node n1",
		},
		{
			name: "negative entry",
			res:  Result{Placement: model.Placement{"a": {at("n0", 4), at("n1", -1)}, "b": {at("n1", 2)}}},
			want: "job a: -1 workers on node n1",
		},
		{
			name: "placed without allocation",
			res:  Result{Placement: model.Placement{"a": {at("n0", 3)}, "b": {at("n1", 2)}, "c": {at("n0", 1)}}},
			want: "job c: placed 1 workers without an allocation",
		},
		{
			name: "both placed and unplaced",
			res: Result{Placement: model.Placement{"a": {at("n0", 3)}, "b": {at("n1", 2)}},
				Unplaced: []Unplaced{{Job: "b", GPUs: 2, Reason: "r"}}},
			want: "job b: both placed and unplaced",
		},
		{
			name: "placed without allocation, job not in the order",
			res:  Result{Placement: model.Placement{"a": {at("n0", 3)}, "b": {at("n1", 2)}, "ghost": {at("n0", 4)}}},
			want: "job ghost: placed 4 workers without an allocation",
		},
		{
			name:  "job with GPUs left out of the order and dropped",
			alloc: model.Allocation{GPUs: map[string]int{"a": 3, "b": 2}, Order: []string{"a"}},
			res:   Result{Placement: model.Placement{"a": {at("n0", 3)}}},
			want:  "job b: placed 0 workers, allocated 2",
		},
		{
			name:  "over capacity through a job left out of the order",
			alloc: model.Allocation{GPUs: map[string]int{"a": 3, "b": 2}, Order: []string{"a"}},
			res:   Result{Placement: model.Placement{"a": {at("n0", 3)}, "b": {at("n0", 2)}}},
			want:  "node n0: 5 workers on 4 GPUs",
		},
		{
			name:  "a job ordered twice is counted once",
			alloc: model.Allocation{GPUs: map[string]int{"a": 3, "b": 2}, Order: []string{"a", "b", "a"}},
			res:   Result{Placement: model.Placement{"a": {at("n0", 3)}, "b": {at("n1", 2)}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.alloc
			if a.GPUs == nil {
				a = alloc
			}
			err := Check(snap, a, tc.res)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check() = %v, want nil", err)
			case tc.want != "" && err == nil:
				t.Errorf("Check() = nil, want an error containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("Check() = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}
