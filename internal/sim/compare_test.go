package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/sim/report"
	"github.com/vodascheduler/voda/internal/sim/workload"
)

func TestComparisonParams(t *testing.T) {
	both := []string{"greedy", "topology"}
	tests := []struct {
		name    string
		c       Comparison
		want    map[string][]string // the settings of the names given some
		wantErr *ParamError         // Err is not compared
	}{
		{name: "routed to the placer that declares it, with the restart cost",
			c:    Comparison{Placers: both, PlacerParams: []string{"migration_budget=3", " Node_Penalty = 0.2"}, Options: Options{RestartCost: 45 * time.Second}},
			want: map[string][]string{"topology": {"migration_budget=3", " Node_Penalty = 0.2", "restart_cost=45"}}},
		{name: "a restart_cost given wins",
			c:    Comparison{Placers: []string{"topology"}, PlacerParams: []string{" Restart_Cost = 5"}},
			want: map[string][]string{"topology": {" Restart_Cost = 5"}}},
		{name: "the default restart cost", c: Comparison{Placers: both}, want: map[string][]string{"topology": {"restart_cost=30"}}},
		{name: "no restart cost", c: Comparison{Placers: both, Options: Options{RestartCost: -1}}, want: map[string][]string{"topology": {"restart_cost=0"}}},
		{name: "routed to the algorithm that declares it",
			c:    Comparison{Algorithms: []string{"FIFO", "Tiresias"}, AlgorithmParams: []string{"threshold=10"}},
			want: map[string][]string{"Tiresias": {"threshold=10"}}},
		{name: "declared by none",
			c:       Comparison{Placers: both, PlacerParams: []string{"migration_budget=3", "Bogus=1"}},
			wantErr: &ParamError{Kind: "placer", Param: "bogus", Names: both}},
		{name: "one algorithm takes every setting and rejects what it does not know",
			c:       Comparison{AlgorithmParams: []string{"threshold=10"}},
			wantErr: &ParamError{Kind: "algorithm", Entry: "FIFO"}},
		{name: "a bad value",
			c:       Comparison{Placers: both, PlacerParams: []string{"node_penalty=x"}},
			wantErr: &ParamError{Kind: "placer", Entry: "topology"}},
		{name: "no value", c: Comparison{AlgorithmParams: []string{"novalue"}}, wantErr: &ParamError{Kind: "algorithm"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.c.Algorithms == nil {
				tc.c.Algorithms = []string{"FIFO"}
			}
			if tc.c.Placers == nil {
				tc.c.Placers = []string{"greedy"}
			}
			algs, placers, err := tc.c.params()
			if tc.wantErr != nil {
				var pe *ParamError
				if !errors.As(err, &pe) {
					t.Fatalf("error %v, want a *ParamError", err)
				}
				if diff := cmp.Diff(tc.wantErr, pe, cmpopts.IgnoreFields(ParamError{}, "Err")); diff != "" {
					t.Errorf("error (-want,+got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				if diff := cmp.Diff(want, append(algs[name], placers[name]...)); diff != "" {
					t.Errorf("%s (-want,+got):\n%s", name, diff)
				}
			}
		})
	}
}

func TestComparisonRun(t *testing.T) {
	c := Comparison{
		Workloads: []Workload{
			Generated(workload.GenOptions{Jobs: 12, Seed: 1}),
			Generated(workload.GenOptions{Jobs: 12, Seed: 2}),
		},
		Algorithms:      []string{"FIFO", "Tiresias"},
		Placers:         []string{"greedy", "topology"},
		AlgorithmParams: []string{"threshold=600"},
		PlacerParams:    []string{"migration_budget=1"},
		Options:         Options{Nodes: 4, GPUsPerNode: 4, RestartCost: 10 * time.Second, Models: parametricSet(t)},
		Parallelism:     3,
	}
	var fractions []float64
	c.Progress = func(f float64) { fractions = append(fractions, f) }
	runs, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, row := range runs {
		for i, r := range row {
			got = append(got, fmt.Sprintf("%s %s %s", r.Workload, r.Algorithm, r.Placer))
			if algo, placer := c.Pair(i); algo != r.Algorithm || placer != r.Placer {
				t.Errorf("Pair(%d) = %s, %s; the run has %s, %s", i, algo, placer, r.Algorithm, r.Placer)
			}
		}
	}
	want := []string{
		"generated-12-seed1 FIFO greedy", "generated-12-seed1 FIFO topology",
		"generated-12-seed1 Tiresias greedy", "generated-12-seed1 Tiresias topology",
		"generated-12-seed2 FIFO greedy", "generated-12-seed2 FIFO topology",
		"generated-12-seed2 Tiresias greedy", "generated-12-seed2 Tiresias topology",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs (-want,+got):\n%s", diff)
	}
	// A cell is the run Run makes with the same settings.
	o := c.Options
	o.Allocator = newAlloc(t, "Tiresias", "threshold=600")
	if o.Placer, err = build(placement.Builtin(), "topology", []string{"migration_budget=1", "restart_cost=10"}); err != nil {
		t.Fatal(err)
	}
	o.Workload = c.Workloads[1].Name
	alone, err := Run(context.Background(), c.Workloads[1].Jobs, o)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(report.JCTs(alone), report.JCTs(runs[1][3])); diff != "" {
		t.Errorf("JCTs of Tiresias with topology on seed 2 (-alone,+compared):\n%s", diff)
	}
	for i := 1; i < len(fractions); i++ {
		if fractions[i] < fractions[i-1] {
			t.Fatalf("progress went back: %v", fractions)
		}
	}
	if n := len(fractions); n == 0 || fractions[n-1] != 1 {
		t.Errorf("progress %v, want it to end at 1", fractions)
	}
}

func TestComparisonRunErrors(t *testing.T) {
	bad := Workload{Name: "bad", Jobs: []workload.Job{{Name: "a", App: "nope", MinWorkers: 1, MaxWorkers: 1, Requested: 1, Epochs: 1}}}
	c := Comparison{
		Workloads:  []Workload{bad},
		Algorithms: []string{"FIFO"},
		Placers:    []string{"greedy"},
		Options:    Options{Nodes: 2, GPUsPerNode: 2, Models: parametricSet(t)},
	}
	if _, err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "FIFO with placer greedy on bad") {
		t.Errorf("error %v, want one naming the failed run", err)
	}
	c.Placers = []string{"nope"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `unknown placer "nope"`) {
		t.Errorf("unknown placer: error %v", err)
	}
	c.Placers = nil
	if err := c.Validate(); err == nil {
		t.Error("no placer: no error")
	}
}
