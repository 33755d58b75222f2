package service

import (
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/model"
)

// A waiting job is Unschedulable when no state of the other jobs lets it
// start: its minimum exceeds the GPU type's GPUs or, for workers of G
// GPUs, the workers the nodes can hold, each on one node.
func TestUnschedulable(t *testing.T) {
	mixed := []model.Node{{Name: "a", GPUs: 4}, {Name: "b", GPUs: 8}, {Name: "c", GPUs: 6}}
	tests := []struct {
		name     string
		min, per int
		want     string // a part of the message, "" for none
	}{
		{name: "one GPU a worker, fits", min: 18},
		{name: "one GPU a worker, too many", min: 19, want: "needs at least 19 GPUs (its minimum workers); the v100 nodes have 18 in all"},
		{name: "G=2, fits", min: 9, per: 2},
		{name: "G=4, four workers fit (4, 8 and 6 GPUs hold 1, 2 and 1)", min: 4, per: 4},
		{name: "G=4, five do not", min: 5, per: 4, want: "needs at least 5 workers of 4 GPUs, each on one node; the v100 nodes hold 4 such workers in all"},
		{name: "G=6 fits twice", min: 2, per: 6},
		{name: "G=8 once", min: 2, per: 8, want: "hold 1 such workers"},
		{name: "G above every node", min: 1, per: 16, want: "each worker needs 16 GPUs on one node; the largest v100 node has 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := model.JobSpec{Name: "j", MinWorkers: tc.min, MaxWorkers: tc.min, RequestedWorkers: tc.min, GPUsPerWorker: tc.per}
			got := unschedulable(&spec, "v100", 18, mixed)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("unschedulable = %q, want %q", got, tc.want)
			}
		})
	}
}
