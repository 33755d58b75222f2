package interp

import (
	"math"
	"math/bits"
)

// Exact predicates for points with small integer coordinates, the common
// case of this package's data (node counts, GPU counts, batch sizes). When
// every coordinate is an integer of magnitude at most 2^19, all differences
// fit in 21 bits, the 3x3 minors in int64 and the insphere terms in 128
// bits, so the determinants can be evaluated exactly with integer
// arithmetic, much faster than with floating-point expansions.

const maxSmallInt = 1 << 19

func smallInt(x float64) bool { return x == math.Trunc(x) && math.Abs(x) <= maxSmallInt }

func smallIntPoint(p *vec3) bool { return smallInt(p[0]) && smallInt(p[1]) && smallInt(p[2]) }

// int128 is a two's complement 128-bit integer.
type int128 struct {
	hi int64
	lo uint64
}

func mul128(a, b int64) int128 {
	neg := (a < 0) != (b < 0)
	ua, ub := uint64(a), uint64(b)
	if a < 0 {
		ua = uint64(-a)
	}
	if b < 0 {
		ub = uint64(-b)
	}
	hi, lo := bits.Mul64(ua, ub)
	r := int128{int64(hi), lo}
	if neg {
		r = r.neg()
	}
	return r
}

func (x int128) neg() int128 {
	lo := ^x.lo + 1
	hi := ^x.hi
	if lo == 0 {
		hi++
	}
	return int128{hi, lo}
}

func (x int128) add(y int128) int128 {
	lo, carry := bits.Add64(x.lo, y.lo, 0)
	return int128{x.hi + y.hi + int64(carry), lo}
}

func (x int128) sign() int {
	switch {
	case x.hi < 0:
		return -1
	case x.hi > 0 || x.lo > 0:
		return 1
	}
	return 0
}

func det3Int(ax, ay, az, bx, by, bz, cx, cy, cz int64) int64 {
	return az*(bx*cy-cx*by) + bz*(cx*ay-ax*cy) + cz*(ax*by-bx*ay)
}

// orient3dInt is orient3d for small-integer points; ok is false when the
// points do not qualify.
func orient3dInt(a, b, c, d *vec3) (s int, ok bool) {
	if !smallIntPoint(a) || !smallIntPoint(b) || !smallIntPoint(c) || !smallIntPoint(d) {
		return 0, false
	}
	det := det3Int(
		int64(a[0]-d[0]), int64(a[1]-d[1]), int64(a[2]-d[2]),
		int64(b[0]-d[0]), int64(b[1]-d[1]), int64(b[2]-d[2]),
		int64(c[0]-d[0]), int64(c[1]-d[1]), int64(c[2]-d[2]))
	switch {
	case det > 0:
		return 1, true
	case det < 0:
		return -1, true
	}
	return 0, true
}

// insphereInt is insphere for small-integer points; ok is false when the
// points do not qualify.
func insphereInt(a, b, c, d, e *vec3) (s int, ok bool) {
	if !smallIntPoint(a) || !smallIntPoint(b) || !smallIntPoint(c) || !smallIntPoint(d) || !smallIntPoint(e) {
		return 0, false
	}
	var r [4][3]int64
	var lift [4]int64
	for i, p := range [4]*vec3{a, b, c, d} {
		for k := 0; k < 3; k++ {
			r[i][k] = int64(p[k] - e[k])
		}
		lift[i] = r[i][0]*r[i][0] + r[i][1]*r[i][1] + r[i][2]*r[i][2]
	}
	d3 := func(i, j, k int) int64 {
		return det3Int(r[i][0], r[i][1], r[i][2], r[j][0], r[j][1], r[j][2], r[k][0], r[k][1], r[k][2])
	}
	// Same expansion as insphereExact: dlift*abc - clift*dab + blift*cda - alift*bcd.
	det := mul128(lift[3], d3(0, 1, 2)).
		add(mul128(lift[2], d3(3, 0, 1)).neg()).
		add(mul128(lift[1], d3(2, 3, 0))).
		add(mul128(lift[0], d3(1, 2, 3)).neg())
	return det.sign(), true
}
