package interp

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/sim/polluxdata"
)

func polluxTraces(t testing.TB) string { return polluxdata.Traces(t) }

func readCSV(t testing.TB, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows[1:] // header
}

func parseFloat(t testing.TB, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// polluxPoints builds the artifact's point set for one application:
// placements.csv grouped by (num_nodes, num_replicas, local_bsz), sorted by
// those keys, with step_time and sync_time averaged (Kahan-compensated, as
// pandas' groupby mean), followed by the rows of scalability.csv.
func polluxPoints(t testing.TB, traces, app string) (pts, vals [][]float64) {
	t.Helper()
	type acc struct {
		key       vec3
		sum, comp [2]float64
		n         int
	}
	groups := map[vec3]*acc{}
	var order []*acc
	for _, r := range readCSV(t, filepath.Join(traces, app, "placements.csv")) {
		var replicas int
		for _, c := range r[0] {
			replicas += int(c - '0')
		}
		key := vec3{float64(len(r[0])), float64(replicas), parseFloat(t, r[1])}
		g := groups[key]
		if g == nil {
			g = &acc{key: key}
			groups[key] = g
			order = append(order, g)
		}
		g.n++
		for j := 0; j < 2; j++ {
			y := parseFloat(t, r[2+j]) - g.comp[j]
			s := g.sum[j] + y
			g.comp[j] = s - g.sum[j] - y
			g.sum[j] = s
		}
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i].key, order[j].key
		for k := 0; k < 3; k++ {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return false
	})
	for _, g := range order {
		pts = append(pts, []float64{g.key[0], g.key[1], g.key[2]})
		vals = append(vals, []float64{g.sum[0] / float64(g.n), g.sum[1] / float64(g.n)})
	}
	for _, r := range readCSV(t, filepath.Join(traces, app, "scalability.csv")) {
		var row [5]float64
		for j := range row {
			row[j] = parseFloat(t, r[j])
		}
		pts = append(pts, row[:3])
		vals = append(vals, row[3:])
	}
	return pts, vals
}

var polluxApps = []string{"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}

// scipyGolden holds values of scipy 1.10.1's LinearNDInterpolator on the
// artifact's point sets (see polluxPoints), at queries where the Delaunay
// triangulation is unambiguous: inside tetrahedra that are whole Delaunay
// cells, on edges every triangulation shares (between consecutive batch
// sizes of one measured (nodes, replicas) pair), or at data points. NaN
// means scipy found the query outside the convex hull.
var scipyGolden = []struct {
	app                  string
	nodes, replicas, bsz float64
	stepTime, syncTime   float64
}{
	{"bert", 8, 16, 11.87, 1.743648537099361, 0.8727475628280639},
	{"bert", 8, 32, 6.637853731992737, 1.8772011965463353, 1.2865016368749695},
	{"bert", 12, 24, 6, 1.717684984207153, 1.1985280265808105},
	{"cifar10", 11, 41, 513.309446636182, 0.5464839073817471, 0.16580978903948765},
	{"cifar10", 12, 33, 568.8970407030547, 0.5451191132673998, 0.1376936937726394},
	{"cifar10", 11, 28, 650.5018374932004, 0.5866925474689307, 0.12327427308936387},
	{"cifar10", 6, 6, 513.309446636182, 0.37883883702261373, 0.004697384706281572},
	{"cifar10", 16, 64, 1024, math.NaN(), math.NaN()},
	{"cifar10", 5, 4, 100, math.NaN(), math.NaN()},
	{"deepspeech2", 8, 8, 57.830083420228, 1.920191538093924, 0.2444703703748533},
	{"deepspeech2", 13, 21, 57.830083420228, 1.9930822567937845, 0.19205765518849072},
	{"deepspeech2", 10, 36, 43.033680355115315, 1.8118356183715232, 0.373554657205809},
	{"imagenet", 8, 16, 24.5, 0.49629357010126113, 0.32275866527557373},
	{"imagenet", 16, 64, 100.25, 0.7874477142796796, 0.2621577931404113},
	{"imagenet", 12, 24, 20, 0.4089588642120361, 0.2650701736450195},
	{"ncf", 5, 10, 5417.3098752961805, 0.0289874043514341, 0.019345155469197874},
	{"ncf", 13, 26, 6961.3843739994645, 0.0351880214755574, 0.024424891780133347},
	{"ncf", 6, 16, 13003.841726335268, 0.03335771740050993, 0.02098419789511095},
	{"ncf", 16, 64, 32768, math.NaN(), math.NaN()},
	{"yolov3", 12, 48, 6.355562621377041, 1.5324415171745212, 1.0379117274794367},
	{"yolov3", 6, 23, 13.72329222527559, 1.4521339079502897, 0.8752440765819421},
	{"yolov3", 8, 13, 12.374722848196976, 1.241500799383666, 0.787678877215832},
	{"yolov3", 16, 40, 12, math.NaN(), math.NaN()},
}

func TestPolluxMatchesScipy(t *testing.T) {
	traces := polluxTraces(t)
	models := map[string]*Linear{}
	for _, app := range polluxApps {
		pts, vals := polluxPoints(t, traces, app)
		start := time.Now()
		l, err := NewLinear(pts, vals)
		if err != nil {
			t.Fatalf("%s: %v", app, err)
		}
		t.Logf("%s: %d points, %d tetrahedra, built in %v", app, l.NumPoints(), l.NumSimplices(), time.Since(start))
		models[app] = l
		// Data points are reproduced (up to the roundoff of barycentric
		// coordinates, as in scipy).
		out := make([]float64, 2)
		for i, p := range pts {
			ok := l.At(p, out)
			for j := range out {
				if !ok || math.Abs(out[j]-vals[i][j]) > 1e-12*math.Abs(vals[i][j]) {
					t.Errorf("%s: At(%v) = %v, %v, want %v", app, p, out, ok, vals[i])
					break
				}
			}
		}
	}
	for _, g := range scipyGolden {
		x := []float64{g.nodes, g.replicas, g.bsz}
		out := make([]float64, 2)
		ok := models[g.app].At(x, out)
		if math.IsNaN(g.stepTime) {
			if ok {
				t.Errorf("%s At(%v) = %v, scipy: outside the hull (NaN)", g.app, x, out)
			}
			continue
		}
		if !ok {
			t.Errorf("%s At(%v) = outside, scipy: %v %v", g.app, x, g.stepTime, g.syncTime)
			continue
		}
		for j, want := range []float64{g.stepTime, g.syncTime} {
			if math.Abs(out[j]-want) > 1e-6*math.Abs(want) {
				t.Errorf("%s At(%v)[%d] = %.17g, scipy: %.17g", g.app, x, j, out[j], want)
			}
		}
	}
}

func TestPolluxTriangulationIsDelaunay(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: checks every point against every circumsphere")
	}
	traces := polluxTraces(t)
	for _, app := range polluxApps {
		pts, vals := polluxPoints(t, traces, app)
		l, err := NewLinear(pts, vals)
		if err != nil {
			t.Fatalf("%s: %v", app, err)
		}
		checkDelaunay(t, l)
	}
}

func BenchmarkPolluxNewLinear(b *testing.B) {
	traces := polluxTraces(b)
	for _, app := range polluxApps {
		pts, vals := polluxPoints(b, traces, app)
		b.Run(app, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := NewLinear(pts, vals); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPolluxAt evaluates the job model at the kind of queries the
// simulator makes: jobs spread over 5 to 16 nodes with integer batch sizes.
func BenchmarkPolluxAt(b *testing.B) {
	traces := polluxTraces(b)
	for _, app := range polluxApps {
		pts, vals := polluxPoints(b, traces, app)
		l, err := NewLinear(pts, vals)
		if err != nil {
			b.Fatal(err)
		}
		lo, hi := l.lo[2], l.hi[2]
		var queries [][]float64
		for n := 5; n <= 16; n++ {
			for r := n; r <= min(4*n, 64); r += 3 {
				for k := 0; k < 8; k++ {
					queries = append(queries, []float64{float64(n), float64(r), math.Round(lo + (hi-lo)*float64(k)/7)})
				}
			}
		}
		b.Run(app, func(b *testing.B) {
			out := make([]float64, 2)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				l.At(queries[i%len(queries)], out)
			}
		})
	}
}
