package model

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestJobPlacementWorkersAndNodes(t *testing.T) {
	tests := []struct {
		name    string
		p       JobPlacement
		workers int
		nodes   int
	}{
		{name: "nil", p: nil, workers: 0, nodes: 0},
		{name: "empty", p: JobPlacement{}, workers: 0, nodes: 0},
		{name: "one node", p: JobPlacement{{"n0", 3}}, workers: 3, nodes: 1},
		{name: "two nodes", p: JobPlacement{{"n0", 4}, {"n1", 2}}, workers: 6, nodes: 2},
		{name: "zero-worker entry not a node", p: JobPlacement{{"n0", 4}, {"n1", 0}, {"n2", 1}}, workers: 5, nodes: 2},
		// Nodes counts entries, not distinct names: a split entry counts twice.
		{name: "same node twice", p: JobPlacement{{"n0", 1}, {"n0", 1}}, workers: 2, nodes: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Workers(); got != tc.workers {
				t.Errorf("%v.Workers() = %d, want %d", tc.p, got, tc.workers)
			}
			if got := tc.p.Nodes(); got != tc.nodes {
				t.Errorf("%v.Nodes() = %d, want %d", tc.p, got, tc.nodes)
			}
		})
	}
}

func TestJobPlacementEqual(t *testing.T) {
	base := JobPlacement{{"n0", 4}, {"n1", 2}}
	tests := []struct {
		name string
		p, q JobPlacement
		want bool
	}{
		{name: "same", p: base, q: JobPlacement{{"n0", 4}, {"n1", 2}}, want: true},
		{name: "nil and nil", p: nil, q: nil, want: true},
		{name: "nil and empty", p: nil, q: JobPlacement{}, want: true},
		{name: "rank order matters", p: base, q: JobPlacement{{"n1", 2}, {"n0", 4}}, want: false},
		{name: "other count", p: base, q: JobPlacement{{"n0", 4}, {"n1", 1}}, want: false},
		{name: "other node", p: base, q: JobPlacement{{"n0", 4}, {"n2", 2}}, want: false},
		{name: "prefix", p: base, q: base[:1], want: false},
		{name: "nil and non-empty", p: nil, q: base, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Equal(tc.q); got != tc.want {
				t.Errorf("%v.Equal(%v) = %v, want %v", tc.p, tc.q, got, tc.want)
			}
			if got := tc.q.Equal(tc.p); got != tc.want {
				t.Errorf("%v.Equal(%v) = %v, want %v (Equal must be symmetric)", tc.q, tc.p, got, tc.want)
			}
		})
	}
}

func TestJobPlacementClone(t *testing.T) {
	if got := JobPlacement(nil).Clone(); got != nil {
		t.Errorf("nil.Clone() = %#v, want nil", got)
	}
	if got := (JobPlacement{}).Clone(); len(got) != 0 || !got.Equal(JobPlacement{}) {
		t.Errorf("empty.Clone() = %#v, want an empty placement", got)
	}

	// Extra capacity lets an append on a non-copy write into p's array.
	p := make(JobPlacement, 2, 8)
	p[0], p[1] = NodeWorkers{"n0", 4}, NodeWorkers{"n1", 2}
	c := p.Clone()
	if diff := cmp.Diff(p, c); diff != "" {
		t.Fatalf("Clone() differs (-want,+got):\n%s", diff)
	}
	c[0].Workers = 99
	c[1].Node = "other"
	_ = append(c, NodeWorkers{"n9", 1})
	_ = append(c[:1], NodeWorkers{"n8", 1})
	want := JobPlacement{{"n0", 4}, {"n1", 2}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("changing the clone changed the original (-want,+got):\n%s", diff)
	}
	if got := p[:3][2]; got != (NodeWorkers{}) {
		t.Errorf("appending to the clone wrote %v into the original's spare capacity", got)
	}
}

func TestSnapshotSortAndTotalGPUs(t *testing.T) {
	t0 := time.Unix(0, 0)
	s := &Snapshot{
		Nodes: []Node{{Name: "c", GPUs: 8, Index: 2}, {Name: "a", GPUs: 4}, {Name: "b", GPUs: 2, Index: 1}, {Name: "d", GPUs: 1, Index: 3}},
		Jobs: []Job{
			{Spec: JobSpec{Name: "late", SubmitTime: t0.Add(2 * time.Minute)}},
			{Spec: JobSpec{Name: "b", SubmitTime: t0.Add(time.Minute)}},
			{Spec: JobSpec{Name: "first", SubmitTime: t0}},
			{Spec: JobSpec{Name: "a", SubmitTime: t0.Add(time.Minute)}},
		},
	}
	if got := s.TotalGPUs(); got != 15 {
		t.Errorf("TotalGPUs() = %d, want 15", got)
	}
	s.Sort()
	var nodes, jobs []string
	for _, n := range s.Nodes {
		nodes = append(nodes, n.Name)
	}
	for _, j := range s.Jobs {
		jobs = append(jobs, j.Spec.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d"}, nodes); diff != "" {
		t.Errorf("nodes after Sort (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"first", "a", "b", "late"}, jobs); diff != "" {
		t.Errorf("jobs after Sort (-want,+got):\n%s", diff)
	}
	if got := s.TotalGPUs(); got != 15 {
		t.Errorf("TotalGPUs() after Sort = %d, want 15", got)
	}
	if got := (&Snapshot{}).TotalGPUs(); got != 0 {
		t.Errorf("empty snapshot TotalGPUs() = %d, want 0", got)
	}
}

func TestSnapshotSortIsStableOnEqualIndex(t *testing.T) {
	s := &Snapshot{Nodes: []Node{{Name: "x", GPUs: 1, Index: 1}, {Name: "y", GPUs: 1}, {Name: "z", GPUs: 1, Index: 1}, {Name: "w", GPUs: 1}}}
	s.Sort()
	var got []string
	for _, n := range s.Nodes {
		got = append(got, n.Name)
	}
	if diff := cmp.Diff([]string{"y", "w", "x", "z"}, got); diff != "" {
		t.Errorf("nodes after Sort (-want,+got):\n%s", diff)
	}
}

func TestAllocationTotal(t *testing.T) {
	a := Allocation{GPUs: map[string]int{}}
	if got := a.Total(); got != 0 {
		t.Errorf("empty Total() = %d, want 0", got)
	}
	a.GPUs["a"], a.GPUs["b"], a.GPUs["c"] = 3, 0, 5
	if got := a.Total(); got != 8 {
		t.Errorf("Total() = %d, want 8", got)
	}
	if got := (Allocation{}).Total(); got != 0 {
		t.Errorf("zero Allocation Total() = %d, want 0", got)
	}
}

func checkSnapshot() *Snapshot {
	t0 := time.Unix(0, 0)
	return &Snapshot{
		Nodes: []Node{{Name: "n0", GPUs: 4}, {Name: "n1", GPUs: 4, Index: 1}},
		Jobs: []Job{
			{Spec: JobSpec{Name: "a", MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, SubmitTime: t0}},
			{Spec: JobSpec{Name: "b", MinWorkers: 2, MaxWorkers: 6, RequestedWorkers: 2, SubmitTime: t0}},
			{Spec: JobSpec{Name: "c", MinWorkers: 3, MaxWorkers: 3, RequestedWorkers: 3, SubmitTime: t0}},
		},
	}
}

func TestCheckAllocation(t *testing.T) {
	tests := []struct {
		name  string
		alloc Allocation
		// wantJob and wantReason describe the InvariantError; wantReason ""
		// means the allocation is valid.
		wantJob    string
		wantReason string
	}{
		{name: "empty", alloc: Allocation{}},
		{name: "all zero", alloc: Allocation{GPUs: map[string]int{"a": 0, "b": 0, "c": 0}, Order: []string{"a", "b", "c"}}},
		{name: "full cluster", alloc: Allocation{GPUs: map[string]int{"a": 2, "b": 3, "c": 3}, Order: []string{"c", "a", "b"}}},
		{name: "at min and max", alloc: Allocation{GPUs: map[string]int{"a": 1, "b": 6}, Order: []string{"a", "b", "c"}}},
		{name: "nil order is not checked", alloc: Allocation{GPUs: map[string]int{"a": 4}}},
		{name: "partial order", alloc: Allocation{GPUs: map[string]int{"a": 4}, Order: []string{"b"}}},
		{name: "unknown job", alloc: Allocation{GPUs: map[string]int{"ghost": 1}},
			wantJob: "ghost", wantReason: "not in the snapshot"},
		{name: "unknown job with zero GPUs", alloc: Allocation{GPUs: map[string]int{"ghost": 0}},
			wantJob: "ghost", wantReason: "not in the snapshot"},
		{name: "below min", alloc: Allocation{GPUs: map[string]int{"b": 1}},
			wantJob: "b", wantReason: "1 GPUs outside [2, 6]"},
		{name: "above max", alloc: Allocation{GPUs: map[string]int{"a": 5}},
			wantJob: "a", wantReason: "5 GPUs outside [1, 4]"},
		{name: "rigid job off its size", alloc: Allocation{GPUs: map[string]int{"c": 2}},
			wantJob: "c", wantReason: "2 GPUs outside [3, 3]"},
		{name: "negative", alloc: Allocation{GPUs: map[string]int{"a": -1}},
			wantJob: "a", wantReason: "negative GPUs -1"},
		{name: "over capacity", alloc: Allocation{GPUs: map[string]int{"a": 4, "b": 3, "c": 3}},
			wantReason: "10 GPUs allocated, cluster has 8"},
		{name: "ordered twice", alloc: Allocation{GPUs: map[string]int{"a": 1}, Order: []string{"a", "b", "a"}},
			wantJob: "a", wantReason: "ordered twice"},
		{name: "ordered unknown", alloc: Allocation{GPUs: map[string]int{"a": 1}, Order: []string{"a", "ghost"}},
			wantJob: "ghost", wantReason: "ordered but not in the snapshot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := checkSnapshot()
			err := CheckAllocation(s, tc.alloc)
			if tc.wantReason == "" {
				if err != nil {
					t.Fatalf("CheckAllocation(%+v) = %v, want nil", tc.alloc, err)
				}
				return
			}
			var ie *InvariantError
			if !errors.As(err, &ie) {
				t.Fatalf("CheckAllocation(%+v) = %v (%T), want an *InvariantError", tc.alloc, err, err)
			}
			if diff := cmp.Diff(InvariantError{Job: tc.wantJob, Reason: tc.wantReason}, *ie); diff != "" {
				t.Errorf("CheckAllocation() error (-want,+got):\n%s", diff)
			}
			// Wrapped, as the scheduler returns it, it is still found.
			wrapped := fmt.Errorf("cycle: %w", err)
			if !errors.As(wrapped, &ie) {
				t.Errorf("errors.As through a wrap failed for %v", wrapped)
			}
		})
	}
}

func TestInvariantErrorMessage(t *testing.T) {
	tests := []struct {
		err  *InvariantError
		want string
	}{
		{&InvariantError{Job: "a", Reason: "ordered twice"}, "allocation invariant: job a: ordered twice"},
		{&InvariantError{Reason: "9 GPUs allocated, cluster has 8"}, "allocation invariant: 9 GPUs allocated, cluster has 8"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if tc.err.Job == "" && strings.Contains(tc.err.Error(), "job") {
			t.Errorf("Error() = %q names a job, want none", tc.err.Error())
		}
	}
}

// A job whose workers hold G GPUs each is given whole workers: G to
// MaxWorkers x G GPUs, in steps of G.
func TestCheckAllocationMultiGPUWorkers(t *testing.T) {
	s := &Snapshot{
		Nodes: []Node{{Name: "n0", GPUs: 8}, {Name: "n1", GPUs: 8, Index: 1}},
		Jobs: []Job{
			{Spec: JobSpec{Name: "m", MinWorkers: 1, MaxWorkers: 3, RequestedWorkers: 2, GPUsPerWorker: 2}},
			{Spec: JobSpec{Name: "w", MinWorkers: 1, MaxWorkers: 1, RequestedWorkers: 1, GPUsPerWorker: 8}},
		},
	}
	tests := []struct {
		gpus       map[string]int
		wantJob    string
		wantReason string
	}{
		{gpus: map[string]int{"m": 2, "w": 8}},
		{gpus: map[string]int{"m": 6}},
		{gpus: map[string]int{"m": 0, "w": 0}},
		{gpus: map[string]int{"m": 1}, wantJob: "m", wantReason: "1 GPUs outside [2, 6]"},
		{gpus: map[string]int{"m": 3}, wantJob: "m", wantReason: "3 GPUs are not whole workers of 2 GPUs"},
		{gpus: map[string]int{"m": 8}, wantJob: "m", wantReason: "8 GPUs outside [2, 6]"},
		{gpus: map[string]int{"w": 4}, wantJob: "w", wantReason: "4 GPUs outside [8, 8]"},
		{gpus: map[string]int{"m": 6, "w": 16}, wantJob: "w", wantReason: "16 GPUs outside [8, 8]"},
	}
	for _, tc := range tests {
		err := CheckAllocation(s, Allocation{GPUs: tc.gpus})
		var ie *InvariantError
		switch {
		case tc.wantReason == "" && err != nil:
			t.Errorf("CheckAllocation(%v) = %v, want nil", tc.gpus, err)
		case tc.wantReason != "" && (!errors.As(err, &ie) || *ie != InvariantError{Job: tc.wantJob, Reason: tc.wantReason}):
			t.Errorf("CheckAllocation(%v) = %v, want job %s: %s", tc.gpus, err, tc.wantJob, tc.wantReason)
		}
	}
	if got := (&JobSpec{}).PerWorker(); got != 1 {
		t.Errorf("PerWorker of a spec without GPUsPerWorker = %d, want 1", got)
	}
	if err := (JobSpec{Name: "x", MinWorkers: 1, MaxWorkers: 1, RequestedWorkers: 1, GPUsPerWorker: -2}).Validate(); err == nil || !strings.Contains(err.Error(), "gpusPerWorker") {
		t.Errorf("Validate with GPUsPerWorker -2 = %v, want a gpusPerWorker error", err)
	}
}
