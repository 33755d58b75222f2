package progress

import (
	"fmt"
	"slices"
	"time"

	"github.com/vodascheduler/voda/internal/collector"
	"github.com/vodascheduler/voda/internal/goodput"
)

// maxRestartSeconds bounds a measured restart cost: a longer gap between
// an allocation change and the next generation's first report is a job
// that stopped reporting, not a restart.
const maxRestartSeconds = 3600

// State is what Voda keeps of a job's reports, stored as JSON with the job
// (store.Job.Progress).
type State struct {
	// Latest is the last report accepted, and At the server's time when it
	// arrived.
	Latest Report    `json:"latest"`
	At     time.Time `json:"at"`
	// GenerationStart is when the first report of Latest's generation
	// arrived, and GenerationReports how many of its reports have.
	GenerationStart   time.Time `json:"generationStart"`
	GenerationReports int       `json:"generationReports"`
	// Generations counts the generations seen.
	Generations int `json:"generations"`
	// Measured is the throughput measured per placement (work in epochs)
	// and the restart costs.
	Measured collector.Measurements `json:"measured"`
	// Goodput is kept for a job that declared an adaptive batch size: its
	// step times per configuration, model and advice (nil otherwise).
	Goodput *Goodput `json:"goodput,omitempty"`
}

// Allocation is what the scheduler has decided for a job, as the store
// says: its workers, and when that count last changed (start, resize,
// halt; zero if never).
type Allocation struct {
	Workers   int
	ChangedAt time.Time
	// Nodes is the nodes the workers are placed on, 0 when unknown.
	Nodes int
	// Pods is the worker pods that hold the workers (processes, one per
	// GPU): Workers over the job's GPUs per worker. Measurements are kept
	// by placement in workers, nodes and pods (collector.PlacementRate).
	Pods int
	// Batch is the global batch size the scheduler's estimates chose for
	// Workers (model.Estimates.BatchAt), 0 when none: what an adaptive
	// job is advised when Fit is nil.
	Batch int
	// Fit is the throughput model the scheduler fitted for the job
	// (store.JobStatus.Fit), nil when none: with it, an adaptive job is
	// advised the batch of most goodput on its workers and nodes for the
	// gradient statistics it reports now (goodput.Best), as the
	// simulator's jobs choose theirs at every epoch.
	Fit *goodput.Params
}

// Why a report was kept but not measured (Outcome.Reason).
const (
	// ReasonFirst: the first report of a job, or of a generation: there
	// is nothing to measure against.
	ReasonFirst = "first"
	// ReasonWarmUp: the first interval of a generation, which includes
	// start-up costs that a steady rate does not.
	ReasonWarmUp = "warm-up"
	// ReasonAllocation: the report's worker count is not the allocation's
	// (a resize under way).
	ReasonAllocation = "allocation"
)

// Outcome says what became of an accepted report.
type Outcome struct {
	// Used is whether an interval was measured; Reason says why not.
	Used   bool
	Reason string
	// Observation is the interval measured, when Used.
	Observation collector.Observation
	// RestartSeconds is the restart cost measured, when positive: the
	// report opened a generation after an allocation change.
	RestartSeconds float64
	// Advice is the batch size the reply advises: for a job that declared
	// an adaptive batch and has a model, nil otherwise.
	Advice *Advice
}

// Ingest applies report r, arriving at now, to a job's state (nil if it
// never reported) given its allocation, and returns the new state. A
// report that contradicts the state is refused with a FieldError and the
// state is unchanged: a counter that decreased, or a worker count that
// changed, within a generation.
func Ingest(prev *State, r Report, now time.Time, alloc Allocation) (State, Outcome, *FieldError) {
	var next State
	if prev != nil {
		next = *prev
	}
	if prev != nil && prev.Latest.Generation == r.Generation {
		return sameGeneration(next, r, now, alloc)
	}
	out := Outcome{Reason: ReasonFirst}
	// A new generation: the time since the allocation last changed is
	// what the restart (or the first start) cost, if the change came
	// after the previous generation began.
	if !alloc.ChangedAt.IsZero() && r.Workers == alloc.Workers && (prev == nil || alloc.ChangedAt.After(prev.GenerationStart)) {
		if d := now.Sub(alloc.ChangedAt).Seconds(); d > 0 && d <= maxRestartSeconds {
			out.RestartSeconds = d
			next.Measured.AddRestart(d)
		}
	}
	next.Latest, next.At = r, now
	next.GenerationStart, next.GenerationReports = now, 1
	next.Generations++
	out.Advice = next.batch(r, nil, now, alloc)
	return next, out, nil
}

func sameGeneration(next State, r Report, now time.Time, alloc Allocation) (State, Outcome, *FieldError) {
	last := next.Latest
	switch {
	case r.Workers != last.Workers:
		return next, Outcome{}, &FieldError{"workers", fmt.Sprintf("changed from %d to %d within generation %q; a restart or resize must start a new generation", last.Workers, r.Workers, r.Generation)}
	case r.Steps < last.Steps:
		return next, Outcome{}, decreased("steps", float64(r.Steps), float64(last.Steps), r.Generation)
	case r.Samples < last.Samples:
		return next, Outcome{}, decreased("samples", float64(r.Samples), float64(last.Samples), r.Generation)
	case r.Epoch < last.Epoch:
		return next, Outcome{}, decreased("epoch", r.Epoch, last.Epoch, r.Generation)
	}
	out := Outcome{Used: true}
	switch {
	case next.GenerationReports == 1:
		out = Outcome{Reason: ReasonWarmUp}
	case r.Workers != alloc.Workers:
		out = Outcome{Reason: ReasonAllocation}
	}
	var step *goodput.Obs
	if seconds := now.Sub(next.At).Seconds(); out.Used && seconds > 0 {
		out.Observation = collector.Observation{Workers: r.Workers, Nodes: r.Nodes, Pods: alloc.Pods, Seconds: seconds, Work: r.Epoch - last.Epoch}
		next.Measured.Add(out.Observation)
		if o, ok := measure(r, last, seconds, alloc); ok {
			step = &o
		}
	} else if out.Used {
		out = Outcome{Reason: ReasonFirst} // no time passed: nothing to measure
	}
	next.Latest, next.At = r, now
	next.GenerationReports++
	out.Advice = next.batch(r, step, now, alloc)
	return next, out, nil
}

// batch keeps what an adaptive job's report r, arriving at now, says of
// its batch: the step time measured (step, nil when the interval was not
// used), the gradient statistics, whether it follows the advice; and
// returns the advice for the allocation. Nothing is kept for a job whose batch is
// fixed, and the state is copied before it changes, so that the previous
// state is never modified.
func (s *State) batch(r Report, step *goodput.Obs, now time.Time, alloc Allocation) *Advice {
	if !r.Batch.Adaptive() {
		return nil
	}
	g := &Goodput{}
	if s.Goodput != nil {
		*g = *s.Goodput
		g.Configs = slices.Clone(g.Configs)
	}
	s.Goodput = g
	if r.GradSqNorm != nil && r.GradVariance != nil {
		g.GradSqNorm, g.GradVariance = *r.GradSqNorm, *r.GradVariance
	}
	if step != nil {
		g.observe(*step)
	}
	g.advise(r, alloc)
	if g.Advice == nil || g.Advice.Workers != alloc.Workers {
		return nil
	}
	a := *g.Advice
	return &a
}

func decreased(field string, v, was float64, gen string) *FieldError {
	return &FieldError{field, fmt.Sprintf("%s is below %s, reported earlier in generation %q; counters never decrease within a generation", num(v), num(was), gen)}
}

// Progress is the fraction of the job's epochs done, in [0, 1], given
// the epochs its manifest names (used when the reports name none); ok is
// false when neither says how many.
func (s State) Progress(specEpochs int) (float64, bool) {
	total := s.TotalEpochs(specEpochs)
	if total <= 0 {
		return 0, false
	}
	return min(max(s.Latest.Epoch/total, 0), 1), true
}

// TotalEpochs is the epochs the job trains: the reports', else the
// manifest's (0 if neither says).
func (s State) TotalEpochs(specEpochs int) float64 {
	if s.Latest.TotalEpochs > 0 {
		return s.Latest.TotalEpochs
	}
	return float64(max(specEpochs, 0))
}

// RemainingEpochs is the work left, in epochs; ok is false when the
// total is unknown.
func (s State) RemainingEpochs(specEpochs int) (float64, bool) {
	total := s.TotalEpochs(specEpochs)
	if total <= 0 {
		return 0, false
	}
	return max(total-s.Latest.Epoch, 0), true
}
