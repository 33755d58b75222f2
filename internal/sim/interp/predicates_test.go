package interp

import (
	"math"
	"math/big"
	"math/rand"
	"testing"
)

// The reference predicates below scale every float64 by 2^1100, which makes
// it an integer, and evaluate the determinants exactly with big.Int.

func bigOf(x float64) *big.Int {
	f := new(big.Float).SetFloat64(x)
	f.SetMantExp(f, 1100)
	i, _ := f.Int(nil)
	return i
}

func bigDiff(a, b float64) *big.Int { return new(big.Int).Sub(bigOf(a), bigOf(b)) }

func bigDet3(r [3][3]*big.Int) *big.Int {
	m := func(a, b, c, d *big.Int) *big.Int {
		x := new(big.Int).Mul(a, d)
		return x.Sub(x, new(big.Int).Mul(b, c))
	}
	t0 := new(big.Int).Mul(r[0][0], m(r[1][1], r[1][2], r[2][1], r[2][2]))
	t1 := new(big.Int).Mul(r[0][1], m(r[1][0], r[1][2], r[2][0], r[2][2]))
	t2 := new(big.Int).Mul(r[0][2], m(r[1][0], r[1][1], r[2][0], r[2][1]))
	t0.Sub(t0, t1)
	return t0.Add(t0, t2)
}

func refOrient(a, b, c, d *vec3) int {
	var r [3][3]*big.Int
	for i, p := range [3]*vec3{a, b, c} {
		for k := 0; k < 3; k++ {
			r[i][k] = bigDiff(p[k], d[k])
		}
	}
	return bigDet3(r).Sign()
}

func refInsphere(a, b, c, d, e *vec3) int {
	pts := [4]*vec3{a, b, c, d}
	var rows [4][4]*big.Int
	for i, p := range pts {
		lift := new(big.Int)
		for k := 0; k < 3; k++ {
			rows[i][k] = bigDiff(p[k], e[k])
			lift.Add(lift, new(big.Int).Mul(rows[i][k], rows[i][k]))
		}
		rows[i][3] = lift
	}
	det := new(big.Int)
	for col := 0; col < 4; col++ {
		var minor [3][3]*big.Int
		for i := 1; i < 4; i++ {
			k := 0
			for j := 0; j < 4; j++ {
				if j != col {
					minor[i-1][k] = rows[i][j]
					k++
				}
			}
		}
		term := new(big.Int).Mul(rows[0][col], bigDet3(minor))
		if col%2 == 1 {
			term.Neg(term)
		}
		det.Add(det, term)
	}
	// Shewchuk's insphere is the plain 4x4 determinant of [p-e | |p-e|^2]
	// (positive inside for positively oriented a, b, c, d).
	return det.Sign()
}

// randomHardPoints returns points that are exactly or almost cospherical
// and coplanar, the hard cases for the floating-point filter.
func randomHardPoints(rng *rand.Rand) [5]vec3 {
	var p [5]vec3
	switch rng.Intn(5) {
	case 0: // integer lattices, up to the largest size of the integer path
		span := []int{3, 5, 1 << 20}[rng.Intn(3)]
		for i := range p {
			for k := 0; k < 3; k++ {
				p[i][k] = float64(rng.Intn(span) - span/2)
			}
			if span > 5 && i > 0 && rng.Intn(2) == 0 {
				// Extreme corners make the largest determinants.
				for k := 0; k < 3; k++ {
					p[i][k] = float64(maxSmallInt * (1 - 2*rng.Intn(2)))
				}
			}
		}
	case 1: // points on the unit sphere, perturbed by an ulp or so
		for i := range p {
			v := vec3{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
			n := math.Sqrt(v[0]*v[0] + v[1]*v[1] + v[2]*v[2])
			for k := 0; k < 3; k++ {
				p[i][k] = v[k] / n
			}
		}
	case 2: // points nearly on a plane with large offsets
		for i := range p {
			x, y := rng.Float64(), rng.Float64()
			p[i] = vec3{1e6 + x, 1e6 + y, 1e6 + x + y + float64(rng.Intn(3)-1)*1e-10}
		}
	case 3: // integer grid points on a sphere-like pattern (cospherical)
		for i := range p {
			s := float64(int(1) << rng.Intn(19))
			p[i] = vec3{s * float64(rng.Intn(2)), s * float64(rng.Intn(2)), s * float64(rng.Intn(2))}
		}
	default: // generic, with mixed magnitudes
		for i := range p {
			for k := 0; k < 3; k++ {
				p[i][k] = rng.NormFloat64() * math.Pow(10, float64(rng.Intn(7)-3))
			}
		}
	}
	return p
}

func TestPredicatesMatchBigInt(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var ar arena
	for it := 0; it < 5000; it++ {
		p := randomHardPoints(rng)
		if got, want := orient3d(&ar, &p[0], &p[1], &p[2], &p[3]), refOrient(&p[0], &p[1], &p[2], &p[3]); got != want {
			t.Fatalf("orient3d(%v) = %d, want %d", p[:4], got, want)
		}
		if got, want := orient3dExact(&ar, &p[0], &p[1], &p[2], &p[3]), refOrient(&p[0], &p[1], &p[2], &p[3]); got != want {
			t.Fatalf("orient3dExact(%v) = %d, want %d", p[:4], got, want)
		}
		want := refInsphere(&p[0], &p[1], &p[2], &p[3], &p[4])
		if got := insphere(&ar, &p[0], &p[1], &p[2], &p[3], &p[4]); got != want {
			t.Fatalf("insphere(%v) = %d, want %d", p, got, want)
		}
		if got := insphereExact(&ar, &p[0], &p[1], &p[2], &p[3], &p[4]); got != want {
			t.Fatalf("insphereExact(%v) = %d, want %d", p, got, want)
		}
		if got, ok := insphereInt(&p[0], &p[1], &p[2], &p[3], &p[4]); ok && got != want {
			t.Fatalf("insphereInt(%v) = %d, want %d", p, got, want)
		}
		if got, ok := orient3dInt(&p[0], &p[1], &p[2], &p[3]); ok && got != refOrient(&p[0], &p[1], &p[2], &p[3]) {
			t.Fatalf("orient3dInt(%v) = %d, want %d", p[:4], got, refOrient(&p[0], &p[1], &p[2], &p[3]))
		}
	}
}

func TestPredicateConventions(t *testing.T) {
	var ar arena
	a, b, c := vec3{0, 0, 0}, vec3{1, 0, 0}, vec3{0, 1, 0}
	below, above := vec3{0, 0, -1}, vec3{0, 0, 1}
	if orient3d(&ar, &a, &b, &c, &below) <= 0 || orient3d(&ar, &a, &b, &c, &above) >= 0 {
		t.Fatal("orient3d sign convention")
	}
	centre, far, onSphere := vec3{0.25, 0.25, -0.25}, vec3{5, 5, 5}, vec3{1, 1, 0}
	if insphere(&ar, &a, &b, &c, &below, &centre) <= 0 {
		t.Fatal("insphere: centre not inside")
	}
	if insphere(&ar, &a, &b, &c, &below, &far) >= 0 {
		t.Fatal("insphere: far point not outside")
	}
	if insphere(&ar, &a, &b, &c, &below, &onSphere) != 0 {
		t.Fatal("insphere: cospherical point not on sphere")
	}
}
