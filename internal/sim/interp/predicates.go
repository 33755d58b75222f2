package interp

import (
	"math"
	"sync"
)

// Robust geometric predicates after J. R. Shewchuk, "Adaptive Precision
// Floating-Point Arithmetic and Fast Robust Geometric Predicates" (1997).
//
// Each predicate first evaluates its determinant in float64 and accepts the
// sign when it exceeds Shewchuk's forward error bound. Otherwise the
// determinant is re-evaluated exactly with floating-point expansions (sums of
// non-overlapping float64 components). The input points of this package lie
// on grids, so exactly-degenerate (coplanar, cospherical) cases are common and
// the exact stage matters; for small integer coordinates its expansions stay
// one or two components long, which keeps it cheap.
//
// The results are exact as long as no intermediate product overflows or
// underflows, which NewLinear guarantees by bounding the input magnitudes.

// epsilon is half an ulp of 1 (2^-53), the unit roundoff of float64.
const epsilon = 1.0 / (1 << 53)

var (
	o3dErrBoundA = (7.0 + 56.0*epsilon) * epsilon
	ispErrBoundA = (16.0 + 224.0*epsilon) * epsilon
)

// vec3 is a point in R^3.
type vec3 = [3]float64

// arena hands out scratch space for expansions so that the exact stage does
// not allocate once warmed up. An arena is used by one goroutine at a time.
type arena struct {
	buf []float64
	off int
}

// alloc returns a zero-length slice with capacity n.
func (a *arena) alloc(n int) []float64 {
	if a.off+n > len(a.buf) {
		size := 2 * len(a.buf)
		if size < 4*n {
			size = 4 * n
		}
		if size < 1024 {
			size = 1024
		}
		a.buf = make([]float64, size)
		a.off = 0
	}
	s := a.buf[a.off : a.off : a.off+n]
	a.off += n
	return s
}

var arenaPool = sync.Pool{New: func() any { return &arena{} }}

// twoSum returns x = fl(a+b) and the exact roundoff y, a+b = x+y.
func twoSum(a, b float64) (x, y float64) {
	x = a + b
	bv := x - a
	av := x - bv
	br := b - bv
	ar := a - av
	y = ar + br
	return
}

// twoDiff returns x = fl(a-b) and the exact roundoff y, a-b = x+y.
func twoDiff(a, b float64) (x, y float64) {
	x = a - b
	bv := a - x
	av := x + bv
	br := bv - b
	ar := a - av
	y = ar + br
	return
}

// fastTwoSum is twoSum for |a| >= |b|.
func fastTwoSum(a, b float64) (x, y float64) {
	x = a + b
	bv := x - a
	y = b - bv
	return
}

// twoProduct returns x = fl(a*b) and the exact roundoff y, a*b = x+y. The
// conversion keeps the compiler from fusing the product into a later sum.
func twoProduct(a, b float64) (x, y float64) {
	x = float64(a * b)
	y = math.FMA(a, b, -x)
	return
}

// expDiff returns the exact difference a-b as an expansion.
func (ar *arena) expDiff(a, b float64) []float64 {
	h := ar.alloc(2)
	x, y := twoDiff(a, b)
	if y != 0 {
		h = append(h, y)
	}
	if x != 0 || len(h) == 0 {
		h = append(h, x)
	}
	return h
}

// growExpansion returns e+b (Shewchuk's GROW-EXPANSION with zero
// elimination). e must be non-overlapping with components in increasing
// magnitude; so is the result.
func (ar *arena) growExpansion(e []float64, b float64) []float64 {
	h := ar.alloc(len(e) + 1)
	q := b
	for _, c := range e {
		var hh float64
		q, hh = twoSum(q, c)
		if hh != 0 {
			h = append(h, hh)
		}
	}
	if q != 0 || len(h) == 0 {
		h = append(h, q)
	}
	return h
}

// sum returns e+f.
func (ar *arena) sum(e, f []float64) []float64 {
	if len(f) > len(e) {
		e, f = f, e
	}
	h := e
	for _, c := range f {
		if c != 0 {
			h = ar.growExpansion(h, c)
		}
	}
	return h
}

// neg returns -e.
func (ar *arena) neg(e []float64) []float64 {
	h := ar.alloc(len(e))
	for _, c := range e {
		h = append(h, -c)
	}
	return h
}

// diff returns e-f.
func (ar *arena) diff(e, f []float64) []float64 { return ar.sum(e, ar.neg(f)) }

// scale returns e*b (Shewchuk's SCALE-EXPANSION with zero elimination).
func (ar *arena) scale(e []float64, b float64) []float64 {
	h := ar.alloc(2 * len(e))
	q, hh := twoProduct(e[0], b)
	if hh != 0 {
		h = append(h, hh)
	}
	for _, c := range e[1:] {
		p1, p0 := twoProduct(c, b)
		var s float64
		s, hh = twoSum(q, p0)
		if hh != 0 {
			h = append(h, hh)
		}
		q, hh = fastTwoSum(p1, s)
		if hh != 0 {
			h = append(h, hh)
		}
	}
	if q != 0 || len(h) == 0 {
		h = append(h, q)
	}
	return h
}

// mul returns e*f.
func (ar *arena) mul(e, f []float64) []float64 {
	if len(f) > len(e) {
		e, f = f, e
	}
	var h []float64
	for _, c := range f {
		if c == 0 {
			continue
		}
		p := ar.scale(e, c)
		if h == nil {
			h = p
		} else {
			h = ar.sum(h, p)
		}
	}
	if h == nil {
		h = append(ar.alloc(1), 0)
	}
	return h
}

// sign returns the sign of an expansion: that of its largest component.
func sign(e []float64) int {
	for i := len(e) - 1; i >= 0; i-- {
		switch {
		case e[i] > 0:
			return 1
		case e[i] < 0:
			return -1
		}
	}
	return 0
}

func signOf(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// orient3d returns the sign of det[a-d; b-d; c-d]: positive when d lies below
// the plane through a, b, c, where a, b, c appear counterclockwise seen from
// above (Shewchuk's convention). ar may be nil; the exact stage then takes
// an arena from a pool.
func orient3d(ar *arena, a, b, c, d *vec3) int {
	adx, bdx, cdx := a[0]-d[0], b[0]-d[0], c[0]-d[0]
	ady, bdy, cdy := a[1]-d[1], b[1]-d[1], c[1]-d[1]
	adz, bdz, cdz := a[2]-d[2], b[2]-d[2], c[2]-d[2]

	bdxcdy := bdx * cdy
	cdxbdy := cdx * bdy
	cdxady := cdx * ady
	adxcdy := adx * cdy
	adxbdy := adx * bdy
	bdxady := bdx * ady

	det := adz*(bdxcdy-cdxbdy) + bdz*(cdxady-adxcdy) + cdz*(adxbdy-bdxady)
	permanent := (math.Abs(bdxcdy)+math.Abs(cdxbdy))*math.Abs(adz) +
		(math.Abs(cdxady)+math.Abs(adxcdy))*math.Abs(bdz) +
		(math.Abs(adxbdy)+math.Abs(bdxady))*math.Abs(cdz)
	errBound := o3dErrBoundA * permanent
	if det > errBound || -det > errBound {
		return signOf(det)
	}
	if s, ok := orient3dInt(a, b, c, d); ok {
		return s
	}
	if ar == nil {
		ar = arenaPool.Get().(*arena)
		defer arenaPool.Put(ar)
	}
	return orient3dExact(ar, a, b, c, d)
}

func orient3dExact(ar *arena, a, b, c, d *vec3) int {
	mark := ar.off
	defer func() { ar.off = mark }()
	var ad, bd, cd [3][]float64
	for k := 0; k < 3; k++ {
		ad[k] = ar.expDiff(a[k], d[k])
		bd[k] = ar.expDiff(b[k], d[k])
		cd[k] = ar.expDiff(c[k], d[k])
	}
	return sign(det3(ar, &ad, &bd, &cd))
}

// orient3dValue returns det[a-d; b-d; c-d] (see orient3d) to within about
// one ulp, from its exact expansion.
func orient3dValue(ar *arena, a, b, c, d *vec3) float64 {
	mark := ar.off
	defer func() { ar.off = mark }()
	var ad, bd, cd [3][]float64
	for k := 0; k < 3; k++ {
		ad[k] = ar.expDiff(a[k], d[k])
		bd[k] = ar.expDiff(b[k], d[k])
		cd[k] = ar.expDiff(c[k], d[k])
	}
	var sum float64
	for _, x := range det3(ar, &ad, &bd, &cd) {
		sum += x
	}
	return sum
}

// det3 returns the exact determinant of the 3x3 matrix with rows r0, r1, r2.
func det3(ar *arena, r0, r1, r2 *[3][]float64) []float64 {
	m0 := ar.diff(ar.mul(r1[0], r2[1]), ar.mul(r2[0], r1[1]))
	m1 := ar.diff(ar.mul(r2[0], r0[1]), ar.mul(r0[0], r2[1]))
	m2 := ar.diff(ar.mul(r0[0], r1[1]), ar.mul(r1[0], r0[1]))
	s := ar.sum(ar.mul(r0[2], m0), ar.mul(r1[2], m1))
	return ar.sum(s, ar.mul(r2[2], m2))
}

// insphere returns a positive value when e lies inside the sphere through a,
// b, c, d, negative when outside and zero when on it, provided that
// orient3d(a, b, c, d) > 0 (the sign is reversed otherwise).
func insphere(ar *arena, a, b, c, d, e *vec3) int {
	aex, bex, cex, dex := a[0]-e[0], b[0]-e[0], c[0]-e[0], d[0]-e[0]
	aey, bey, cey, dey := a[1]-e[1], b[1]-e[1], c[1]-e[1], d[1]-e[1]
	aez, bez, cez, dez := a[2]-e[2], b[2]-e[2], c[2]-e[2], d[2]-e[2]

	aexbey := aex * bey
	bexaey := bex * aey
	ab := aexbey - bexaey
	bexcey := bex * cey
	cexbey := cex * bey
	bc := bexcey - cexbey
	cexdey := cex * dey
	dexcey := dex * cey
	cd := cexdey - dexcey
	dexaey := dex * aey
	aexdey := aex * dey
	da := dexaey - aexdey
	aexcey := aex * cey
	cexaey := cex * aey
	ac := aexcey - cexaey
	bexdey := bex * dey
	dexbey := dex * bey
	bd := bexdey - dexbey

	abc := aez*bc - bez*ac + cez*ab
	bcd := bez*cd - cez*bd + dez*bc
	cda := cez*da + dez*ac + aez*cd
	dab := dez*ab + aez*bd + bez*da

	alift := aex*aex + aey*aey + aez*aez
	blift := bex*bex + bey*bey + bez*bez
	clift := cex*cex + cey*cey + cez*cez
	dlift := dex*dex + dey*dey + dez*dez

	det := (dlift*abc - clift*dab) + (blift*cda - alift*bcd)

	aezp, bezp, cezp, dezp := math.Abs(aez), math.Abs(bez), math.Abs(cez), math.Abs(dez)
	aexbeyp, bexaeyp := math.Abs(aexbey), math.Abs(bexaey)
	bexceyp, cexbeyp := math.Abs(bexcey), math.Abs(cexbey)
	cexdeyp, dexceyp := math.Abs(cexdey), math.Abs(dexcey)
	dexaeyp, aexdeyp := math.Abs(dexaey), math.Abs(aexdey)
	aexceyp, cexaeyp := math.Abs(aexcey), math.Abs(cexaey)
	bexdeyp, dexbeyp := math.Abs(bexdey), math.Abs(dexbey)
	permanent := ((cexdeyp+dexceyp)*bezp+(dexbeyp+bexdeyp)*cezp+(bexceyp+cexbeyp)*dezp)*alift +
		((dexaeyp+aexdeyp)*cezp+(aexceyp+cexaeyp)*dezp+(cexdeyp+dexceyp)*aezp)*blift +
		((aexbeyp+bexaeyp)*dezp+(bexdeyp+dexbeyp)*aezp+(dexaeyp+aexdeyp)*bezp)*clift +
		((bexceyp+cexbeyp)*aezp+(cexaeyp+aexceyp)*bezp+(aexbeyp+bexaeyp)*cezp)*dlift
	errBound := ispErrBoundA * permanent
	if det > errBound || -det > errBound {
		return signOf(det)
	}
	if s, ok := insphereInt(a, b, c, d, e); ok {
		return s
	}
	return insphereExact(ar, a, b, c, d, e)
}

func insphereExact(ar *arena, a, b, c, d, e *vec3) int {
	mark := ar.off
	defer func() { ar.off = mark }()
	pts := [4]*vec3{a, b, c, d}
	var rows [4][3][]float64
	var lift [4][]float64
	for i, p := range pts {
		for k := 0; k < 3; k++ {
			rows[i][k] = ar.expDiff(p[k], e[k])
		}
		l := ar.mul(rows[i][0], rows[i][0])
		l = ar.sum(l, ar.mul(rows[i][1], rows[i][1]))
		lift[i] = ar.sum(l, ar.mul(rows[i][2], rows[i][2]))
	}
	// Expand the 4x4 determinant [rows | lift] along the lift column:
	// det = -alift*bcd + blift*cda - clift*dab + dlift*abc, where xyz is
	// det3 of rows x, y, z (Shewchuk's cda and dab carry the cyclic signs).
	abc := det3(ar, &rows[0], &rows[1], &rows[2])
	bcd := det3(ar, &rows[1], &rows[2], &rows[3])
	cda := det3(ar, &rows[2], &rows[3], &rows[0])
	dab := det3(ar, &rows[3], &rows[0], &rows[1])
	det := ar.diff(ar.mul(lift[3], abc), ar.mul(lift[2], dab))
	det = ar.sum(det, ar.diff(ar.mul(lift[1], cda), ar.mul(lift[0], bcd)))
	return sign(det)
}

// orient2dExact returns the exact sign of det[a-c; b-c] for 2-D points.
func orient2dExact(ar *arena, ax, ay, bx, by, cx, cy float64) int {
	mark := ar.off
	defer func() { ar.off = mark }()
	acx, acy := ar.expDiff(ax, cx), ar.expDiff(ay, cy)
	bcx, bcy := ar.expDiff(bx, cx), ar.expDiff(by, cy)
	return sign(ar.diff(ar.mul(acx, bcy), ar.mul(acy, bcx)))
}

// collinear reports whether three points lie on one line (exactly).
func collinear(ar *arena, a, b, c *vec3) bool {
	return orient2dExact(ar, a[0], a[1], b[0], b[1], c[0], c[1]) == 0 &&
		orient2dExact(ar, a[1], a[2], b[1], b[2], c[1], c[2]) == 0 &&
		orient2dExact(ar, a[0], a[2], b[0], b[2], c[0], c[2]) == 0
}
