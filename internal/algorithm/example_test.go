package algorithm_test

import (
	"fmt"
	"slices"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
)

// NameCappedFIFO is the example algorithm's registered name.
const NameCappedFIFO = "CappedFIFO"

// CappedFIFO gives jobs, in arrival order, up to cap GPUs each (never
// below their min nor above their max) if that many are free.
type CappedFIFO struct{ cap int }

var _ algorithm.Allocator = (*CappedFIFO)(nil)

// NewCappedFIFO reads the "cap" parameter (default 4).
func NewCappedFIFO(p *registry.Params) (algorithm.Allocator, error) {
	c, err := p.Int("cap", 4)
	if err != nil {
		return nil, err
	}
	if c < 1 {
		return nil, fmt.Errorf("param cap: %d must be at least 1", c)
	}
	return &CappedFIFO{cap: c}, nil
}

// Name returns NameCappedFIFO.
func (*CappedFIFO) Name() string { return NameCappedFIFO }

// Allocate implements algorithm.Allocator. Ties: model.Before (submit
// time, then name).
func (c *CappedFIFO) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	if snap == nil {
		return model.Allocation{}, fmt.Errorf("nil snapshot")
	}
	// Sort pointers, never snap.Jobs itself: the snapshot is read-only.
	jobs := make([]*model.Job, len(snap.Jobs))
	for i := range snap.Jobs {
		jobs[i] = &snap.Jobs[i]
	}
	slices.SortFunc(jobs, func(a, b *model.Job) int {
		if model.Before(a, b) {
			return -1
		}
		if model.Before(b, a) {
			return 1
		}
		return 0
	})
	alloc := model.Allocation{GPUs: make(map[string]int, len(jobs))}
	left := snap.TotalGPUs()
	for _, j := range jobs {
		alloc.Order = append(alloc.Order, j.Spec.Name) // every job, once
		g := min(j.Spec.MaxWorkers, max(j.Spec.MinWorkers, c.cap))
		if g <= left {
			alloc.GPUs[j.Spec.Name] = g
			left -= g
		}
	}
	return alloc, nil
}

func Example_customAlgorithm() {
	reg := algorithm.Builtin()
	err := reg.Register(algorithm.Entry{
		Name:    NameCappedFIFO,
		Tags:    []string{algorithm.TagElastic},
		Summary: "up to cap GPUs per job in arrival order",
		Params:  []registry.ParamDoc{{Name: "cap", Default: "4", Help: "GPUs per job, within [min, max]"}},
		New:     NewCappedFIFO,
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	params, _ := registry.ParseParams([]string{"cap=2"})
	a, err := reg.New("cappedfifo", params) // names are case-insensitive
	if err != nil {
		fmt.Println(err)
		return
	}
	snap := &model.Snapshot{
		Nodes: []model.Node{{Name: "n0", GPUs: 4}},
		Jobs: []model.Job{
			{Spec: model.JobSpec{Name: "a", MinWorkers: 1, RequestedWorkers: 1, MaxWorkers: 8}},
			{Spec: model.JobSpec{Name: "b", MinWorkers: 3, RequestedWorkers: 3, MaxWorkers: 3}},
			{Spec: model.JobSpec{Name: "c", MinWorkers: 1, RequestedWorkers: 1, MaxWorkers: 1}},
		},
	}
	alloc, err := a.Allocate(snap)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(alloc.Order, alloc.GPUs, model.CheckAllocation(snap, alloc))
	fmt.Println(reg.Names())
	// Output:
	// [a b c] map[a:2 c:1] <nil>
	// [FIFO ElasticFIFO SRJF ElasticSRJF Tiresias ElasticTiresias FfDLOptimizer AFS-L Goodput CappedFIFO]
}
