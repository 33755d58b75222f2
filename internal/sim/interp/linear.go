package interp

import (
	"fmt"
	"math"
)

// maxAbsCoord bounds the input coordinates so that no intermediate product
// of the exact predicates (degree 5 in coordinate differences) overflows.
const maxAbsCoord = 1e50

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

	lo, hi vec3
	// A coarse grid over the bounding box gives each query a nearby
	// starting tetrahedron for the walk.
	gridN   [3]int
	gridInv [3]float64
	grid    []int32
}

// NewLinear triangulates points (each of length 3) and returns the linear
// interpolant of values (one row per point, all rows of the same non-zero
// length). Exact duplicate points are dropped, keeping the first occurrence
// and its values. It returns an error for mismatched lengths, non-finite
// numbers, coordinates larger than 1e50 in magnitude, or points that do not
// span three dimensions (ErrDegenerate).
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
			if math.Abs(x) > maxAbsCoord {
				return nil, fmt.Errorf("interp: point %d coordinate %g exceeds %g in magnitude", i, x, maxAbsCoord)
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
func (l *Linear) Simplex(i int) [4]int { return [4]int{int(l.tets[i][0]), int(l.tets[i][1]), int(l.tets[i][2]), int(l.tets[i][3])} }

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
	for t, v := range l.tets {
		l.tr[t] = transform(&l.pts[v[0]], &l.pts[v[1]], &l.pts[v[2]], &l.pts[v[3]])
	}
	l.lo, l.hi = l.pts[0], l.pts[0]
	for _, p := range l.pts {
		for k := 0; k < 3; k++ {
			l.lo[k] = min(l.lo[k], p[k])
			l.hi[k] = max(l.hi[k], p[k])
		}
	}
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

func (l *Linear) buildGrid() {
	cells := len(l.tets)/2 + 1
	n := int(math.Round(math.Cbrt(float64(cells))))
	n = min(max(n, 1), 32)
	total := 1
	for k := 0; k < 3; k++ {
		l.gridN[k] = n
		if w := l.hi[k] - l.lo[k]; w > 0 {
			l.gridInv[k] = float64(n) / w
		} else {
			l.gridN[k] = 1
		}
		total *= l.gridN[k]
	}
	l.grid = make([]int32, total)
	ar := arenaPool.Get().(*arena)
	defer arenaPool.Put(ar)
	start := int32(0)
	for i := 0; i < l.gridN[0]; i++ {
		for j := 0; j < l.gridN[1]; j++ {
			for k := 0; k < l.gridN[2]; k++ {
				x := vec3{
					l.lo[0] + (float64(i)+0.5)/float64(l.gridN[0])*(l.hi[0]-l.lo[0]),
					l.lo[1] + (float64(j)+0.5)/float64(l.gridN[1])*(l.hi[1]-l.lo[1]),
					l.lo[2] + (float64(k)+0.5)/float64(l.gridN[2])*(l.hi[2]-l.lo[2]),
				}
				t, _ := l.walkExact(ar, &x, start)
				l.grid[(i*l.gridN[1]+j)*l.gridN[2]+k] = t
				start = t
			}
		}
	}
}

func (l *Linear) cell(x0, x1, x2 float64) int32 {
	i := min(int((x0-l.lo[0])*l.gridInv[0]), l.gridN[0]-1)
	j := min(int((x1-l.lo[1])*l.gridInv[1]), l.gridN[1]-1)
	k := min(int((x2-l.lo[2])*l.gridInv[2]), l.gridN[2]-1)
	return l.grid[(i*l.gridN[1]+j)*l.gridN[2]+k]
}

// At evaluates the interpolant at x (length 3), writing NumValues values
// into out. It returns false, leaving out unchanged, when x is outside the
// convex hull of the points (or contains NaN, or the lengths are wrong).
// Like scipy, a point is accepted in a tetrahedron when all its barycentric
// coordinates are at least -1e-14 or so, so points on the hull boundary
// count as inside.
func (l *Linear) At(x []float64, out []float64) bool {
	if len(x) != 3 || len(out) < l.nv {
		return false
	}
	x0, x1, x2 := x[0], x[1], x[2]
	// Negated comparisons also reject NaN.
	if !(x0 >= l.lo[0] && x0 <= l.hi[0] && x1 >= l.lo[1] && x1 <= l.hi[1] && x2 >= l.lo[2] && x2 <= l.hi[2]) {
		return false
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
			l.interpolate(t, c0, c1, c2, c3, out)
			return true
		}
		n := l.nbrs[t][k]
		if n == noTet {
			break // outside, or on the hull within roundoff
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

// atExact is the slow path of At: an exact visibility walk decides whether
// x is in the hull and which tetrahedron contains it.
func (l *Linear) atExact(x0, x1, x2 float64, start int32, out []float64) bool {
	ar := arenaPool.Get().(*arena)
	x := vec3{x0, x1, x2}
	t, inside := l.walkExact(ar, &x, start)
	arenaPool.Put(ar)
	if !inside {
		return false
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
