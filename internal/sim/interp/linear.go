package interp

import (
	"fmt"
	"math"
	"slices"
)

// Input coordinates must be zero or have a magnitude in [minAbsCoord,
// maxAbsCoord] (about 7.9e-31 to 1.3e30). The exact predicates multiply up
// to five coordinate differences; within this range no product overflows and
// none loses bits to underflow, so their signs are exact.
const (
	minAbsCoord = 0x1p-100
	maxAbsCoord = 0x1p100
)

// baryEps is the tolerance on barycentric coordinates for accepting a
// simplex during point location, the same as scipy's
// LinearNDInterpolator (100 * DBL_EPSILON).
const baryEps = 100 * 2.220446049250313e-16

// Linear is a piecewise-linear interpolant over the Delaunay
// tetrahedralization of scattered 3-D points, the equivalent of scipy's
// LinearNDInterpolator for three dimensions. A Linear is immutable after
// NewLinear and safe for concurrent use.
type Linear struct {
	nv   int       // values per point
	vals []float64 // vertex-major values, nv per vertex
	pts  []vec3    // distinct points (first occurrence of duplicates)

	tets [][4]int32 // vertex indices, positively oriented
	nbrs [][4]int32 // neighbour across the face opposite each vertex; noTet on the hull
	// tr holds, per tetrahedron, the inverse of the 3x3 matrix whose
	// columns are v0-v3, v1-v3, v2-v3 (row-major, 9 numbers) followed by
	// v3: barycentric coordinates are c = inv*(x-v3), c3 = 1-c0-c1-c2.
	tr [][12]float64
	// sliver marks tetrahedra whose float transform is too ill-conditioned
	// to trust; At computes barycentric coordinates exactly in them.
	sliver []bool

	lo, hi vec3
	// blo, bhi are lo, hi widened by a relative baryEps: like scipy, At
	// accepts points outside the hull by a few ulps.
	blo, bhi vec3
	// A coarse grid over the bounding box gives each query a nearby
	// starting tetrahedron for the walk.
	gridN    [3]int
	gridCuts [3][]float64
	grid     []int32
}

// NewLinear triangulates points (each of length 3) and returns the linear
// interpolant of values (one row per point, all rows of the same non-zero
// length). Exact duplicate points are dropped, keeping the first occurrence
// and its values. It returns an error for mismatched lengths, non-finite
// numbers, non-zero coordinates of magnitude outside [2^-100, 2^100], or
// points that do not span three dimensions (ErrDegenerate).
func NewLinear(points [][]float64, values [][]float64) (*Linear, error) {
	if len(points) != len(values) {
		return nil, fmt.Errorf("interp: %d points but %d value rows", len(points), len(values))
	}
	if len(points) == 0 {
		return nil, fmt.Errorf("%w: no points", ErrDegenerate)
	}
	nv := len(values[0])
	if nv == 0 {
		return nil, fmt.Errorf("interp: value rows are empty")
	}
	l := &Linear{nv: nv}
	index := make(map[vec3]int, len(points))
	for i, p := range points {
		if len(p) != 3 {
			return nil, fmt.Errorf("interp: point %d has dimension %d, want 3", i, len(p))
		}
		if len(values[i]) != nv {
			return nil, fmt.Errorf("interp: value row %d has length %d, want %d", i, len(values[i]), nv)
		}
		var q vec3
		for k, x := range p {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("interp: point %d has non-finite coordinate %v", i, x)
			}
			if a := math.Abs(x); a > maxAbsCoord || a != 0 && a < minAbsCoord {
				return nil, fmt.Errorf("interp: point %d coordinate %g is outside the supported magnitudes [%g, %g]", i, x, minAbsCoord, maxAbsCoord)
			}
			q[k] = x + 0 // -0 becomes +0 so that it deduplicates with 0
		}
		for _, v := range values[i] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("interp: value row %d has non-finite value %v", i, v)
			}
		}
		if _, dup := index[q]; dup {
			continue
		}
		index[q] = len(l.pts)
		l.pts = append(l.pts, q)
		l.vals = append(l.vals, values[i]...)
	}
	d, err := buildDelaunay(l.pts)
	if err != nil {
		return nil, err
	}
	l.extract(d)
	l.buildGrid()
	return l, nil
}

// NumValues returns the number of values interpolated per point.
func (l *Linear) NumValues() int { return l.nv }

// NumSimplices returns the number of tetrahedra in the triangulation.
func (l *Linear) NumSimplices() int { return len(l.tets) }

// NumPoints returns the number of distinct input points.
func (l *Linear) NumPoints() int { return len(l.pts) }

// Simplex returns the vertex indices of tetrahedron i. Indices refer to the
// distinct points in input order (duplicates removed).
func (l *Linear) Simplex(i int) [4]int {
	return [4]int{int(l.tets[i][0]), int(l.tets[i][1]), int(l.tets[i][2]), int(l.tets[i][3])}
}

// extract keeps the finite tetrahedra of d, in slot order, and precomputes
// their barycentric transforms.
func (l *Linear) extract(d *delaunay) {
	newID := make([]int32, len(d.verts))
	for t := range d.verts {
		newID[t] = noTet
		if !d.dead[t] && !d.isGhost(int32(t)) {
			newID[t] = int32(len(l.tets))
			l.tets = append(l.tets, d.verts[t])
		}
	}
	l.nbrs = make([][4]int32, 0, len(l.tets))
	for t := range d.verts {
		if newID[t] == noTet {
			continue
		}
		var nb [4]int32
		for i, n := range d.nbrs[t] {
			nb[i] = newID[n]
		}
		l.nbrs = append(l.nbrs, nb)
	}
	l.tr = make([][12]float64, len(l.tets))
	l.sliver = make([]bool, len(l.tets))
	for t, v := range l.tets {
		l.tr[t] = transform(&l.pts[v[0]], &l.pts[v[1]], &l.pts[v[2]], &l.pts[v[3]])
		l.sliver[t] = !(skeelCondition(&l.tr[t], &l.pts[v[0]], &l.pts[v[1]], &l.pts[v[2]], &l.pts[v[3]]) <= maxCondition)
	}
	l.lo, l.hi = l.pts[0], l.pts[0]
	for _, p := range l.pts {
		for k := 0; k < 3; k++ {
			l.lo[k] = min(l.lo[k], p[k])
			l.hi[k] = max(l.hi[k], p[k])
		}
	}
	for k := 0; k < 3; k++ {
		tol := baryEps * max(-l.lo[k], l.hi[k], l.hi[k]-l.lo[k])
		l.blo[k], l.bhi[k] = l.lo[k]-tol, l.hi[k]+tol
	}
}

// maxCondition bounds the Skeel condition number of a tetrahedron's
// barycentric transform for At to trust float64 barycentric coordinates:
// their error is then below about 1e-10. Real data stays far below it
// (at most about 2e3 on the Pollux traces); only near-coplanar slivers,
// which exact predicates can produce from nearly-degenerate input, exceed
// it.
const maxCondition = 1e6

// skeelCondition returns || |inv| |M| || (infinity norm), where M has
// columns a-d, b-d, c-d and inv is its inverse as stored in tr. Unlike the
// normwise condition number it is not fooled by anisotropic but well-shaped
// tetrahedra (batch sizes in the thousands, node counts in units).
func skeelCondition(tr *[12]float64, a, b, c, d *vec3) float64 {
	var m [3][3]float64
	for j, p := range [3]*vec3{a, b, c} {
		for i := 0; i < 3; i++ {
			m[i][j] = math.Abs(p[i] - d[i])
		}
	}
	var s float64
	for i := 0; i < 3; i++ {
		var row float64
		for k := 0; k < 3; k++ {
			for j := 0; j < 3; j++ {
				row += math.Abs(tr[3*i+j]) * m[j][k]
			}
		}
		s = max(s, row)
	}
	return s
}

func transform(a, b, c, d *vec3) [12]float64 {
	// Columns of m are a-d, b-d, c-d.
	m00, m01, m02 := a[0]-d[0], b[0]-d[0], c[0]-d[0]
	m10, m11, m12 := a[1]-d[1], b[1]-d[1], c[1]-d[1]
	m20, m21, m22 := a[2]-d[2], b[2]-d[2], c[2]-d[2]
	c00 := m11*m22 - m12*m21
	c01 := m12*m20 - m10*m22
	c02 := m10*m21 - m11*m20
	det := m00*c00 + m01*c01 + m02*c02
	r := 1 / det
	return [12]float64{
		c00 * r, (m02*m21 - m01*m22) * r, (m01*m12 - m02*m11) * r,
		c01 * r, (m00*m22 - m02*m20) * r, (m02*m10 - m00*m12) * r,
		c02 * r, (m01*m20 - m00*m21) * r, (m00*m11 - m01*m10) * r,
		d[0], d[1], d[2],
	}
}

// buildGrid sets up the start grid. Its cells are cut at quantiles of the
// points' distinct coordinates on each axis, so that geometrically spaced
// batch sizes get as many cells at the small end as at the large one. Each
// cell records the tetrahedron containing (or, outside the hull, nearest
// to) its centre.
func (l *Linear) buildGrid() {
	target := float64(len(l.tets))/2 + 1
	var uniq [3][]float64
	for k := 0; k < 3; k++ {
		vals := make([]float64, len(l.pts))
		for i, p := range l.pts {
			vals[i] = p[k]
		}
		slices.Sort(vals)
		uniq[k] = slices.Compact(vals)
	}
	// Share the target evenly among the axes, capping each at its number
	// of distinct values and giving what is left to the others.
	var n [3]int
	free := []int{0, 1, 2}
	rest := target
	for len(free) > 0 {
		each := math.Pow(rest, 1/float64(len(free)))
		capped := false
		for i, k := range free {
			if float64(len(uniq[k])-1) <= each {
				n[k] = max(len(uniq[k])-1, 1)
				rest /= float64(n[k])
				free = slices.Delete(free, i, i+1)
				capped = true
				break
			}
		}
		if !capped {
			for _, k := range free {
				n[k] = min(max(int(math.Round(each)), 1), 64)
			}
			free = nil
		}
	}
	total := 1
	for k := 0; k < 3; k++ {
		u := uniq[k]
		l.gridCuts[k] = l.gridCuts[k][:0]
		for j := 1; j < n[k]; j++ {
			i := j * (len(u) - 1) / n[k]
			l.gridCuts[k] = append(l.gridCuts[k], (u[i]+u[i+1])/2)
		}
		l.gridN[k] = len(l.gridCuts[k]) + 1
		total *= l.gridN[k]
	}
	l.grid = make([]int32, total)
	ar := arenaPool.Get().(*arena)
	defer arenaPool.Put(ar)
	centre := func(k, i int) float64 {
		a, b := l.lo[k], l.hi[k]
		if i > 0 {
			a = l.gridCuts[k][i-1]
		}
		if i < len(l.gridCuts[k]) {
			b = l.gridCuts[k][i]
		}
		return (a + b) / 2
	}
	start := int32(0)
	for i := 0; i < l.gridN[0]; i++ {
		for j := 0; j < l.gridN[1]; j++ {
			for k := 0; k < l.gridN[2]; k++ {
				x := vec3{centre(0, i), centre(1, j), centre(2, k)}
				t, _ := l.walkExact(ar, &x, start)
				for _, n := range l.nbrs[t] {
					if l.sliver[t] && n != noTet && !l.sliver[n] {
						t = n
					}
				}
				l.grid[(i*l.gridN[1]+j)*l.gridN[2]+k] = t
				start = t
			}
		}
	}
}

// cellIndex returns the number of cuts at or below x.
func cellIndex(cuts []float64, x float64) int {
	lo, hi := 0, len(cuts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cuts[m] <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (l *Linear) cell(x0, x1, x2 float64) int32 {
	i := cellIndex(l.gridCuts[0], x0)
	j := cellIndex(l.gridCuts[1], x1)
	k := cellIndex(l.gridCuts[2], x2)
	return l.grid[(i*l.gridN[1]+j)*l.gridN[2]+k]
}

// At evaluates the interpolant at x (length 3), writing NumValues values
// into out. It returns false, leaving out unchanged, when x is outside the
// convex hull of the points (or contains NaN, or the lengths are wrong).
// Like scipy, a point is accepted in a tetrahedron when all its barycentric
// coordinates are at least -2.2e-14, so points on the hull boundary count as
// inside even when roundoff puts them a few ulps outside.
func (l *Linear) At(x []float64, out []float64) bool {
	if len(x) != 3 || len(out) < l.nv {
		return false
	}
	x0, x1, x2 := x[0], x[1], x[2]
	// Negated comparisons also reject NaN.
	if !(x0 >= l.blo[0] && x0 <= l.bhi[0] && x1 >= l.blo[1] && x1 <= l.bhi[1] && x2 >= l.blo[2] && x2 <= l.bhi[2]) {
		return false
	}
	t := l.cell(x0, x1, x2)
	for step := 0; step < 64; step++ {
		if l.sliver[t] {
			break
		}
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
			l.interpolate(t, c0, c1, c2, c3, out)
			return true
		}
		n := l.nbrs[t][k]
		if n == noTet {
			// Beyond a hull face by more than roundoff in barycentric
			// terms; an exact (and usually cheap) orientation test
			// confirms that x is outside. Otherwise x is on the face and
			// the exact walk finds its tetrahedron.
			if xq := exactQuery(x0, x1, x2); l.orientWith(nil, t, k, &xq) < 0 {
				return false
			}
			break
		}
		t = n
	}
	return l.atExact(x0, x1, x2, t, out)
}

func (l *Linear) interpolate(t int32, c0, c1, c2, c3 float64, out []float64) {
	v := &l.tets[t]
	nv := l.nv
	a := l.vals[int(v[0])*nv : int(v[0])*nv+nv]
	b := l.vals[int(v[1])*nv : int(v[1])*nv+nv]
	c := l.vals[int(v[2])*nv : int(v[2])*nv+nv]
	d := l.vals[int(v[3])*nv : int(v[3])*nv+nv]
	out = out[:nv]
	for j := range out {
		out[j] = c0*a[j] + c1*b[j] + c2*c[j] + c3*d[j]
	}
}

// exactQuery returns the query point for the exact predicates, with
// coordinates below minAbsCoord in magnitude set to zero so that no product
// underflows; this moves the point by less than 1e-30.
func exactQuery(x0, x1, x2 float64) vec3 {
	x := vec3{x0, x1, x2}
	for k, v := range x {
		if math.Abs(v) < minAbsCoord {
			x[k] = 0
		}
	}
	return x
}

// atExact is the slow path of At: an exact visibility walk decides whether
// x is in the hull and which tetrahedron contains it.
func (l *Linear) atExact(x0, x1, x2 float64, start int32, out []float64) bool {
	ar := arenaPool.Get().(*arena)
	defer arenaPool.Put(ar)
	x := exactQuery(x0, x1, x2)
	t, inside := l.walkExact(ar, &x, start)
	if !inside {
		return false
	}
	if l.sliver[t] {
		// Barycentric coordinates as ratios of exactly computed volumes.
		v := &l.tets[t]
		p := [4]*vec3{&l.pts[v[0]], &l.pts[v[1]], &l.pts[v[2]], &l.pts[v[3]]}
		vol := orient3dValue(ar, p[0], p[1], p[2], p[3])
		var c [4]float64
		for i := 0; i < 4; i++ {
			q := p
			q[i] = &x
			c[i] = orient3dValue(ar, q[0], q[1], q[2], q[3]) / vol
		}
		l.interpolate(t, c[0], c[1], c[2], c[3], out)
		return true
	}
	tr := &l.tr[t]
	d0, d1, d2 := x0-tr[9], x1-tr[10], x2-tr[11]
	c0 := tr[0]*d0 + tr[1]*d1 + tr[2]*d2
	c1 := tr[3]*d0 + tr[4]*d1 + tr[5]*d2
	c2 := tr[6]*d0 + tr[7]*d1 + tr[8]*d2
	l.interpolate(t, c0, c1, c2, 1-c0-c1-c2, out)
	return true
}

// walkExact walks from start towards x with exact orientation tests. It
// returns a tetrahedron whose closure contains x and true, or, when x is
// outside the hull, the last tetrahedron visited and false.
func (l *Linear) walkExact(ar *arena, x *vec3, start int32) (int32, bool) {
	t := start
	limit := 4*len(l.tets) + 16
	for step := 0; step < limit; step++ {
		moved := false
		for i := 0; i < 4; i++ {
			if l.orientWith(ar, t, i, x) < 0 {
				n := l.nbrs[t][i]
				if n == noTet {
					return t, false
				}
				t = n
				moved = true
				break
			}
		}
		if !moved {
			return t, true
		}
	}
	// Not expected for a Delaunay triangulation; scan everything.
	for t := range l.tets {
		inside := true
		for i := 0; i < 4 && inside; i++ {
			inside = l.orientWith(ar, int32(t), i, x) >= 0
		}
		if inside {
			return int32(t), true
		}
	}
	return start, false
}

func (l *Linear) orientWith(ar *arena, t int32, i int, p *vec3) int {
	v := &l.tets[t]
	var q [4]*vec3
	for j := 0; j < 4; j++ {
		if j == i {
			q[j] = p
		} else {
			q[j] = &l.pts[v[j]]
		}
	}
	return orient3d(ar, q[0], q[1], q[2], q[3])
}
