package collector

import (
	"math"
	"slices"
)

// A measured rate is a claim: reports come from the job's own pods, so
// untrusted training code writes them. Three rules bound what a claim can
// do to the estimates (docs/progress.md, "What a report may claim"):
//
//   - No superlinear speedup: a rate on k workers above
//     SuperlinearTolerance × k/j times the rate on j < k workers is taken
//     as that bound (superlinear).
//   - Outliers wait for confirmation: a job's placement whose rate is
//     above OutlierRatio times linear scaling of its application's best
//     rate per GPU (what the application's other jobs and its base
//     measured, each job bounded as below) does not enter the job's fit
//     until it has been measured over ConfirmIntervals reports spanning
//     ConfirmSeconds (outliers). Linear scaling of the best per GPU is a
//     bound no honest job of the application should pass, whatever its
//     placement, so a fit that extrapolates badly flags nothing.
//   - Robust histories: within an application, each live job's rate on a
//     placement counts at most OutlierRatio times above (or below) the
//     median of the other sources' rates there (its finished jobs' base
//     and the other live jobs; with an even count, the two middle ones
//     bound it), in the application's fit and in the base it leaves when
//     it finishes (robustSum).
const (
	// SuperlinearTolerance is how far above linear scaling from fewer
	// workers a rate is believed: measured rates wobble by a few percent,
	// and a larger effective batch can make a step a little faster per
	// sample, but no job of the Pollux traces scales 10% above linear.
	SuperlinearTolerance = 1.1
	// OutlierRatio is how many times its application's rate a job's rate
	// may be before it is an outlier, and how far from the other jobs'
	// median a job's rate counts in its application's history. The Pollux
	// traces' jobs of one application and batch differ by far less.
	OutlierRatio = 4.0
	// ConfirmIntervals and ConfirmSeconds confirm an outlier: the reports
	// (intervals measured) on its placement and the time they span. An
	// hour of consistent claims at the default 30 s between reports.
	ConfirmIntervals = 10
	ConfirmSeconds   = 3600.0
)

// superlinear bounds the rates of pts, sorted by workers, so that no
// point's rate per worker is above SuperlinearTolerance times that of a
// point of fewer workers (as bounded itself).
func superlinear(pts []point) {
	best := math.Inf(1) // least rate per worker over fewer workers
	for i := 0; i < len(pts); {
		j := i
		for j < len(pts) && pts[j].k == pts[i].k {
			j++
		}
		next := best
		for q := i; q < j; q++ {
			p := &pts[q]
			p.rate = math.Min(p.rate, SuperlinearTolerance*best*float64(p.k))
			next = math.Min(next, p.rate/float64(p.k))
		}
		best, i = next, j
	}
}

// confirmed reports whether a placement was measured long enough for an
// outlier to be believed.
func confirmed(p PlacementRate) bool {
	return p.Intervals >= ConfirmIntervals && p.Seconds >= ConfirmSeconds
}

// outliers returns m without the placements whose rate is above
// OutlierRatio times perGPU times their workers and that are not
// confirmed, and whether it dropped any. m is returned as it is when
// perGPU is 0 (nothing to compare with).
func outliers(m *Measurements, perGPU float64) (*Measurements, bool) {
	if !(perGPU > 0) {
		return m, false
	}
	out := Measurements{Restarts: m.Restarts, RestartSeconds: m.RestartSeconds}
	for _, p := range m.Placements {
		if p.Work/p.Seconds > OutlierRatio*perGPU*float64(p.Workers) && !confirmed(p) {
			continue
		}
		out.Placements = append(out.Placements, p)
	}
	if len(out.Placements) == len(m.Placements) {
		return m, false
	}
	return &out, true
}

// source is one part of an application's history: its base (what its
// finished jobs left, kept as it is) or one live job (bounded by the
// others).
type source struct {
	m    *Measurements
	live bool
}

// robustSum sums the sources' measurements placement by placement, each
// live source's rate on a placement bounded to within OutlierRatio of
// the median of the other sources' rates there (when another source
// measured it): one job cannot move its application's rate on a
// placement by more than that factor, however fast or slow it claims to
// be. rates are ratesByPlacement(srcs). Restarts are summed as they are.
func robustSum(srcs []source, rates map[placementKey][]float64) Measurements {
	if len(srcs) == 1 {
		return srcs[0].m.clone()
	}
	var total Measurements
	for _, s := range srcs {
		for _, p := range s.m.Placements {
			if s.live {
				p = bounded(p, rates[p.key()])
			}
			total.addSums(p)
		}
		if s.m.Restarts > 0 && total.Restarts <= math.MaxInt-s.m.Restarts {
			total.Restarts += s.m.Restarts
			total.RestartSeconds += s.m.RestartSeconds
		}
	}
	return total
}

// bestPerGPU is the highest rate per worker the sources but skip
// measured on a placement, each live source's rate bounded (bounded) by
// rates; 0 when they measured nothing.
func bestPerGPU(srcs []source, skip *Measurements, rates map[placementKey][]float64) float64 {
	best := 0.0
	for _, s := range srcs {
		if s.m == skip {
			continue
		}
		for _, p := range s.m.Placements {
			if s.live {
				p = bounded(p, rates[p.key()])
			}
			if r := p.Work / p.Seconds / float64(p.Workers); r > best && finite(r) {
				best = r
			}
		}
	}
	return best
}

// ratesByPlacement is every source's rate on each placement, sorted.
func ratesByPlacement(srcs []source) map[placementKey][]float64 {
	byKey := map[placementKey][]float64{}
	for _, s := range srcs {
		for _, p := range s.m.Placements {
			if r := p.Work / p.Seconds; r > 0 {
				byKey[p.key()] = append(byKey[p.key()], r)
			}
		}
	}
	for _, rates := range byKey {
		slices.Sort(rates)
	}
	return byKey
}

// boundedBy returns m with every placement bounded (bounded) by rates,
// which hold m's own.
func (m Measurements) boundedBy(rates map[placementKey][]float64) Measurements {
	m = m.clone()
	for i, p := range m.Placements {
		m.Placements[i] = bounded(p, rates[p.key()])
	}
	return m
}

// bounded returns p with its work scaled so that its rate is within
// OutlierRatio of the median of the others' rates: rates are every
// source's rate on p's placement, sorted, p's own among them.
func bounded(p PlacementRate, rates []float64) PlacementRate {
	r := p.Work / p.Seconds
	if len(rates) < 2 || !(r > 0) {
		return p
	}
	lo, hi := medianWithout(rates, r)
	b := math.Min(math.Max(r, lo/OutlierRatio), hi*OutlierRatio)
	if b == r || !(b > 0) || !finite(b) {
		return p
	}
	f := b / r
	p.Work *= f
	p.SumSqRate *= f * f
	return p
}

// medianWithout is the median of sorted without one element equal to
// own (which it holds), as an interval: the middle element, or the two
// middle ones of an even count. A job is bounded by the interval, so
// that of two others who disagree neither drags it towards itself: two
// honest jobs beside a liar are bounded by [honest, liar], which holds
// them, and the liar by [honest, honest].
func medianWithout(sorted []float64, own float64) (lo, hi float64) {
	e, _ := slices.BinarySearch(sorted, own)
	n := len(sorted) - 1
	at := func(q int) float64 {
		if q >= e {
			q++
		}
		return sorted[q]
	}
	if n%2 == 1 {
		return at(n / 2), at(n / 2)
	}
	return at(n/2 - 1), at(n / 2)
}
