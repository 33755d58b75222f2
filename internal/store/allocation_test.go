package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

func TestAppendAllocation(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	p := func(nw ...model.NodeWorkers) model.JobPlacement { return nw }
	a2 := p(model.NodeWorkers{Node: "a", Workers: 2})
	a2b1 := p(model.NodeWorkers{Node: "a", Workers: 2}, model.NodeWorkers{Node: "b", Workers: 1})
	b1a2 := p(model.NodeWorkers{Node: "b", Workers: 1}, model.NodeWorkers{Node: "a", Workers: 2})
	tests := []struct {
		name string
		h    []store.Allocation
		at   time.Time
		p    model.JobPlacement
		want []store.Allocation
	}{
		{"never held, still none", nil, at(1), nil, nil},
		{"never held, empty placement", nil, at(1), model.JobPlacement{}, nil},
		{"first start", nil, at(1), a2, []store.Allocation{{At: at(1), Placement: a2}}},
		{"unchanged", []store.Allocation{{At: at(1), Placement: a2}}, at(2), a2, []store.Allocation{{At: at(1), Placement: a2}}},
		{"grown", []store.Allocation{{At: at(1), Placement: a2}}, at(2), a2b1,
			[]store.Allocation{{At: at(1), Placement: a2}, {At: at(2), Placement: a2b1}}},
		{"same workers, other rank order", []store.Allocation{{At: at(1), Placement: a2b1}}, at(2), b1a2,
			[]store.Allocation{{At: at(1), Placement: a2b1}, {At: at(2), Placement: b1a2}}},
		{"halted", []store.Allocation{{At: at(1), Placement: a2}}, at(3), nil,
			[]store.Allocation{{At: at(1), Placement: a2}, {At: at(3)}}},
		{"halted twice", []store.Allocation{{At: at(1), Placement: a2}, {At: at(3)}}, at(4), model.JobPlacement{},
			[]store.Allocation{{At: at(1), Placement: a2}, {At: at(3)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := cloneHistory(tc.h)
			in := tc.p.Clone()
			got := store.AppendAllocation(tc.h, tc.at, in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("AppendAllocation (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.h); diff != "" {
				t.Errorf("AppendAllocation changed its argument (-before +after):\n%s", diff)
			}
			if len(in) > 0 && len(got) > len(tc.h) {
				in[0].Workers = 99
				if got[len(got)-1].Placement[0].Workers == 99 {
					t.Error("the appended placement shares memory with the caller's")
				}
			}
		})
	}
}

// TestAppendAllocationBound: the newest MaxAllocations are kept.
func TestAppendAllocationBound(t *testing.T) {
	var h []store.Allocation
	t0 := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	const n = 3 * store.MaxAllocations
	for i := range n {
		h = store.AppendAllocation(h, t0.Add(time.Duration(i)*time.Minute), model.JobPlacement{{Node: "a", Workers: i%4 + 1}})
	}
	if len(h) != store.MaxAllocations {
		t.Fatalf("%d entries after %d changes, want %d", len(h), n, store.MaxAllocations)
	}
	if first, want := h[0].At, t0.Add(time.Duration(n-store.MaxAllocations)*time.Minute); !first.Equal(want) {
		t.Errorf("oldest kept at %v, want %v", first, want)
	}
	if last, want := h[len(h)-1].At, t0.Add(time.Duration(n-1)*time.Minute); !last.Equal(want) {
		t.Errorf("newest at %v, want %v", last, want)
	}
}

func cloneHistory(h []store.Allocation) []store.Allocation {
	if h == nil {
		return nil
	}
	out := make([]store.Allocation, len(h))
	for i, a := range h {
		out[i] = store.Allocation{At: a.At, Placement: a.Placement.Clone()}
	}
	return out
}
