package interp

import "testing"

func (l *Linear) stepsTo(x []float64) (steps int, exact bool) {
	x0, x1, x2 := x[0], x[1], x[2]
	if !(x0 >= l.blo[0] && x0 <= l.bhi[0] && x1 >= l.blo[1] && x1 <= l.bhi[1] && x2 >= l.blo[2] && x2 <= l.bhi[2]) {
		return 0, false
	}
	t := l.cell(x0, x1, x2)
	for step := 0; step < 64; step++ {
		tr := &l.tr[t]
		d0, d1, d2 := x0-tr[9], x1-tr[10], x2-tr[11]
		c0 := tr[0]*d0 + tr[1]*d1 + tr[2]*d2
		c1 := tr[3]*d0 + tr[4]*d1 + tr[5]*d2
		c2 := tr[6]*d0 + tr[7]*d1 + tr[8]*d2
		c3 := 1 - c0 - c1 - c2
		k, m := 0, c0
		if c1 < m {
			k, m = 1, c1
		}
		if c2 < m {
			k, m = 2, c2
		}
		if c3 < m {
			k, m = 3, c3
		}
		if m >= -baryEps {
			return step + 1, false
		}
		n := l.nbrs[t][k]
		if n == noTet {
			if l.orientWith(nil, t, k, &vec3{x0, x1, x2}) < 0 {
				return step + 1, false
			}
			return step + 1, true
		}
		t = n
	}
	return 64, true
}

func TestZZSteps(t *testing.T) {
	traces := polluxTraces(t)
	for _, app := range polluxApps {
		pts, vals := polluxPoints(t, traces, app)
		l, _ := NewLinear(pts, vals)
		q := readFloats(t, "/tmp/interp/scipy1/"+app+".queries")
		tot, ex := 0, 0
		for _, r := range q {
			s, e := l.stepsTo(r[:3])
			tot += s
			if e {
				ex++
			}
		}
		t.Logf("%s grid=%v cells=%d avg steps=%.2f exact=%d/%d", app, l.gridN, len(l.grid), float64(tot)/float64(len(q)), ex, len(q))
	}
}
