package interp

import (
	"errors"
	"math"
	"math/rand"
	"sync"
	"testing"
)

// affine is f(x) = c0 + g.x, one per output value.
type affine struct {
	c0 float64
	g  vec3
}

func (f affine) at(x []float64) float64 { return f.c0 + f.g[0]*x[0] + f.g[1]*x[1] + f.g[2]*x[2] }

func randomAffine(rng *rand.Rand) affine {
	return affine{rng.NormFloat64() * 10, vec3{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}}
}

func sampleValues(pts [][]float64, fs []affine) [][]float64 {
	vals := make([][]float64, len(pts))
	for i, p := range pts {
		vals[i] = make([]float64, len(fs))
		for j, f := range fs {
			vals[i][j] = f.at(p)
		}
	}
	return vals
}

// checkAffine asserts that l reproduces fs at x to 1e-9 relative to the
// size of the terms involved.
func checkAffine(t *testing.T, l *Linear, fs []affine, x []float64) {
	t.Helper()
	out := make([]float64, len(fs))
	if !l.At(x, out) {
		t.Fatalf("At(%v) = false, want inside", x)
	}
	for j, f := range fs {
		want := f.at(x)
		scale := math.Abs(f.c0) + math.Abs(f.g[0]*x[0]) + math.Abs(f.g[1]*x[1]) + math.Abs(f.g[2]*x[2])
		if math.Abs(out[j]-want) > 1e-9*scale {
			t.Fatalf("At(%v)[%d] = %.17g, want %.17g", x, j, out[j], want)
		}
	}
}

// randomInside returns a random convex combination of a few points.
func randomInside(rng *rand.Rand, pts [][]float64) []float64 {
	k := 1 + rng.Intn(4)
	x := make([]float64, 3)
	var sum float64
	w := make([]float64, k)
	for i := range w {
		w[i] = rng.ExpFloat64()
		sum += w[i]
	}
	for i := range w {
		p := pts[rng.Intn(len(pts))]
		for d := 0; d < 3; d++ {
			x[d] += w[i] / sum * p[d]
		}
	}
	return x
}

// hullPlanes returns, as an independent O(n^4) oracle of the convex hull,
// every plane through three points that has all points on one side: each
// as the three indices and the sign (+1 or -1) of that side.
func hullPlanes(pts [][]float64) [][4]int {
	var ar arena
	v := func(i int) *vec3 { return (*vec3)(pts[i]) }
	var planes [][4]int
	n := len(pts)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			for k := j + 1; k < n; k++ {
				var pos, neg bool
				for m := 0; m < n && !(pos && neg); m++ {
					switch orient3d(&ar, v(i), v(j), v(k), v(m)) {
					case 1:
						pos = true
					case -1:
						neg = true
					}
				}
				switch {
				case pos && !neg:
					planes = append(planes, [4]int{i, j, k, 1})
				case neg && !pos:
					planes = append(planes, [4]int{i, j, k, -1})
				}
			}
		}
	}
	return planes
}

// outsideHull reports whether x is strictly outside the convex hull, that
// is strictly on the other side of some hull plane.
func outsideHull(pts [][]float64, planes [][4]int, x []float64) bool {
	var ar arena
	xv := vec3{x[0], x[1], x[2]}
	for _, p := range planes {
		s := orient3d(&ar, (*vec3)(pts[p[0]]), (*vec3)(pts[p[1]]), (*vec3)(pts[p[2]]), &xv)
		if s != 0 && s != p[3] {
			return true
		}
	}
	return false
}

func dist2(a, b *vec3) float64 {
	dx, dy, dz := a[0]-b[0], a[1]-b[1], a[2]-b[2]
	return dx*dx + dy*dy + dz*dz
}

// circumsphere returns the approximate centre and squared radius of the
// sphere through a, b, c, d.
func circumsphere(a, b, c, d *vec3) (vec3, float64) {
	var m [3][3]float64
	var rhs [3]float64
	for i, p := range [3]*vec3{b, c, d} {
		for k := 0; k < 3; k++ {
			m[i][k] = 2 * (p[k] - a[k])
		}
		rhs[i] = dist2(p, &vec3{}) - dist2(a, &vec3{})
	}
	det := func(m [3][3]float64) float64 {
		return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) - m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) + m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
	}
	d0 := det(m)
	var ctr vec3
	for k := 0; k < 3; k++ {
		mk := m
		for i := 0; i < 3; i++ {
			mk[i][k] = rhs[i]
		}
		ctr[k] = det(mk) / d0
	}
	return ctr, dist2(&ctr, a)
}

// checkDelaunay asserts the structural invariants of a triangulation:
// positive orientation, symmetric neighbours and empty circumspheres.
func checkDelaunay(t *testing.T, l *Linear) {
	t.Helper()
	var ar arena
	for ti, v := range l.tets {
		p := func(i int) *vec3 { return &l.pts[v[i]] }
		if orient3d(&ar, p(0), p(1), p(2), p(3)) <= 0 {
			t.Fatalf("tetrahedron %d %v not positively oriented", ti, v)
		}
		for i, n := range l.nbrs[ti] {
			if n == noTet {
				continue
			}
			found := false
			for _, m := range l.nbrs[n] {
				found = found || m == int32(ti)
			}
			if !found {
				t.Fatalf("tetrahedron %d neighbour %d (%d) does not link back", ti, i, n)
			}
		}
		// Screen with an approximate circumsphere, decide exactly.
		c, r2 := circumsphere(p(0), p(1), p(2), p(3))
		for q := range l.pts {
			if dist2(&c, &l.pts[q]) > r2*(1+1e-6) {
				continue
			}
			if insphere(&ar, p(0), p(1), p(2), p(3), &l.pts[q]) > 0 {
				t.Fatalf("point %d %v is inside the circumsphere of tetrahedron %d %v", q, l.pts[q], ti, v)
			}
		}
	}
}

func totalVolume(l *Linear) float64 {
	var v float64
	for _, tet := range l.tets {
		a, b, c, d := l.pts[tet[0]], l.pts[tet[1]], l.pts[tet[2]], l.pts[tet[3]]
		u := vec3{a[0] - d[0], a[1] - d[1], a[2] - d[2]}
		w := vec3{b[0] - d[0], b[1] - d[1], b[2] - d[2]}
		z := vec3{c[0] - d[0], c[1] - d[1], c[2] - d[2]}
		v += math.Abs(u[0]*(w[1]*z[2]-w[2]*z[1])-u[1]*(w[0]*z[2]-w[2]*z[0])+u[2]*(w[0]*z[1]-w[1]*z[0])) / 6
	}
	return v
}

func TestCubeWithCentre(t *testing.T) {
	var pts [][]float64
	for i := 0; i < 8; i++ {
		pts = append(pts, []float64{float64(i & 1), float64(i >> 1 & 1), float64(i >> 2 & 1)})
	}
	pts = append(pts, []float64{0.5, 0.5, 0.5})
	fs := []affine{{1, vec3{2, -3, 0.5}}, {-4, vec3{0.25, 1, 7}}}
	l, err := NewLinear(pts, sampleValues(pts, fs))
	if err != nil {
		t.Fatal(err)
	}
	checkDelaunay(t, l)
	// Every face of the cube is split in two and joined to the centre.
	if got := l.NumSimplices(); got != 12 {
		t.Errorf("NumSimplices() = %d, want 12", got)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 1000; i++ {
		checkAffine(t, l, fs, []float64{rng.Float64(), rng.Float64(), rng.Float64()})
	}
	for _, p := range pts {
		checkAffine(t, l, fs, p)
	}
	// Faces, edges and corners of the hull count as inside.
	for _, x := range [][]float64{{0, 0.3, 0.7}, {1, 1, 0.2}, {0.5, 0, 1}, {1, 1, 1}} {
		checkAffine(t, l, fs, x)
	}
	out := []float64{42, 42}
	for _, x := range [][]float64{{1.0000001, 0.5, 0.5}, {-1e-9, 0, 0}, {2, 2, 2}, {0.5, math.NaN(), 0.5}, {0.5, 0.5, math.Inf(1)}} {
		if l.At(x, out) {
			t.Errorf("At(%v) = true, want outside", x)
		}
	}
	if out[0] != 42 || out[1] != 42 {
		t.Errorf("At changed out on a miss: %v", out)
	}
	if l.At([]float64{0.5, 0.5}, out) || l.At([]float64{0.5, 0.5, 0.5}, out[:1]) {
		t.Error("At accepted wrong lengths")
	}
}

func TestRandomPointsReproduceAffine(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	roundedOut := 0
	defer func() { t.Logf("%d convex combinations were rounded to outside the hull", roundedOut) }()
	for trial := 0; trial < 60; trial++ {
		n := 4 + rng.Intn(40)
		pts := make([][]float64, n)
		for i := range pts {
			switch trial % 3 {
			case 0: // generic
				pts[i] = []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
			case 1: // anisotropic scales, as in (nodes, replicas, local_bsz)
				pts[i] = []float64{1 + rng.Float64()*15, 1 + rng.Float64()*63, 32 + rng.Float64()*32000}
			default: // small integers: many coplanar and cospherical subsets
				pts[i] = []float64{float64(rng.Intn(4)), float64(rng.Intn(4)), float64(rng.Intn(4))}
			}
		}
		fs := []affine{randomAffine(rng), randomAffine(rng)}
		l, err := NewLinear(pts, sampleValues(pts, fs))
		if errors.Is(err, ErrDegenerate) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		checkDelaunay(t, l)
		planes := hullPlanes(pts)
		for i := 0; i < 200; i++ {
			x := randomInside(rng, pts)
			// A convex combination rounded to float64 can land just
			// outside the hull, farther than the barycentric tolerance
			// when the hull is thin there; the exact oracle tells.
			if !l.At(x, make([]float64, 2)) && outsideHull(pts, planes, x) {
				roundedOut++
				continue
			}
			checkAffine(t, l, fs, x)
		}
		// Random points of the bounding box, checked against the oracle.
		lo, hi := l.lo, l.hi
		out := make([]float64, 2)
		for i := 0; i < 100; i++ {
			x := make([]float64, 3)
			for d := range x {
				w := hi[d] - lo[d]
				x[d] = lo[d] - 0.1*w + 1.2*w*rng.Float64()
			}
			if outsideHull(pts, planes, x) {
				if l.At(x, out) {
					t.Fatalf("trial %d: At(%v) = true for a point outside the hull", trial, x)
				}
			} else {
				checkAffine(t, l, fs, x)
			}
		}
	}
}

func lattice(nx, ny, nz int, scale vec3) [][]float64 {
	var pts [][]float64
	for i := 0; i < nx; i++ {
		for j := 0; j < ny; j++ {
			for k := 0; k < nz; k++ {
				pts = append(pts, []float64{float64(i) * scale[0], float64(j) * scale[1], float64(k) * scale[2]})
			}
		}
	}
	return pts
}

func TestLatticeReproducesAffine(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, scale := range []vec3{{1, 1, 1}, {1, 4, 1000}, {0.1, 0.3, 0.7}} {
		pts := lattice(5, 4, 6, scale)
		rng.Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
		fs := []affine{randomAffine(rng), randomAffine(rng), randomAffine(rng)}
		l, err := NewLinear(pts, sampleValues(pts, fs))
		if err != nil {
			t.Fatal(err)
		}
		checkDelaunay(t, l)
		hi := vec3{4 * scale[0], 3 * scale[1], 5 * scale[2]}
		// The tetrahedra tile the box (cubes may be cut in 5 or 6).
		if got, want := totalVolume(l), hi[0]*hi[1]*hi[2]; math.Abs(got-want) > 1e-12*want {
			t.Errorf("volume = %v, want %v", got, want)
		}
		for i := 0; i < 2000; i++ {
			x := []float64{rng.Float64() * hi[0], rng.Float64() * hi[1], rng.Float64() * hi[2]}
			if i%4 == 0 { // snap a coordinate to a lattice plane
				d := rng.Intn(3)
				x[d] = math.Round(x[d]/scale[d]) * scale[d]
			}
			checkAffine(t, l, fs, x)
		}
		for _, p := range pts {
			checkAffine(t, l, fs, p)
		}
		out := make([]float64, 3)
		for _, x := range [][]float64{{-0.01 * scale[0], 0, 0}, {hi[0], hi[1], hi[2] * 1.001}, {hi[0] / 2, -1e-12, hi[2] / 2}} {
			if l.At(x, out) {
				t.Errorf("At(%v) = true outside the lattice", x)
			}
		}
	}
}

// TestProductGrid mimics the job-model data: an irregular 2-D set of
// (nodes, replicas) pairs times a geometric set of batch sizes, with
// queries at integer node and replica counts (on many cell faces).
func TestProductGrid(t *testing.T) {
	pts := pollLikePoints()
	rng := rand.New(rand.NewSource(4))
	fs := []affine{randomAffine(rng), randomAffine(rng)}
	l, err := NewLinear(pts, sampleValues(pts, fs))
	if err != nil {
		t.Fatal(err)
	}
	checkDelaunay(t, l)
	out := make([]float64, 2)
	for n := 1; n <= 16; n++ {
		for r := n; r <= 4*n; r++ {
			for _, b := range []float64{32, 33, 100.5, 1024, 1024.5} {
				x := []float64{float64(n), float64(r), b}
				if b > 1024 {
					if l.At(x, out) {
						t.Fatalf("At(%v) = true above the largest batch size", x)
					}
					continue
				}
				checkAffine(t, l, fs, x)
			}
		}
	}
}

func pollLikePoints() [][]float64 {
	var nr [][2]float64
	for n := 1; n <= 4; n++ {
		for r := n; r <= 4*n; r++ {
			nr = append(nr, [2]float64{float64(n), float64(r)})
		}
	}
	for _, n := range []int{6, 8, 12, 16} {
		for _, f := range []float64{1, 1.25, 1.5, 2, 3, 4} {
			nr = append(nr, [2]float64{float64(n), math.Round(float64(n) * f)})
		}
	}
	var pts [][]float64
	for _, p := range nr {
		for _, b := range []float64{32, 45, 64, 91, 129, 182, 257, 363, 513, 725, 1024} {
			pts = append(pts, []float64{p[0], p[1], b})
		}
	}
	return pts
}

func TestDuplicatesKeepFirst(t *testing.T) {
	negZero := math.Copysign(0, -1)
	pts := [][]float64{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 0}, {0, 0, 0}, {negZero, 0, negZero}, {1, 1, 1}}
	vals := [][]float64{{0}, {1}, {2}, {3}, {100}, {200}, {300}, {4}}
	l, err := NewLinear(pts, vals)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.NumPoints(); got != 5 {
		t.Errorf("NumPoints() = %d, want 5", got)
	}
	out := make([]float64, 1)
	for _, c := range []struct {
		x    []float64
		want float64
	}{{[]float64{0, 0, 0}, 0}, {[]float64{1, 0, 0}, 1}, {[]float64{0.5, 0, 0}, 0.5}, {[]float64{1, 1, 1}, 4}} {
		if !l.At(c.x, out) || math.Abs(out[0]-c.want) > 1e-15 {
			t.Errorf("At(%v) = %v, want %v", c.x, out[0], c.want)
		}
	}
	// Duplicates only: not enough distinct points.
	if _, err := NewLinear([][]float64{{0, 0, 0}, {0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 0, 0}}, [][]float64{{0}, {0}, {0}, {0}, {0}}); !errors.Is(err, ErrDegenerate) {
		t.Errorf("NewLinear(3 distinct points) error = %v, want ErrDegenerate", err)
	}
}

func TestNewLinearErrors(t *testing.T) {
	tet := [][]float64{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	one := [][]float64{{0}, {0}, {0}, {0}}
	with := func(i int, p []float64) [][]float64 {
		c := append([][]float64{}, tet...)
		c[i] = p
		return c
	}
	cases := []struct {
		name       string
		pts, vals  [][]float64
		degenerate bool
	}{
		{name: "empty", degenerate: true},
		{name: "length mismatch", pts: tet, vals: one[:3]},
		{name: "2-D point", pts: with(2, []float64{0, 1}), vals: one},
		{name: "4-D point", pts: with(2, []float64{0, 1, 0, 0}), vals: one},
		{name: "NaN coordinate", pts: with(1, []float64{math.NaN(), 0, 0}), vals: one},
		{name: "Inf coordinate", pts: with(1, []float64{0, math.Inf(-1), 0}), vals: one},
		{name: "huge coordinate", pts: with(1, []float64{0, 1e300, 0}), vals: one},
		{name: "NaN value", pts: tet, vals: [][]float64{{0}, {math.NaN()}, {0}, {0}}},
		{name: "ragged values", pts: tet, vals: [][]float64{{0}, {0, 1}, {0}, {0}}},
		{name: "no values", pts: tet, vals: [][]float64{{}, {}, {}, {}}},
		{name: "three points", pts: tet[:3], vals: one[:3], degenerate: true},
		{name: "collinear", pts: [][]float64{{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {-1, -1, -1}}, vals: append(one, []float64{0}), degenerate: true},
		{name: "coplanar", pts: lattice(3, 3, 1, vec3{1, 1, 1}), vals: make([][]float64, 9), degenerate: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "coplanar" {
				for i := range c.vals {
					c.vals[i] = []float64{1}
				}
			}
			l, err := NewLinear(c.pts, c.vals)
			if err == nil {
				t.Fatalf("NewLinear() = %v, want an error", l)
			}
			if got := errors.Is(err, ErrDegenerate); got != c.degenerate {
				t.Errorf("errors.Is(%v, ErrDegenerate) = %v, want %v", err, got, c.degenerate)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	pts := pollLikePoints()
	vals := sampleValues(pts, []affine{{1, vec3{1, 2, 3}}})
	a, err := NewLinear(pts, vals)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewLinear(pts, vals)
	if a.NumSimplices() != b.NumSimplices() {
		t.Fatalf("NumSimplices differ: %d vs %d", a.NumSimplices(), b.NumSimplices())
	}
	for i := 0; i < a.NumSimplices(); i++ {
		if a.Simplex(i) != b.Simplex(i) {
			t.Fatalf("simplex %d differs: %v vs %v", i, a.Simplex(i), b.Simplex(i))
		}
	}
}

func TestConcurrentAt(t *testing.T) {
	pts := pollLikePoints()
	fs := []affine{{1, vec3{1, 2, 0.01}}}
	l, err := NewLinear(pts, sampleValues(pts, fs))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			out := make([]float64, 1)
			for i := 0; i < 2000; i++ {
				x := randomInside(rng, pts)
				if ok := l.At(x, out); !ok || math.Abs(out[0]-fs[0].at(x)) > 1e-9*(1+math.Abs(fs[0].at(x))) {
					t.Errorf("At(%v) = %v, %v, want %v", x, out[0], ok, fs[0].at(x))
					return
				}
			}
		}(int64(g))
	}
	wg.Wait()
}

// FuzzLinear builds interpolants from arbitrary small point sets (coarse
// integer coordinates make degeneracies likely) and checks that nothing
// panics and that affine data is reproduced inside the hull.
func FuzzLinear(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 3, 5, 7}, 1.0)
	f.Add([]byte{0, 0, 0, 2, 0, 0, 0, 2, 0, 2, 2, 0, 0, 0, 2, 2, 0, 2, 0, 2, 2, 2, 2, 2, 1, 1, 1}, 1e3)
	f.Add([]byte{1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3}, -0.5)
	f.Fuzz(func(t *testing.T, data []byte, yscale float64) {
		if len(data) < 3 || len(data) > 3*64+3 {
			return
		}
		n := len(data)/3 - 1
		pts := make([][]float64, n)
		for i := range pts {
			b := data[3*i : 3*i+3]
			pts[i] = []float64{float64(b[0] % 8), float64(b[1]%8) * yscale, float64(b[2]) / 16}
		}
		q := data[3*n : 3*n+3]
		fs := []affine{{1, vec3{0.5, -2, 3}}}
		l, err := NewLinear(pts, sampleValues(pts, fs))
		if err != nil {
			return
		}
		scale := 1.0 // of the values involved
		for _, p := range pts {
			scale = max(scale, math.Abs(fs[0].at(p)))
		}
		out := make([]float64, 1)
		x := []float64{float64(q[0]%8) - 0.5, float64(q[1]%8)*yscale + 0.25, float64(q[2]) / 16}
		l.At(x, out)
		rng := rand.New(rand.NewSource(int64(len(data))))
		for i := 0; i < 10; i++ {
			x := randomInside(rng, pts)
			if !l.At(x, out) {
				// Rounding can put a convex combination just outside a
				// thin hull; only a point truly inside must be found.
				if !outsideHull(pts, hullPlanes(pts), x) {
					t.Fatalf("At(%v) = false inside the hull", x)
				}
				continue
			}
			if want := fs[0].at(x); math.Abs(out[0]-want) > 1e-9*scale {
				t.Fatalf("At(%v) = %v, want %v", x, out[0], want)
			}
		}
	})
}

func BenchmarkLinearAt(b *testing.B) {
	pts := pollLikePoints()
	l, err := NewLinear(pts, sampleValues(pts, []affine{{1, vec3{1, 2, 0.01}}, {0.5, vec3{0.1, 0.2, 0}}}))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewSource(5))
	queries := make([][]float64, 1024)
	for i := range queries {
		n := 5 + rng.Intn(12)
		r := n + rng.Intn(3*n+1)
		queries[i] = []float64{float64(n), float64(r), 32 + float64(rng.Intn(993))}
	}
	out := make([]float64, 2)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.At(queries[i&1023], out)
	}
}

func BenchmarkNewLinear(b *testing.B) {
	pts := pollLikePoints()
	vals := sampleValues(pts, []affine{{1, vec3{1, 2, 0.01}}})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := NewLinear(pts, vals); err != nil {
			b.Fatal(err)
		}
	}
}
