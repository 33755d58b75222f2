package collector

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// MaxPlacements bounds the placements one Measurements holds. Add and
// Merge ignore new placements beyond it, and Validate refuses more.
const MaxPlacements = 4096

// MaxRestartSeconds is the longest restart AddRestart accepts: a day.
const MaxRestartSeconds = 86400.0

// PlacementRate sums what was measured on one placement.
type PlacementRate struct {
	Workers int `json:"workers"`
	Nodes   int `json:"nodes,omitempty"` // distinct nodes; 0 = unknown
	// Pods is how many worker pods held the workers (processes, one per
	// GPU) when they hold several GPUs each; 0 is one pod per worker, as
	// every job's before issue 29. 2 pods of 4 GPUs and 8 pods of 1 are
	// different placements: processes within a pod share NVLink and
	// memory, across pods they do not.
	Pods      int     `json:"pods,omitempty"`
	Seconds   float64 `json:"seconds"`
	Work      float64 `json:"work"`
	Intervals int     `json:"intervals"` // observations summed
	SumSqRate float64 `json:"sumSqRate"` // sum over intervals of (work/seconds)^2, for the spread
}

// Measurements is what is known of one job or one application: the
// progress measured per placement and the restarts timed. It is plain data,
// meant to be stored as JSON and handed back to a Collector.
type Measurements struct {
	Placements     []PlacementRate `json:"placements,omitempty"` // sorted by workers, nodes, then pods
	Restarts       int             `json:"restarts,omitempty"`
	RestartSeconds float64         `json:"restartSeconds,omitempty"` // total over Restarts
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// validObservation is the check Observe has always made, plus the node
// count: at least one worker, seconds above 0, finite non-negative work,
// and nodes from 0 (unknown) to workers.
func validObservation(o Observation) bool {
	return o.Workers > 0 && o.Seconds > 0 && !math.IsInf(o.Seconds, 0) &&
		o.Work >= 0 && finite(o.Work) && o.Nodes >= 0 && o.Nodes <= o.Workers && checkPods(o.Workers, o.Nodes, o.Pods) == nil
}

// checkPods checks a placement's pods: 0 (one per worker), or a divisor of
// the workers no fewer than the nodes.
func checkPods(workers, nodes, pods int) error {
	if pods != 0 && (pods < 1 || pods > workers || workers%pods != 0 || pods < nodes) {
		return fmt.Errorf("pods: %d, must be 0 (one per worker) or divide workers (%d) and be at least nodes (%d)", pods, workers, nodes)
	}
	return nil
}

// podsKey is how a placement's pods are kept: one pod per worker is 0,
// however it was given, so that G=1 measurements read as they always
// have.
func podsKey(workers, pods int) int {
	if pods == workers {
		return 0
	}
	return pods
}

// placementKey identifies a placement: its workers, nodes and pods.
type placementKey struct{ workers, nodes, pods int }

func (p PlacementRate) key() placementKey { return placementKey{p.Workers, p.Nodes, p.Pods} }

func comparePlacement(p PlacementRate, k placementKey) int {
	return cmp.Or(cmp.Compare(p.Workers, k.workers), cmp.Compare(p.Nodes, k.nodes), cmp.Compare(p.Pods, k.pods))
}

// find returns the index of placement k, or where it would be inserted,
// and whether it is there.
func (m *Measurements) find(k placementKey) (int, bool) {
	return slices.BinarySearchFunc(m.Placements, k, comparePlacement)
}

// Add sums an observation into its placement. An invalid observation (the
// ones Observe ignores, nodes outside 0 to workers), one whose sums would
// overflow, or a new placement beyond MaxPlacements is ignored.
func (m *Measurements) Add(o Observation) { m.add(o) }

// add is Add, reporting whether the observation was kept.
func (m *Measurements) add(o Observation) bool {
	if !validObservation(o) {
		return false
	}
	rate := o.Work / o.Seconds
	return m.addSums(PlacementRate{Workers: o.Workers, Nodes: o.Nodes, Pods: podsKey(o.Workers, o.Pods), Seconds: o.Seconds, Work: o.Work, Intervals: 1, SumSqRate: rate * rate})
}

// addSums adds p's sums to its placement unless the result would not be
// valid.
func (m *Measurements) addSums(p PlacementRate) bool {
	i, found := m.find(p.key())
	if !found {
		if len(m.Placements) >= MaxPlacements || !finite(p.SumSqRate) {
			return false
		}
		m.Placements = slices.Insert(m.Placements, i, p)
		return true
	}
	q := &m.Placements[i]
	seconds, work, sq := q.Seconds+p.Seconds, q.Work+p.Work, q.SumSqRate+p.SumSqRate
	if !finite(seconds) || !finite(work) || !finite(sq) || q.Intervals > math.MaxInt-p.Intervals {
		return false
	}
	q.Seconds, q.Work, q.SumSqRate = seconds, work, sq
	q.Intervals += p.Intervals
	return true
}

// AddRestart records a restart that took seconds, from a resize to the
// first report of the job's new generation. A non-finite or negative time,
// or one over MaxRestartSeconds, is ignored.
func (m *Measurements) AddRestart(seconds float64) {
	if !(seconds >= 0 && seconds <= MaxRestartSeconds) || m.Restarts == math.MaxInt {
		return
	}
	m.Restarts++
	m.RestartSeconds += seconds
}

// Merge adds o's sums to m's, placement by placement; o need not be sorted.
// Placements of o that Validate would refuse are skipped, and so are o's restarts when their
// total is not one Validate accepts.
func (m *Measurements) Merge(o Measurements) {
	for _, p := range o.Placements {
		if checkPlacement(p) == nil {
			m.addSums(p)
		}
	}
	if o.Restarts > 0 && checkRestarts(o.Restarts, o.RestartSeconds) == nil &&
		m.Restarts <= math.MaxInt-o.Restarts {
		m.Restarts += o.Restarts
		m.RestartSeconds += o.RestartSeconds
	}
}

// clone returns a copy of m that shares no memory with it.
func (m Measurements) clone() Measurements {
	m.Placements = slices.Clone(m.Placements)
	return m
}

// Validate checks measurements decoded from storage: placements sorted by
// workers, nodes then pods without duplicates, at most MaxPlacements of them,
// each with at least one worker, nodes from 0 to workers, seconds above 0,
// at least one interval, finite non-negative sums and a finite rate; restarts not
// negative, their total finite and at most MaxRestartSeconds a restart.
// The error names the first field at fault.
func (m Measurements) Validate() error {
	if len(m.Placements) > MaxPlacements {
		return fmt.Errorf("placements: %d, more than %d", len(m.Placements), MaxPlacements)
	}
	for i, p := range m.Placements {
		if err := checkPlacement(p); err != nil {
			return fmt.Errorf("placements[%d].%w", i, err)
		}
		if i == 0 {
			continue
		}
		if q := m.Placements[i-1]; comparePlacement(q, p.key()) >= 0 {
			return fmt.Errorf("placements[%d]: workers %d, nodes %d, pods %d not after placements[%d] (workers %d, nodes %d, pods %d): must be sorted by workers, nodes then pods, without duplicates",
				i, p.Workers, p.Nodes, p.Pods, i-1, q.Workers, q.Nodes, q.Pods)
		}
	}
	return checkRestarts(m.Restarts, m.RestartSeconds)
}

func checkPlacement(p PlacementRate) error {
	switch {
	case p.Workers < 1:
		return fmt.Errorf("workers: %d, must be at least 1", p.Workers)
	case p.Nodes < 0 || p.Nodes > p.Workers:
		return fmt.Errorf("nodes: %d, must be from 0 (unknown) to workers (%d)", p.Nodes, p.Workers)
	case checkPods(p.Workers, p.Nodes, p.Pods) != nil:
		return checkPods(p.Workers, p.Nodes, p.Pods)
	case p.Pods == p.Workers:
		return fmt.Errorf("pods: %d, one per worker, is kept as 0", p.Pods)
	case !(p.Seconds > 0) || !finite(p.Seconds):
		return fmt.Errorf("seconds: %v, must be finite and above 0", p.Seconds)
	case !(p.Work >= 0) || !finite(p.Work):
		return fmt.Errorf("work: %v, must be finite and not negative", p.Work)
	case !finite(p.Work / p.Seconds):
		return fmt.Errorf("work: %v over seconds %v is not a finite rate", p.Work, p.Seconds)
	case p.Intervals < 1:
		return fmt.Errorf("intervals: %d, must be at least 1", p.Intervals)
	case !(p.SumSqRate >= 0) || !finite(p.SumSqRate):
		return fmt.Errorf("sumSqRate: %v, must be finite and not negative", p.SumSqRate)
	}
	return nil
}

func checkRestarts(n int, seconds float64) error {
	switch {
	case n < 0:
		return fmt.Errorf("restarts: %d, must not be negative", n)
	case !(seconds >= 0) || !finite(seconds):
		return fmt.Errorf("restartSeconds: %v, must be finite and not negative", seconds)
	case seconds > MaxRestartSeconds*float64(n):
		return fmt.Errorf("restartSeconds: %v, more than %v for each of %d restarts", seconds, MaxRestartSeconds, n)
	}
	return nil
}

// restartMean is the mean restart time, if any restart was timed.
func (m *Measurements) restartMean() (float64, bool) {
	if m.Restarts <= 0 {
		return 0, false
	}
	return m.RestartSeconds / float64(m.Restarts), true
}
