package interp

import (
	"math"
	"math/big"
	"math/rand"
	"testing"
)

func ratDet3(r [3][3]*big.Rat) *big.Rat {
	m := func(a, b, c, d *big.Rat) *big.Rat {
		x := new(big.Rat).Mul(a, d)
		return x.Sub(x, new(big.Rat).Mul(b, c))
	}
	t0 := new(big.Rat).Mul(r[0][0], m(r[1][1], r[1][2], r[2][1], r[2][2]))
	t1 := new(big.Rat).Mul(r[0][1], m(r[1][0], r[1][2], r[2][0], r[2][2]))
	t2 := new(big.Rat).Mul(r[0][2], m(r[1][0], r[1][1], r[2][0], r[2][1]))
	t0.Sub(t0, t1)
	return t0.Add(t0, t2)
}

func ratDiff(a, b float64) *big.Rat {
	x := new(big.Rat).SetFloat64(a)
	return x.Sub(x, new(big.Rat).SetFloat64(b))
}

func ratOrient(a, b, c, d *vec3) int {
	var r [3][3]*big.Rat
	for i, p := range [3]*vec3{a, b, c} {
		for k := 0; k < 3; k++ {
			r[i][k] = ratDiff(p[k], d[k])
		}
	}
	return ratDet3(r).Sign()
}

func ratInsphere(a, b, c, d, e *vec3) int {
	pts := [4]*vec3{a, b, c, d}
	var rows [4][4]*big.Rat
	for i, p := range pts {
		lift := new(big.Rat)
		for k := 0; k < 3; k++ {
			rows[i][k] = ratDiff(p[k], e[k])
			lift.Add(lift, new(big.Rat).Mul(rows[i][k], rows[i][k]))
		}
		rows[i][3] = lift
	}
	det := new(big.Rat)
	for col := 0; col < 4; col++ {
		var minor [3][3]*big.Rat
		for i := 1; i < 4; i++ {
			k := 0
			for j := 0; j < 4; j++ {
				if j != col {
					minor[i-1][k] = rows[i][j]
					k++
				}
			}
		}
		term := new(big.Rat).Mul(rows[0][col], ratDet3(minor))
		if col%2 == 1 {
			term.Neg(term)
		}
		det.Add(det, term)
	}
	// Shewchuk's insphere is the plain 4x4 determinant of [p-e | |p-e|^2].
	return det.Sign()
}

// nearlyDegenerate returns points that are exactly or almost cospherical
// and coplanar, the hard cases for the floating-point filter.
func randomHardPoints(rng *rand.Rand) [5]vec3 {
	var p [5]vec3
	switch rng.Intn(4) {
	case 0: // small integer lattice: many exact degeneracies
		for i := range p {
			for k := 0; k < 3; k++ {
				p[i][k] = float64(rng.Intn(3))
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
	default: // generic, with mixed magnitudes
		for i := range p {
			for k := 0; k < 3; k++ {
				p[i][k] = rng.NormFloat64() * math.Pow(10, float64(rng.Intn(7)-3))
			}
		}
	}
	return p
}

func TestPredicatesMatchRational(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var ar arena
	for it := 0; it < 20000; it++ {
		p := randomHardPoints(rng)
		if got, want := orient3d(&ar, &p[0], &p[1], &p[2], &p[3]), ratOrient(&p[0], &p[1], &p[2], &p[3]); got != want {
			t.Fatalf("orient3d(%v) = %d, want %d", p[:4], got, want)
		}
		if got, want := orient3dExact(&ar, &p[0], &p[1], &p[2], &p[3]), ratOrient(&p[0], &p[1], &p[2], &p[3]); got != want {
			t.Fatalf("orient3dExact(%v) = %d, want %d", p[:4], got, want)
		}
		want := ratInsphere(&p[0], &p[1], &p[2], &p[3], &p[4])
		if got := insphere(&ar, &p[0], &p[1], &p[2], &p[3], &p[4]); got != want {
			t.Fatalf("insphere(%v) = %d, want %d", p, got, want)
		}
		if got := insphereExact(&ar, &p[0], &p[1], &p[2], &p[3], &p[4]); got != want {
			t.Fatalf("insphereExact(%v) = %d, want %d", p, got, want)
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
