// Goodput: a goodput-aware, restart-aware elastic allocator, meant for jobs
// whose estimates come from the goodput model (internal/goodput): a speedup
// curve already taken at the best batch size of each worker count, and the
// batch sizes themselves (Est.Batch).
//
// GPUs are handed out greedily, one step at a time, to the job whose next
// step has the highest value per GPU. A job at 0 GPUs steps to
// MinWorkers; a job at k > 0 GPUs steps to whichever k' in (k, limit],
// in whole workers of its G GPUs, has the most value per GPU,
//
//	(S(k') - S(k)) / (k' - k) / R^size
//
// with R the job's remaining time on one GPU. Looking past k+1 matters:
// measured curves are not concave (a fifth GPU on a second node is worth
// less than nothing to bert or yolov3, eight more are worth much), and a
// greedy that looked one GPU ahead stopped in front of every such valley,
// leaving those jobs on one node of an idle cluster. size (default 0.4)
// weighs a job's length: at 1 the value is the fraction of the job done
// per second gained, which favours short jobs the most (mean JCT); at 0
// it is the speedup gained, which favours the cluster's throughput (the
// makespan, the tail); between, both. Only positive values count; no job
// goes above its MaxWorkers nor the cluster's GPUs; ties go by
// model.Before. A job at 0 GPUs whose first step no longer fits drops out.
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
// job, typically one or two. Shrinking is damped by hysteresis: a running
// job's speedup up to its current c counts `hold` times, so another job
// must be worth hold times more per GPU to take those GPUs. Preempting
// (down to 0) stays possible: short jobs first is what wins mean JCT.
//
// Settling: a job whose GPUs changed less than (1 + settle) restarts ago
// may go on changing in the same direction, but not turn back: after a
// growth or its start it keeps its GPUs (its first step is to its current
// count, ahead of every other job's) and may grow on (a new job ramps up);
// after a shrink it may shrink on or be halted, not grow. Its estimates were taken at the batch size its last placement
// chose, and a new placement changes them; without this a job whose
// restart cost is about the interval could flip between two sizes every
// cycle, each flip a restart, and never progress.
//
// Fairness: a job that has waited (State.WaitingSince) starve seconds or
// more is served its minimum before any other job's step but a settling
// job's keep, in the order of model.Before among themselves, whatever
// their estimates say. Its value per GPU is the greedy's judgement of its
// claims and of its prior: a job with a tiny claimed speedup, a long
// remaining time or a pessimistic application history would otherwise
// wait for as long as better-looking jobs keep arriving, and a job that
// over-reports its speed would hold every GPU. With the bound, every job
// whose minimum fits in the GPUs the settling jobs leave runs within
// starve seconds plus (1 + settle) restarts, and measures itself out of a
// bad prior (its own measurements replace its application's once it
// ran). Pollux weighs the same concern with its fairness exponent p, Sia
// with a penalty on leaving a job without GPUs; a bound on the wait is
// simpler to state and to check. Once served, a job is valued again like
// any other: it keeps its GPUs while it settles, and may lose them after,
// to wait again at most starve seconds.
//
// Order (the placer's priority) is by the value of each job's first
// step (hold included), highest first, ties by model.Before. Batch
// holds Est.BatchAt(k) for every job given k > 0 GPUs whose estimates name
// a batch size.
//
// Cost: O(N + G·L·log N) per greedy round, with the heap of gain.go and
// curves of length L; the order's sort is kept between decisions by the
// tracker (tracker.go), so only jobs whose first step changed are sorted,
// and the greedy reads the first steps in that order, only until the GPUs
// run out, instead of heapifying all of them. A job whose inputs did not
// change since the last decision (the same curve slice, remaining time,
// workers and settling state, and the same GPUs in all) keeps its curve's
// check, its R^size and its first step's value without computing them
// again.

package algorithm

import (
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
	// DefaultGoodputSize is the exponent on a job's remaining time in the
	// value of its GPUs: 1 favours short jobs the most (mean JCT), 0
	// ignores their size (the cluster's throughput, which shortens the
	// makespan and the tail).
	DefaultGoodputSize = 0.4
	// DefaultGoodputSettle is how many restarts' worth of progress a job
	// makes after a change of its GPUs before they may change again.
	DefaultGoodputSettle = 3.0
	// DefaultGoodputRestartSeconds is a job's restart cost when its
	// estimates do not give one.
	DefaultGoodputRestartSeconds = 30.0
	// DefaultGoodputStarve is how long, in seconds, a job may wait before
	// it is served its minimum ahead of every other job's step: half an
	// hour, about the mean JCT of the Pollux workloads at 0.5x load, so
	// that the bound seldom overrides the greedy where it does well.
	DefaultGoodputStarve = 1800.0
)

// goodputStarving is the value of a starving job's first step: above every
// value the greedy computes, below a settling job's keep (+Inf).
const goodputStarving = math.MaxFloat64

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
	t       tracker
	payback float64
	hold    float64
	size    float64
	settle  float64
	starve  float64
	// prev is what the last decision read of its jobs (indexed like the
	// tracker's old columns once check has run), next the one being read:
	// a job whose inputs did not change keeps its clamped R^size and the
	// value of its first step. Guarded by t.mu.
	prev, next goodputState
	heap       gainHeap // the greedy's, reused
}

// goodputState is one decision's jobs as first read (before any capping)
// and the value of each one's first step then, from total GPUs.
type goodputState struct {
	jobs    []goodputJob
	first   []float64
	firstOK []bool
	total   int
}

var _ Allocator = (*Goodput)(nil)

// NewGoodput is Goodput's factory. Parameters: payback (default 10), the
// restarts a running job's growth must pay back, >= 0; hold (default 2),
// the factor on the value of a running job's current GPUs, >= 1; size
// (default 0.4), the exponent on the remaining time, in [0, 1]; settle
// (default 3), the restarts' worth of progress a job makes after a change
// before it may turn back, >= 0 (0: never settles); starve (default
// 1800), the seconds a job may wait before it is served its minimum
// first, > 0 (+Inf: never).
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
	size, err := p.Float("size", DefaultGoodputSize)
	if err != nil {
		return nil, err
	}
	if !(size >= 0 && size <= 1) {
		return nil, fmt.Errorf("param size: %v must be a number in [0, 1]", size)
	}
	settle, err := p.Float("settle", DefaultGoodputSettle)
	if err != nil {
		return nil, err
	}
	if !(settle >= 0) || math.IsInf(settle, 1) {
		return nil, fmt.Errorf("param settle: %v must be a finite number >= 0", settle)
	}
	starve, err := p.Float("starve", DefaultGoodputStarve)
	if err != nil {
		return nil, err
	}
	if !(starve > 0) {
		return nil, fmt.Errorf("param starve: %v must be a number of seconds > 0 (+Inf: never)", starve)
	}
	return &Goodput{payback: payback, hold: hold, size: size, settle: settle, starve: starve}, nil
}

// Name returns NameGoodput.
func (*Goodput) Name() string { return NameGoodput }

// goodputJob is what the greedy reads of one job. Every field but est.e
// is an input of step (with total): sameStepInputs compares them, so a
// field added here must be added there.
type goodputJob struct {
	est     goodputEst
	r       float64 // remaining seconds on one GPU, clamped
	rs      float64 // r^size, what increments are divided by
	minW    int     // MinWorkers x per
	per     int     // GPUs a worker: steps are whole workers
	current int     // State.GPUs, 0 if negative
	limit   int     // max GPUs this round: MaxWorkers x per, or current once capped
	// keep: the job settles after a growth (or its start) and keeps its
	// current GPUs ahead of every other job's step.
	keep bool
	// starving: the job has waited starve seconds or more, and is served
	// its minimum first.
	starving bool
	// unknownR: r is still the job's own estimate, unknown; it takes the
	// snapshot's fallback once every job has been read.
	unknownR bool
}

// goodputEst is a job's estimates as the greedy reads them: the speedup
// curve sanitized (nil when unusable), and the job's own estimates, by
// pointer rather than copied, for the rest.
type goodputEst struct {
	speedup []float64
	e       *model.Estimates
}

// SpeedupAt returns S(k) of the sanitized curve.
func (e *goodputEst) SpeedupAt(k int) float64 { return speedupAt(e.speedup, true, k) }

// sameStepInputs reports whether step reads the same of a and b.
func sameStepInputs(a, b *goodputJob) bool {
	return sameCurve(a.est.speedup, b.est.speedup) && a.r == b.r && a.rs == b.rs &&
		a.minW == b.minW && a.per == b.per && a.current == b.current && a.limit == b.limit && a.keep == b.keep && a.starving == b.starving
}

// Allocate implements Allocator.
func (g *Goodput) Allocate(snap *model.Snapshot) (model.Allocation, error) {
	g.t.mu.Lock()
	defer g.t.mu.Unlock()
	// The jobs are read in the check's walk, while each is in cache; the
	// order's keys (first-step values) come after.
	next := &g.next
	next.jobs = next.jobs[:0]
	in, err := g.t.check(snap, func(j *model.Job, m int32) {
		next.jobs = append(next.jobs, goodputJob{})
		jb := &next.jobs[len(next.jobs)-1]
		if m >= 0 && sameCurve(g.t.old.curve[m], j.Est.Speedup) {
			g.read(jb, snap, j, g.prev.jobs[m].est.speedup) // checked before
		} else {
			g.read(jb, snap, j, sanitized(j.Est.Speedup))
		}
	}, true)
	if err != nil {
		clear(next.jobs) // no pointer into the bad snapshot
		return model.Allocation{}, err
	}
	jobs := next.jobs
	n := len(jobs)
	next.total = in.total
	next.first = slices.Grow(next.first[:0], n)[:n]
	next.firstOK = slices.Grow(next.firstOK[:0], n)[:n]
	first, firstOK := next.first, next.firstOK
	fallback := goodputFallback(jobs)
	var running []int
	for i := range jobs {
		j := &jobs[i]
		resolveRemaining(j, fallback)
		m := g.t.match[i]
		var p *goodputJob
		if m >= 0 {
			p = &g.prev.jobs[m]
		}
		if p != nil && p.r == j.r {
			j.rs = p.rs
		} else {
			j.rs = math.Pow(j.r, g.size)
		}
		if p != nil && g.prev.total == in.total && sameStepInputs(p, j) {
			first[i], firstOK[i] = g.prev.first[m], g.prev.firstOK[m]
		} else {
			v, _, ok := g.step(j, 0, in.total)
			first[i], firstOK[i] = v, ok
		}
		if j.current > 0 {
			running = append(running, i)
		}
	}
	rank := func(i int) int32 { return int32(i) }
	if !in.sorted {
		ranks := arrivalRanks(in)
		rank = func(i int) int32 { return ranks[i] }
	}

	gpus := make([]int, n)
	// Each round caps at least one running job that was not capped before,
	// so there are at most running+1 rounds. The order is by the value of
	// each job's first step, highest first, then arrival: the greedy's
	// first steps in heap order, and the answer's Order after the last
	// round. The tracker sorts again only the jobs whose value changed
	// since the last call (or round).
	var order []int
	var capped []int
	for {
		order = g.t.sorted(in, func(i int) sortKey { return sortKey{f: -first[i]} })
		g.greedy(jobs, rank, gpus, first, firstOK, order, in.total)
		round := len(capped)
		for _, i := range running {
			j := &jobs[i]
			c, k := j.current, gpus[i]
			if c > 0 && k > c && j.limit > c && !g.paysBack(j, c, k) {
				capped = append(capped, i)
				j.limit = c
			}
		}
		if len(capped) == round {
			break
		}
		for _, i := range capped[round:] {
			first[i], _, firstOK[i] = g.step(&jobs[i], 0, in.total)
		}
	}

	a := in.allocation(order, gpus)
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

	// What the next call reuses: each job's inputs and first step, as
	// last valued (a capped job's differ from what the next snapshot
	// gives, so it is valued again), and no pointer into this snapshot,
	// so that it can be freed.
	for i := range jobs {
		jobs[i].est.e = nil
	}
	g.prev, g.next = g.next, g.prev
	return a, nil
}

// jobs reads the snapshot's jobs, with unknown remaining times replaced by
// the smallest known one (1 if none is known), all clamped.
func (g *Goodput) jobs(snap *model.Snapshot) []goodputJob {
	jobs := make([]goodputJob, len(snap.Jobs))
	for i := range snap.Jobs {
		j := &snap.Jobs[i]
		g.read(&jobs[i], snap, j, sanitized(j.Est.Speedup))
	}
	fallback := goodputFallback(jobs)
	for i := range jobs {
		resolveRemaining(&jobs[i], fallback)
		jobs[i].rs = math.Pow(jobs[i].r, g.size)
	}
	return jobs
}

// sanitized returns a curve, or nil when it is unusable (read as linear).
func sanitized(c []float64) []float64 {
	if !usableCurve(c) {
		return nil
	}
	return c
}

// read reads one job into jb but for its remaining time when unknown
// (unknownR) and r^size: both wait for every job to be read. curve is the
// job's curve, sanitized.
func (g *Goodput) read(jb *goodputJob, snap *model.Snapshot, j *model.Job, curve []float64) {
	r, ok := remaining(j)
	*jb = goodputJob{
		est:      goodputEst{speedup: curve, e: &j.Est},
		r:        r,
		unknownR: !ok,
		minW:     int(inGPUs(j.Spec.MinWorkers, j.Spec.PerWorker())),
		per:      j.Spec.PerWorker(),
		current:  max(j.State.GPUs, 0),
		limit:    int(inGPUs(j.Spec.MaxWorkers, j.Spec.PerWorker())),
	}
	jb.starving = jb.current == 0 && !j.State.WaitingSince.IsZero() && snap.Now.Sub(j.State.WaitingSince).Seconds() >= g.starve
	if c := jb.current; g.settling(snap, j) {
		// It may go on in the direction it last changed, or stop.
		if c >= j.State.PrevGPUs {
			jb.keep = true // not shrunk nor halted
		}
		if c <= j.State.PrevGPUs {
			jb.limit = c // not grown
		}
	}
}

// goodputFallback is the remaining time of the jobs whose own is unknown:
// the smallest known one, 1 if none is known or only infinite ones (all
// alike).
func goodputFallback(jobs []goodputJob) float64 {
	fallback := math.Inf(1)
	for i := range jobs {
		if !jobs[i].unknownR {
			fallback = min(fallback, jobs[i].r)
		}
	}
	if math.IsInf(fallback, 1) {
		fallback = 1
	}
	return fallback
}

// resolveRemaining gives a job its remaining time: its own or the
// fallback, clamped.
func resolveRemaining(jb *goodputJob, fallback float64) {
	if jb.unknownR {
		jb.r, jb.unknownR = fallback, false
	}
	jb.r = min(max(jb.r, goodputMinRemaining), goodputMaxRemaining)
}

// step returns a running or waiting job's best next step from k GPUs: the
// target to and its value per GPU, and whether it may take it: within its
// limit, at most spare GPUs more and with a positive value; targets are
// whole workers (multiples of the job's G GPUs). From 0 the only step is
// to MinWorkers. From k > 0 every target up to the limit is
// considered and the one with the highest value per GPU wins (the
// smallest on ties): a speedup curve need not be concave (one more GPU
// that spills onto a second node is worth less than nothing, eight more
// are worth much), and a greedy that looked only one GPU ahead would stop
// in front of every such valley.
//
// The value of going from k to to is (U(to) - U(k)) / (to - k) / R with
// U(x) = S(x) + (hold - 1) S(min(x, current)): a running job's GPUs up to
// its current count are worth hold times their speedup.
func (g *Goodput) step(j *goodputJob, k, spare int) (v float64, to int, ok bool) {
	if k == 0 {
		to = j.minW
		if j.keep && j.current <= spare {
			return math.Inf(1), j.current, true
		}
		if to > j.limit || to > spare {
			return 0, 0, false
		}
		if j.starving {
			return goodputStarving, to, true
		}
		v = g.held(j, to) / float64(to) / j.rs
		return v, to, v > 0
	}
	last := min(j.limit, k+spare)
	base := g.held(j, k)
	for x := k + j.per; x <= last; x += j.per {
		if w := (g.held(j, x) - base) / float64(x-k) / j.rs; w > v {
			v, to = w, x
		}
	}
	return v, to, to > 0
}

// held is U(x): the speedup on x GPUs with the job's current GPUs counted
// hold times.
func (g *Goodput) held(j *goodputJob, x int) float64 {
	s := j.est.SpeedupAt(x)
	if j.current > 0 && g.hold != 1 {
		s += (g.hold - 1) * j.est.SpeedupAt(min(x, j.current))
	}
	return s
}

// restartSeconds is the job's restart cost, or the default when its
// estimates do not give one.
func restartSeconds(e *model.Estimates) float64 {
	if r := e.RestartSeconds; r > 0 && !math.IsInf(r, 1) {
		return r
	}
	return DefaultGoodputRestartSeconds
}

// settling reports whether a running job changed its GPUs so recently
// that it has not yet made settle restarts' worth of progress since the
// restart the change cost it. A settling job may keep changing in the
// direction of its last change (a new job ramps up, a shrinking one may
// be halted), but not turn back: a job that grew or started is neither
// shrunk nor halted, a job that shrank is not grown, so that no job flips
// between two sizes, nor between running and waiting, faster than once
// per (1 + settle) restarts' time, whatever the interval.
func (g *Goodput) settling(snap *model.Snapshot, j *model.Job) bool {
	if g.settle == 0 || j.State.GPUs <= 0 || j.State.LastChange.IsZero() {
		return false
	}
	since := snap.Now.Sub(j.State.LastChange).Seconds()
	return since < (1+g.settle)*restartSeconds(&j.Est)
}

// paysBack reports whether growing a running job from c to k GPUs saves
// payback restarts' worth of time.
func (g *Goodput) paysBack(j *goodputJob, c, k int) bool {
	restart := restartSeconds(j.est.e)
	saved := j.r/j.est.SpeedupAt(c) - j.r/j.est.SpeedupAt(k)
	return saved >= g.payback*restart
}

// greedy runs one round of the auction from nothing, writing each job's
// GPUs into gpus. first and firstOK are each job's first step (step from
// 0 within total), byFirst the jobs by that value, highest first, then by
// rank: the greedy reads them in that order, only until the GPUs run out,
// and keeps in a heap only the steps of jobs it has valued again (a job
// that moved, or a step that no longer fits in the GPUs left, taken again
// within them). The best of both is the best of a heap of every step.
func (g *Goodput) greedy(jobs []goodputJob, rank func(int) int32, gpus []int, first []float64, firstOK []bool,
	byFirst []int, total int) {
	clear(gpus)
	q := stepQueue{h: g.heap[:0], fresh: &freshList{jobs: byFirst, item: func(i int) (gainItem, bool) {
		return gainItem{gain: first[i], rank: rank(i), job: int32(i)}, firstOK[i]
	}}}
	spare := total
	for spare > 0 {
		top, fromFresh, ok := q.best()
		if !ok {
			break
		}
		i := int(top.job)
		// The step the item was valued for may have been larger than what
		// is left: value it again within spare. A step from 0 that does
		// not fit never will (spare only shrinks).
		v, to, ok := g.step(&jobs[i], gpus[i], spare)
		if !ok {
			q.drop(fromFresh)
			continue
		}
		if v < top.gain {
			top.gain = v
			q.requeue(top, fromFresh)
			continue
		}
		spare -= to - gpus[i]
		gpus[i] = to
		if v, _, ok := g.step(&jobs[i], to, spare); ok {
			top.gain = v
			q.requeue(top, fromFresh)
		} else {
			q.drop(fromFresh)
		}
	}
	g.heap = q.h[:0]
}
