package collector

import "math"

// Detail is what the collector knows of a job, for people (voda describe
// job).
type Detail struct {
	// Source says whose measurements gave the fit: SourceJob (the job's
	// own one-GPU rate; with one worker count, or no node penalty of its
	// own, it borrows those from its application), SourceApplication (the
	// job has no usable measurement yet) or SourceDefault (nothing known:
	// Rate1 is 0 and Serial is DefaultSerial).
	Source string `json:"source"`
	// Rate1 is the work per second on one GPU.
	Rate1 float64 `json:"rate1"`
	// Serial is the serial fraction s of Amdahl's law.
	Serial float64 `json:"serial"`
	// NodePenalty is the time each node beyond the first adds, as a
	// fraction of the one-GPU time: k/rate(k, n) = (1 + Serial(k-1) +
	// NodePenalty(n-1)) / Rate1.
	NodePenalty float64 `json:"nodePenalty"`
	// Placements are the job's own measurements, by workers then nodes.
	Placements []PlacementDetail `json:"placements,omitempty"`
	// RestartSeconds is the mean measured restart time (RestartSeconds of
	// the collector); RestartKnown is false when there is none.
	RestartSeconds float64 `json:"restartSeconds"`
	RestartKnown   bool    `json:"restartKnown"`
	// RemainingRelErr is the relative standard error of the remaining time
	// Estimate gives, from the spread of the measured rates behind the fit:
	// the mean of their placements' RateRelErr weighted by seconds measured,
	// over the placements with two intervals or more. It says how well the
	// speed is measured, not whether the remaining work is right; 0 when
	// unknown.
	RemainingRelErr float64 `json:"remainingRelErr"`
}

// PlacementDetail is what was measured on one placement.
type PlacementDetail struct {
	Workers   int     `json:"workers"`
	Nodes     int     `json:"nodes,omitempty"` // 0: unknown
	Pods      int     `json:"pods,omitempty"`  // 0: one per worker (PlacementRate.Pods)
	Seconds   float64 `json:"seconds"`
	Intervals int     `json:"intervals"`
	// Rate is the mean work per second: work over seconds.
	Rate float64 `json:"rate"`
	// RateRelErr is the relative standard error of Rate: the standard
	// deviation of the intervals' rates around Rate, over Rate, over the
	// square root of the intervals; 0 with fewer than two intervals.
	RateRelErr float64 `json:"rateRelErr"`
}

// Source says whose measurements Estimate's fit for job comes from:
// SourceJob, SourceApplication or SourceDefault (nothing known).
func (c *Collector) Source(job, app string) string {
	_, src := c.fitFor(job, app)
	return src
}

// Detail returns the fit Estimate uses for job, the job's measurements and
// their uncertainty.
func (c *Collector) Detail(job, app string) Detail {
	f, src := c.fitFor(job, app)
	d := Detail{Source: src, Rate1: f.rate1, Serial: f.serial, NodePenalty: f.penalty}
	d.RestartSeconds, d.RestartKnown = c.RestartSeconds(job, app)
	var behind *Measurements
	if js := c.jobs[job]; js != nil {
		d.Placements = Placements(js.m)
		if src == SourceJob {
			behind = &js.m
		}
	}
	if src == SourceApplication {
		behind = c.appTotal(c.apps[app])
	}
	if behind != nil {
		d.RemainingRelErr = remainingRelErr(behind)
	}
	return d
}

// Placements are what m measured on each placement, with no fit: the
// view of a job from its own measurements alone.
func Placements(m Measurements) []PlacementDetail {
	var out []PlacementDetail
	for _, p := range m.Placements {
		out = append(out, PlacementDetail{
			Workers: p.Workers, Nodes: p.Nodes, Pods: p.Pods, Seconds: p.Seconds, Intervals: p.Intervals,
			Rate: p.Work / p.Seconds, RateRelErr: rateRelErr(p),
		})
	}
	return out
}

// RemainingRelErr is Detail's RemainingRelErr for a job measured by m
// alone.
func RemainingRelErr(m Measurements) float64 { return remainingRelErr(&m) }

// rateRelErr is the relative standard error of a placement's rate. The
// intervals' rates are summed as squares only, so their spread is taken
// around the time-weighted mean rate.
func rateRelErr(p PlacementRate) float64 {
	n := float64(p.Intervals)
	mean := p.Work / p.Seconds
	if p.Intervals < 2 || !(mean > 0) || !finite(mean) {
		return 0
	}
	// The variance over mean², from the mean square over mean².
	v := (p.SumSqRate/n/mean/mean - 1) * n / (n - 1)
	if !(v > 0) || !finite(v) {
		return 0
	}
	return math.Sqrt(v / n)
}

// remainingRelErr is the seconds-weighted mean of rateRelErr over the
// placements with two intervals or more and work done.
func remainingRelErr(m *Measurements) float64 {
	var sum, weight float64
	for _, p := range m.Placements {
		if p.Intervals >= 2 && p.Work > 0 {
			sum += p.Seconds * rateRelErr(p)
			weight += p.Seconds
		}
	}
	if !(weight > 0) || !finite(sum/weight) {
		return 0
	}
	return sum / weight
}
