// Goodput: a goodput-aware, restart-aware elastic allocator, meant for jobs
// whose estimates come from the goodput model (internal/goodput): a speedup
// curve already taken at the best batch size of each worker count, and the
// batch sizes themselves (Est.Batch).
//
// GPUs are handed out greedily, one increment at a time, to the job whose
// next increment has the highest value: the marginal speedup per GPU divided
// by the job's remaining time on one GPU R. For a job at k GPUs the next
// increment goes to k' = MinWorkers if k == 0, else k+1, and is worth
//
//	(S(k') - S(k)) / (k' - k) / R
//
// which is the fraction of the job completed per second gained per GPU: a
// short job and a job that scales well win. Only positive values count; no
// job goes above its MaxWorkers nor the cluster's GPUs; ties go by
// model.Before. A job at 0 GPUs whose min no longer fits drops out.
//
// Remaining times: an unknown R (negative or NaN) is taken as the smallest
// known R of the snapshot, optimistically, so that new jobs start and get
// measured; with no known R every job has R = 1. R is clamped to
// [goodputMinRemaining, goodputMaxRemaining] so that a job about to finish
// does not get an infinite value nor an endless one a zero value.
//
// Restarts: a running job (State.GPUs = c > 0) whose target k differs from
// c pays a restart (Est.RestartSeconds, or DefaultGoodputRestartSeconds
// when unknown). Growth is worth it only if the time saved pays back
// `payback` restarts:
//
//	R/S(c) - R/S(k) >= payback * restart
//
// After each greedy round every running job that grew without paying back
// is capped at c, all at once, and the greedy runs again; a capped job
// cannot violate again, so this ends after at most one round per running
// job, typically one or two. Shrinking is damped by hysteresis: the
// increments of a running job up to its current c count with their value
// multiplied by `hold`, so another job must be worth hold times more per
// GPU to take them. Preempting (down to 0) stays possible: short jobs first
// is what wins mean JCT.
//
// Order (the placer's priority) is by the value of each job's first
// increment (hold included), highest first, ties by model.Before. Batch
// holds Est.BatchAt(k) for every job given k > 0 GPUs whose estimates name
// a batch size.
//
// Cost: every job's first increment is valued once per decision (O(N),
// reading every speedup curve), and the tracker keeps the jobs ordered by
// it (only changed values are sorted again); a greedy round then takes
// first increments from that order and later ones from a heap of the jobs
// it started, O(G log G), stopping when the GPUs run out.

package algorithm

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/registry"
)

// NameGoodput is Goodput's registered name.
const NameGoodput = "Goodput"

// Goodput's defaults.
const (
	// DefaultGoodputPayback is how many restarts the time a running job
	// saves by growing must pay back.
	DefaultGoodputPayback = 10.0
	// DefaultGoodputHold multiplies the value of a running job's increments
	// up to its current GPUs, so it is not shrunk for a small gain
	// elsewhere.
	DefaultGoodputHold = 2.0
	// DefaultGoodputRestartSeconds is a job's restart cost when its
	// estimates do not give one.
	DefaultGoodputRestartSeconds = 30.0
)

// goodputMinRemaining and goodputMaxRemaining bound the remaining times
// Goodput divides by: a second (so a finishing job's value stays finite) and
// about 30,000 years (so a known infinite one stays positive).
const (
	goodputMinRemaining = 1.0
	goodputMaxRemaining = 1e12
)

// Goodput hands GPUs out by marginal speedup per GPU over remaining time,
// growing running jobs only when the saving pays back their restarts.
type Goodput struct {
	payback float64
	hold    float64
	t       tracker
}

var _ Allocator = (*Goodput)(nil)

// NewGoodput is Goodput's factory. Parameters: payback (default 10), the
// restarts a running job's growth must pay back, >= 0; hold (default 2),
// the factor on the value of a running job's current GPUs, >= 1.
func NewGoodput(p *registry.Params) (Allocator, error) {
	payback, err := p.Float("payback", DefaultGoodputPayback)
	if err != nil {
		return nil, err
	}
	if !(payback >= 0) || math.IsInf(payback, 1) {
		return nil, fmt.Errorf("param payback: %v must be a finite number >= 0", payback)
	}
	hold, err := p.Float("hold", DefaultGoodputHold)
	if err != nil {
		return nil, err
	}
	if !(hold >= 1) || math.IsInf(hold, 1) {
		return nil, fmt.Errorf("param hold: %v must be a finite number >= 1", hold)
	}
	return &Goodput{payback: payback, hold: hold}, nil
}

// Name returns NameGoodput.
func (*Goodput) Name() string { return NameGoodput }

// goodputJob is what the greedy reads of one job.
type goodputJob struct {
	est     model.Estimates // speedup curve sanitized
	r       float64         // remaining seconds on one GPU, as used
	minW    int
	current int // State.GPUs, 0 if negative
	limit   int // max GPUs this round: MaxWorkers, or current once capped
}

// Allocate implements Allocator.
func (g *Goodput) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	in, err := g.t.check(snap)
	if err != nil {
		return model.Allocation{}, err
	}
	n := len(snap.Jobs)
	jobs := g.jobs(snap)
	rank := arrivalRanks(in)
	// Every job's first increment, and the jobs by its value, highest
	// first, ties by arrival: the order the greedy takes first increments
	// in, and the answer's Order unless capping changes a value.
	first := g.firstSteps(jobs)
	order := g.t.sorted(in, func(i int) sortKey { return sortKey{f: -first.v[i]} })

	gpus := make([]int, n)
	// Each round caps at least one running job that was not capped before,
	// so there are at most running+1 rounds.
	for {
		g.greedy(jobs, rank, order, &first, gpus, in.total)
		capped := false
		for i := range jobs {
			j := &jobs[i]
			c, k := j.current, gpus[i]
			if c > 0 && k > c && j.limit > c && !g.paysBack(j, c, k) {
				j.limit = c
				capped = true
			}
		}
		if !capped {
			break
		}
		first.restale(g, jobs)
	}

	// Order: first increment's value, highest first, then arrival.
	a := in.allocation(first.reorder(order, rank), gpus)
	for i, k := range gpus {
		if k > 0 {
			if b := snap.Jobs[i].Est.BatchAt(k); b > 0 {
				if a.Batch == nil {
					a.Batch = map[string]int{}
				}
				a.Batch[snap.Jobs[i].Spec.Name] = b
			}
		}
	}
	return a, nil
}

// jobs reads the snapshot's jobs, with unknown remaining times replaced by
// the smallest known one (1 if none is known), all clamped.
func (g *Goodput) jobs(snap *model.Snapshot) []goodputJob {
	fallback := math.Inf(1)
	for i := range snap.Jobs {
		if r, ok := remaining(&snap.Jobs[i]); ok {
			fallback = min(fallback, r)
		}
	}
	if math.IsInf(fallback, 1) {
		fallback = 1 // none known, or only infinite ones: all alike
	}
	jobs := make([]goodputJob, len(snap.Jobs))
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		r, ok := remaining(j)
		if !ok {
			r = fallback
		}
		est := j.Est
		if !usableCurve(est.Speedup) {
			est.Speedup = nil
		}
		jobs[i] = goodputJob{
			est:     est,
			r:       min(max(r, goodputMinRemaining), goodputMaxRemaining),
			minW:    j.Spec.MinWorkers,
			current: max(j.State.GPUs, 0),
			limit:   j.Spec.MaxWorkers,
		}
	}
	return jobs
}

// value returns the value per GPU of a job's next increment from k GPUs,
// and whether it may take it: within its limit and with a positive value.
func (g *Goodput) value(j *goodputJob, k int) (float64, bool) {
	next := k + 1
	if k == 0 {
		next = j.minW
	}
	if next > j.limit {
		return 0, false
	}
	v := (j.est.SpeedupAt(next) - j.est.SpeedupAt(k)) / float64(next-k) / j.r
	if next <= j.current {
		v *= g.hold
	}
	return v, v > 0
}

// paysBack reports whether growing a running job from c to k GPUs saves
// payback restarts' worth of time.
func (g *Goodput) paysBack(j *goodputJob, c, k int) bool {
	restart := j.est.RestartSeconds
	if !(restart > 0) || math.IsInf(restart, 1) {
		restart = DefaultGoodputRestartSeconds
	}
	saved := j.r/j.est.SpeedupAt(c) - j.r/j.est.SpeedupAt(k)
	return saved >= g.payback*restart
}

// greedy runs one round of the auction from nothing, writing each job's
// GPUs into gpus. The first increments come from order (by first.v, as a
// heap of them would give them), but for the stale ones, which a heap
// holds.
func (g *Goodput) greedy(jobs []goodputJob, rank []int32, order []int, first *goodputFirst, gpus []int, total int) {
	clear(gpus)
	var h gainHeap
	for _, i := range first.staleJobs {
		if v, ok := g.value(&jobs[i], 0); ok {
			h = append(h, gainItem{gain: v, rank: rank[i], job: int32(i)})
		}
	}
	h.init()
	fresh := &freshList{jobs: order, item: func(i int) (gainItem, bool) {
		if first.stale != nil && first.stale[i] {
			return gainItem{}, false
		}
		return gainItem{gain: first.v[i], rank: rank[i], job: int32(i)}, first.ok[i]
	}}
	growAuction(h, fresh, gpus, total,
		func(i int) int { return jobs[i].minW },
		func(i int) (float64, bool) { return g.value(&jobs[i], gpus[i]) })
}

// goodputFirst holds every job's first increment as the decision began:
// its value v and whether the job may take it (ok). A round that caps jobs
// may change the first increment of some (stale); the greedy takes those
// from a heap and the Order places them again.
type goodputFirst struct {
	v         []float64
	ok        []bool
	stale     []bool    // nil while none is stale
	now       []float64 // the values now, once one is stale
	staleJobs []int
}

func (g *Goodput) firstSteps(jobs []goodputJob) goodputFirst {
	f := goodputFirst{v: make([]float64, len(jobs)), ok: make([]bool, len(jobs))}
	for i := range jobs {
		f.v[i], f.ok[i] = g.value(&jobs[i], 0)
	}
	return f
}

// restale finds the jobs whose first increment now differs, after a round
// capped some jobs.
func (f *goodputFirst) restale(g *Goodput, jobs []goodputJob) {
	f.staleJobs = f.staleJobs[:0]
	for i := range jobs {
		v, ok := g.value(&jobs[i], 0)
		changed := v != f.v[i] || ok != f.ok[i]
		if changed && f.stale == nil {
			f.stale = make([]bool, len(jobs))
			f.now = slices.Clone(f.v)
		}
		if f.stale != nil {
			f.stale[i] = changed
			f.now[i] = v
		}
		if changed {
			f.staleJobs = append(f.staleJobs, i)
		}
	}
}

// reorder returns order (by the first increments' values as they were,
// highest first, ties by arrival rank) with the stale jobs moved to where
// their values now put them.
func (f *goodputFirst) reorder(order []int, rank []int32) []int {
	if len(f.staleJobs) == 0 {
		return order
	}
	out := make([]int, 0, len(order))
	for _, i := range order {
		if !f.stale[i] {
			out = append(out, i)
		}
	}
	byValue := func(a, b int) int {
		if va, vb := f.now[a], f.now[b]; va != vb {
			if va > vb {
				return -1
			}
			return 1
		}
		return cmp.Compare(rank[a], rank[b])
	}
	slices.SortFunc(f.staleJobs, byValue)
	return mergeSorted(out, f.staleJobs, byValue)
}

// arrivalRanks returns each job's rank in arrival order.
func arrivalRanks(in *input) []int32 {
	rank := make([]int32, len(in.snap.Jobs))
	if in.sorted {
		for i := range rank {
			rank[i] = int32(i)
		}
		return rank
	}
	for r, i := range sortedIndices(in.snap, byArrival) {
		rank[i] = int32(r)
	}
	return rank
}
