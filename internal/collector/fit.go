package collector

import (
	"math"
	"slices"
)

// fit is Amdahl's law with a node penalty for one job or application:
// k/rate(k, n) = (1 + serial(k-1) + penalty(n-1)) / rate1.
type fit struct {
	rate1   float64 // work per second on one GPU
	serial  float64
	penalty float64 // c/a: the cost of each node beyond the first, as a fraction of a
	ok      bool
	counts  int  // distinct worker counts behind the fit
	nodes   bool // the data identified the penalty
}

// cost is k/rate(k, n) in units of 1/rate1: the time a unit of work takes
// k workers on n nodes, times k, over the time it takes one GPU.
func (f fit) cost(k, n int) float64 {
	d := 1 + f.serial*float64(k-1)
	if n > 1 {
		d += f.penalty * float64(n-1)
	}
	return d
}

// prior is what a fit assumes where its data do not tell: the serial
// fraction with one worker count seen, the node penalty when the data do
// not identify one.
type prior struct{ serial, penalty float64 }

// point is one placement's measured rate; n counts unknown nodes as one.
type point struct {
	k, n int
	rate float64
}

// points returns the placements that say something about speed, in the
// order of m (by workers, then nodes), no rate above what linear scaling
// from fewer workers allows (superlinear). A placement with no work done,
// such as a restart, is no evidence.
func points(m *Measurements) []point {
	pts := make([]point, 0, len(m.Placements))
	for _, p := range m.Placements {
		if !(p.Seconds > 0 && p.Work > 0) {
			continue
		}
		r := p.Work / p.Seconds
		if r > 0 && finite(r) {
			pts = append(pts, point{k: p.Workers, n: max(p.Nodes, 1), rate: r})
		}
	}
	superlinear(pts)
	return pts
}

// fitMeasurements fits k/rate(k, n) = a + b(k-1) + c(n-1) by least squares,
// weighting every placement equally: rate1 = 1/a, serial = b/a, penalty =
// c/a with c >= 0. c is fitted only when the data can identify it (three
// placements or more, on two node counts or more, not collinear); else the
// prior's penalty is taken. With one worker count the prior's serial
// fraction is kept and only rate1 is fitted.
func fitMeasurements(m *Measurements, pr prior) fit {
	pts := points(m)
	if len(pts) == 0 {
		return fit{}
	}
	counts, nodeCounts := 1, []int{pts[0].n}
	for i := 1; i < len(pts); i++ {
		if pts[i].k != pts[i-1].k {
			counts++
		}
		if !slices.Contains(nodeCounts, pts[i].n) {
			nodeCounts = append(nodeCounts, pts[i].n)
		}
	}
	penalty, identified := pr.penalty, false
	if len(pts) >= 3 && len(nodeCounts) >= 2 {
		if a, b, c, ok := solve3(pts); ok {
			if c <= 0 {
				// The least-squares fit under c >= 0 is then the one with
				// c = 0.
				penalty, identified = 0, true
			} else if a > 0 {
				f := fit{rate1: 1 / a, serial: clampSerial(b / a), penalty: c / a, ok: true, counts: counts, nodes: true}
				if f.usable() {
					return f
				}
			}
		}
	}
	var f fit
	if counts < 2 {
		f = refit(pts, pr.serial, penalty)
	} else if a, b, ok := solve2(pts, penalty); ok && a > 0 && !math.IsNaN(b) {
		f = fit{rate1: 1 / a, serial: clampSerial(b / a), penalty: penalty, ok: true}
	} else {
		f = refit(pts, DefaultSerial, penalty)
	}
	f.counts, f.nodes = counts, identified
	if !f.usable() {
		return fit{}
	}
	return f
}

func clampSerial(s float64) float64 { return math.Min(math.Max(s, MinSerial), 1) }

// usable reports whether a fit's numbers can be used: only data at the
// edge of float64's range make them otherwise.
func (f fit) usable() bool {
	return f.rate1 > 0 && finite(f.rate1) && finite(f.serial) && f.penalty >= 0 && finite(f.penalty)
}

// solve2 fits k/rate = a(1 + p(n-1)) + b(k-1) for a known p. With every
// placement's term 1 + p(n-1) equal to 1 it is the ordinary straight line,
// computed as the collector always has.
func solve2(pts []point, p float64) (a, b float64, ok bool) {
	oneNode := true
	for _, q := range pts {
		oneNode = oneNode && (p == 0 || q.n == 1)
	}
	if oneNode {
		var sx, sy, sxx, sxy float64
		for _, q := range pts {
			x := float64(q.k - 1)
			y := float64(q.k) / q.rate
			sx += x
			sy += y
			sxx += x * x
			sxy += x * y
		}
		n := float64(len(pts))
		b = (n*sxy - sx*sy) / (n*sxx - sx*sx)
		a = (sy - b*sx) / n
		return a, b, true
	}
	return lsq2(pts, func(q point) (u, v, y float64) {
		return 1 + p*float64(q.n-1), float64(q.k - 1), float64(q.k) / q.rate
	})
}

// solve3 fits k/rate = a + b(k-1) + c(n-1) without bounds. It fails when the
// placements do not separate the three terms.
func solve3(pts []point) (a, b, c float64, ok bool) {
	var m1, m2, my float64
	for _, q := range pts {
		m1 += float64(q.k - 1)
		m2 += float64(q.n - 1)
		my += float64(q.k) / q.rate
	}
	n := float64(len(pts))
	m1, m2, my = m1/n, m2/n, my/n
	b, c, ok = lsq2(pts, func(q point) (x1, x2, y float64) {
		return float64(q.k-1) - m1, float64(q.n-1) - m2, float64(q.k)/q.rate - my
	})
	a = my - b*m1 - c*m2
	return a, b, c, ok && finite(a) && finite(b) && finite(c)
}

// lsq2 fits y = β1 x1 + β2 x2 by least squares over pts, whose terms f
// gives. It fails when the two terms are (nearly) in proportion.
func lsq2(pts []point, f func(point) (x1, x2, y float64)) (b1, b2 float64, ok bool) {
	var s11, s12, s22, s1y, s2y float64
	for _, q := range pts {
		x1, x2, y := f(q)
		s11 += x1 * x1
		s12 += x1 * x2
		s22 += x2 * x2
		s1y += x1 * y
		s2y += x2 * y
	}
	det := s11*s22 - s12*s12
	if !(det > 1e-9*s11*s22) {
		return 0, 0, false
	}
	return (s22*s1y - s12*s2y) / det, (s11*s2y - s12*s1y) / det, true
}

// refit keeps a given serial fraction and node penalty and fits only the
// one-GPU rate: the mean over placements of rate(k, n) cost(k, n) / k.
func refit(pts []point, serial, penalty float64) fit {
	f := fit{serial: serial, penalty: penalty, ok: true}
	total := 0.0
	for _, q := range pts {
		total += q.rate * f.cost(q.k, q.n) / float64(q.k)
	}
	f.rate1 = total / float64(len(pts))
	return f
}
