package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

func TestSeriesStyles(t *testing.T) {
	// Colour is never the only cue: the first eight series differ in
	// colour, dash pattern and marker, so that two algorithms told apart
	// by red against green alone cannot happen.
	seen := map[string]int{}
	for i := range 8 {
		s := Series(i)
		for _, key := range []string{"colour " + s.Hex(), "dashes " + fmt.Sprint(s.Dashes), "dash name " + s.DashName, "marker " + s.Marker} {
			if j, ok := seen[key]; ok {
				t.Errorf("series %d and %d share %s", j, i, key)
			}
			seen[key] = i
		}
		if s.Describe() == "" || !strings.Contains(s.Describe(), s.ColorName) {
			t.Errorf("series %d: Describe() = %q", i, s.Describe())
		}
	}
	if got := Series(0).Hex(); got != "#0072B2" {
		t.Errorf("first series colour %s, want Okabe-Ito blue #0072B2", got)
	}
	// Past eight, colours repeat but no two of the first 64 series look
	// the same.
	looks := map[string]int{}
	for i := range 64 {
		s := Series(i)
		key := fmt.Sprint(s.Hex(), s.Dashes, s.Marker)
		if j, ok := looks[key]; ok {
			t.Errorf("series %d looks like series %d: %s", i, j, key)
		}
		looks[key] = i
	}
	if s := Series(-1); s.Hex() != Series(0).Hex() {
		t.Errorf("Series(-1) = %+v, want the first style", s)
	}
}

func TestPlotUsesPalette(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.svg")
	runs := []*Run{syntheticRun("a", 1, 20, 8, false), syntheticRun("b", 1, 20, 8, true), syntheticRun("c", 2, 20, 8, true)}
	if err := Plot(path, runs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	for i := range runs {
		s := Series(i)
		if !strings.Contains(svg, "stroke:"+s.Hex()) {
			t.Errorf("no line in series %d's colour %s", i, s.Hex())
		}
	}
	for _, dash := range []string{"stroke-dasharray:8,3", "stroke-dasharray:2,2"} {
		if !strings.Contains(svg, dash) {
			t.Errorf("no %s in the figure", dash)
		}
	}
}

func TestCDFMarkers(t *testing.T) {
	for _, tc := range []struct{ jobs, want int }{{0, 0}, {1, 1}, {3, 3}, {100, markersPerLine}} {
		line := cdfLine(tc.jobs)
		got := cdfMarkers(line, 0, 3)
		if len(got) != tc.want {
			t.Errorf("%d jobs: %d markers, want %d", tc.jobs, len(got), tc.want)
		}
	}
	// Lines that coincide get their markers at different places.
	line := cdfLine(100)
	a, b := cdfMarkers(line, 0, 2), cdfMarkers(line, 1, 2)
	for k := range a {
		if a[k] == b[k] {
			t.Errorf("marker %d of two lines on the same point %v", k, a[k])
		}
	}
}

// cdfLine is a CDF line of jobs completed one an hour.
func cdfLine(jobs int) plotter.XYs {
	pts := plotter.XYs{{X: 1, Y: 0}}
	for k := range jobs {
		pts = append(pts, plotter.XY{X: float64(k + 1), Y: float64(k+1) / float64(jobs)})
	}
	return pts
}
