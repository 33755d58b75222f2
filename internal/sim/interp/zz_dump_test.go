package interp

import (
	"bufio"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func readFloats(t *testing.T, path string) [][]float64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r []float64
		for _, s := range strings.Fields(sc.Text()) {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			r = append(r, v)
		}
		rows = append(rows, r)
	}
	return rows
}

func TestZZScipyDump(t *testing.T) {
	dir := os.Getenv("INTERP_SCIPY_DUMP")
	if dir == "" {
		t.Skip("INTERP_SCIPY_DUMP not set")
	}
	for _, app := range []string{"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"} {
		rows := readFloats(t, dir+"/"+app+".points")
		var pts, vals [][]float64
		for _, r := range rows {
			pts = append(pts, r[:3])
			vals = append(vals, r[3:])
		}
		switch os.Getenv("INTERP_ORDER") {
		case "reverse":
			for i, j := 0, len(pts)-1; i < j; i, j = i+1, j-1 {
				pts[i], pts[j] = pts[j], pts[i]
				vals[i], vals[j] = vals[j], vals[i]
			}
		case "lift":
			idx := make([]int, len(pts))
			for i := range idx {
				idx[i] = i
			}
			lift := func(p []float64) float64 { return p[0]*p[0] + p[1]*p[1] + p[2]*p[2] }
			sort.SliceStable(idx, func(a, b int) bool { return lift(pts[idx[a]]) > lift(pts[idx[b]]) })
			var p2, v2 [][]float64
			for _, i := range idx {
				p2 = append(p2, pts[i])
				v2 = append(v2, vals[i])
			}
			pts, vals = p2, v2
		case "shuffle":
			rng := rand.New(rand.NewSource(int64(len(os.Getenv("INTERP_SEED")))))
			rng.Shuffle(len(pts), func(i, j int) {
				pts[i], pts[j] = pts[j], pts[i]
				vals[i], vals[j] = vals[j], vals[i]
			})
		}
		t0 := time.Now()
		l, err := NewLinear(pts, vals)
		if err != nil {
			t.Fatal(err)
		}
		build := time.Since(t0)
		for _, kind := range []string{"queries", "outside"} {
			q := readFloats(t, dir+"/"+app+"."+kind)
			var nu int
			var maxU [2]float64
			var n, sNaN, bothNaN, onlyScipy, onlyUs int
			var maxRel, sumRel [2]float64
			var rels [2][]float64
			var worst [2][]float64
			out := make([]float64, 2)
			for _, r := range q {
				ok := l.At(r[:3], out)
				sn := math.IsNaN(r[3])
				if sn {
					sNaN++
				}
				switch {
				case sn && !ok:
					bothNaN++
				case sn && ok:
					onlyUs++
				case !sn && !ok:
					onlyScipy++
				default:
					n++
					if tt, in := l.walkExact(&arena{}, &vec3{r[0], r[1], r[2]}, 0); in && unambiguous(l, tt) {
						nu++
						for j := 0; j < 2; j++ {
							maxU[j] = max(maxU[j], math.Abs(out[j]-r[3+j])/math.Abs(r[3+j]))
						}
					}
					for j := 0; j < 2; j++ {
						rel := math.Abs(out[j]-r[3+j]) / math.Abs(r[3+j])
						rels[j] = append(rels[j], rel)
						sumRel[j] += rel
						if rel > maxRel[j] {
							maxRel[j] = rel
							worst[j] = append(append([]float64{}, r...), out[j])
						}
					}
				}
			}
			for j := 0; j < 2; j++ {
				if len(rels[j]) == 0 {
					continue
				}
				sort.Float64s(rels[j])
				exact := sort.SearchFloat64s(rels[j], 1e-9)


				t.Logf("%s %s value %d: n=%d exact(<=1e-9)=%.1f%% p50=%.3g p90=%.3g p99=%.3g max=%.3g mean=%.3g", app, kind, j, len(rels[j]), 100*float64(exact)/float64(len(rels[j])),
					rels[j][len(rels[j])/2], rels[j][len(rels[j])*9/10], rels[j][len(rels[j])*99/100], rels[j][len(rels[j])-1], sumRel[j]/float64(len(rels[j])))
			}
			t.Logf("%-11s %-7s build=%v simplices=%d(scipy?) n=%d scipyNaN=%d bothNaN=%d scipyNaN-we-value=%d scipyValue-we-out=%d step max=%.3g mean=%.3g sync max=%.3g mean=%.3g worst=%v / %v unambiguous=%d maxrel=%.3g/%.3g",
				app, kind, build, l.NumSimplices(), len(q), sNaN, bothNaN, onlyUs, onlyScipy,
				maxRel[0], sumRel[0]/float64(max(n, 1)), maxRel[1], sumRel[1]/float64(max(n, 1)), worst[0], worst[1], nu, maxU[0], maxU[1])
		}
	}
}

func unambiguous(l *Linear, t int32) bool {
	var ar arena
	v := l.tets[t]
	for i, n := range l.nbrs[t] {
		if n == noTet {
			continue
		}
		// vertex of n not in t
		for _, w := range l.tets[n] {
			if w != v[0] && w != v[1] && w != v[2] && w != v[3] {
				if insphere(&ar, &l.pts[v[0]], &l.pts[v[1]], &l.pts[v[2]], &l.pts[v[3]], &l.pts[w]) == 0 {
					return false
				}
			}
		}
		_ = i
	}
	return true
}

func TestZZGoldenCandidates(t *testing.T) {
	dir := os.Getenv("INTERP_SCIPY_DUMP")
	if dir == "" {
		t.Skip("INTERP_SCIPY_DUMP not set")
	}
	for _, app := range []string{"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"} {
		rows := readFloats(t, dir+"/"+app+".points")
		var pts, vals [][]float64
		isPt := map[[3]float64]bool{}
		for _, r := range rows {
			pts = append(pts, r[:3])
			vals = append(vals, r[3:])
			isPt[[3]float64{r[0], r[1], r[2]}] = true
		}
		l, _ := NewLinear(pts, vals)
		q := readFloats(t, dir+"/"+app+".queries")
		rng := rand.New(rand.NewSource(7))
		rng.Shuffle(len(q), func(i, j int) { q[i], q[j] = q[j], q[i] })
		nInt, nEdge := 0, 0
		out := make([]float64, 2)
		for _, r := range q {
			if math.IsNaN(r[3]) || !l.At(r[:3], out) {
				continue
			}
			if math.Abs(out[0]-r[3]) > 1e-12*math.Abs(r[3]) || math.Abs(out[1]-r[4]) > 1e-12*math.Abs(r[4]) {
				continue
			}
			tt, _ := l.walkExact(&arena{}, &vec3{r[0], r[1], r[2]}, 0)
			tr := l.tr[tt]
			d := [3]float64{r[0] - tr[9], r[1] - tr[10], r[2] - tr[11]}
			c0 := tr[0]*d[0] + tr[1]*d[1] + tr[2]*d[2]
			c1 := tr[3]*d[0] + tr[4]*d[1] + tr[5]*d[2]
			c2 := tr[6]*d[0] + tr[7]*d[1] + tr[8]*d[2]
			mn := min(c0, c1, c2, 1-c0-c1-c2)
			if unambiguous(l, tt) && mn > 0.02 && nInt < 3 && r[2] != math.Trunc(r[2]) {
				nInt++
				fmt.Printf("{%q, %v, %v, %v, %v, %v}, // interior\n", app, r[0], r[1], r[2], r[3], r[4])
			}
			// vertical edge: both grid neighbours in bsz are data points
			if nEdge < 2 && r[2] != math.Trunc(r[2]) && isPt[[3]float64{r[0], r[1], math.Floor(r[2])}] {
				lo, hi := -1.0, -1.0
				for _, p := range pts {
					if p[0] == r[0] && p[1] == r[1] {
						if p[2] < r[2] && p[2] > lo {
							lo = p[2]
						}
						if p[2] > r[2] && (hi < 0 || p[2] < hi) {
							hi = p[2]
						}
					}
				}
				if lo > 0 && hi > 0 {
					nEdge++
					fmt.Printf("{%q, %v, %v, %v, %v, %v}, // edge %v-%v\n", app, r[0], r[1], r[2], r[3], r[4], lo, hi)
				}
			}
		}
	}
}

func TestZZLoaderMatchesPandas(t *testing.T) {
	dir := os.Getenv("INTERP_SCIPY_DUMP")
	if dir == "" {
		t.Skip()
	}
	traces := polluxTraces(t)
	for _, app := range polluxApps {
		pts, vals := polluxPoints(t, traces, app)
		rows := readFloats(t, dir+"/"+app+".points")
		if len(rows) != len(pts) {
			t.Fatalf("%s: %d vs %d", app, len(rows), len(pts))
		}
		diff := 0
		maxd := 0.0
		for i, r := range rows {
			for k := 0; k < 3; k++ {
				if r[k] != pts[i][k] {
					t.Fatalf("%s row %d: %v vs %v", app, i, r, pts[i])
				}
			}
			if r[3] != vals[i][0] || r[4] != vals[i][1] {
				diff++
				for j := 0; j < 2; j++ {
					maxd = max(maxd, math.Abs(r[3+j]-vals[i][j])/math.Abs(r[3+j]))
				}
			}
		}
		t.Logf("%s: %d rows, %d value rows differ in the last bits, max rel %.3g", app, len(rows), diff, maxd)
	}
}
