package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// distinctSeries is how many series must differ in colour, dash pattern
// and marker: every algorithm (nine) and a few more.
const distinctSeries = 12

func TestSeriesStyles(t *testing.T) {
	// Colour is never the only cue: the first twelve series differ in
	// colour, dash pattern and marker, so that two algorithms told apart
	// by red against green alone cannot happen.
	seen := map[string]int{}
	for i := range distinctSeries {
		s := Series(i)
		for _, key := range []string{"colour " + s.Hex(), "colour name " + s.ColorName, "dashes " + fmt.Sprint(s.Dashes),
			"dash name " + s.DashName, "marker " + s.Marker} {
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
	// Past twelve, colours repeat but no two of the first 144 series look
	// the same.
	looks := map[string]int{}
	for i := range distinctSeries * distinctSeries {
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

// minSeriesDeltaE is the least CIEDE2000 difference between the colours
// of any two of the first distinctSeries series. 2.3 is about one just
// noticeable difference between large patches of colour; thin lines and
// small markers need several times more to be told apart (Szafir,
// "Modeling Color Difference for Visualization Design", IEEE TVCG 2018).
// 20 is about nine such differences, and just below the closest pair of
// the Okabe-Ito palette (orange and yellow, 21.7), which figures have
// long used for lines told apart by colour.
const minSeriesDeltaE = 20

// minLineContrast is WCAG 2.1's least contrast for graphical objects
// (success criterion 1.4.11), here a line on the figure's white.
const minLineContrast = 3

func TestSeriesColoursReadable(t *testing.T) {
	white := color.RGBA{R: 255, G: 255, B: 255, A: 255}
	for i := range distinctSeries {
		a := Series(i)
		if c := contrast(a.Color, white); c < minLineContrast {
			t.Errorf("series %d (%s %s): contrast %.2f:1 on white, want at least %d:1", i, a.ColorName, a.Hex(), c, minLineContrast)
		}
		for j := range i {
			b := Series(j)
			if d := deltaE2000(toLab(a.Color), toLab(b.Color)); d < minSeriesDeltaE {
				t.Errorf("series %d (%s %s) and %d (%s %s): CIEDE2000 %.1f, want at least %d",
					j, b.ColorName, b.Hex(), i, a.ColorName, a.Hex(), d, minSeriesDeltaE)
			}
		}
	}
}

func TestContrast(t *testing.T) {
	white := color.RGBA{R: 255, G: 255, B: 255, A: 255}
	for _, tc := range []struct {
		c    color.RGBA
		want float64
	}{
		{color.RGBA{A: 255}, 21},
		{white, 1},
		{color.RGBA{R: 0x76, G: 0x76, B: 0x76, A: 255}, 4.54}, // the lightest grey with 4.5:1 for text
		{color.RGBA{R: 0xF0, G: 0xE4, B: 0x42, A: 255}, 1.32}, // Okabe-Ito yellow
	} {
		if got := contrast(tc.c, white); math.Abs(got-tc.want) > 0.01 {
			t.Errorf("contrast(%v) = %.3f, want %.2f", tc.c, got, tc.want)
		}
	}
}

func TestDeltaE2000(t *testing.T) {
	// Pairs from the test data of Sharma, Wu and Dalal (2005), "The
	// CIEDE2000 color-difference formula: implementation notes".
	for _, tc := range []struct {
		a, b lab
		want float64
	}{
		{lab{50, 2.6772, -79.7751}, lab{50, 0, -82.7485}, 2.0425},
		{lab{50, 3.1571, -77.2803}, lab{50, 0, -82.7485}, 2.8615},
		{lab{50, -1.3802, -84.2814}, lab{50, 0, -82.7485}, 1.0000},
		{lab{50, 0, 0}, lab{50, -1, 2}, 2.3669},
		{lab{50, 2.5, 0}, lab{73, 25, -18}, 27.1492},
		{lab{50, 2.5, 0}, lab{61, -5, 29}, 22.8977},
		{lab{50, 2.5, 0}, lab{56, -27, -3}, 31.9030},
		{lab{50, 2.5, 0}, lab{58, 24, 15}, 19.4535},
		{lab{60.2574, -34.0099, 36.2677}, lab{60.4626, -34.1751, 39.4387}, 1.2644},
		{lab{63.0109, -31.0961, -5.8663}, lab{62.8187, -29.7946, -4.0864}, 1.2630},
		{lab{2.0776, 0.0795, -1.1350}, lab{0.9033, -0.0636, -0.5514}, 0.9082},
	} {
		for _, pair := range [][2]lab{{tc.a, tc.b}, {tc.b, tc.a}} {
			if got := deltaE2000(pair[0], pair[1]); math.Abs(got-tc.want) > 5e-5 {
				t.Errorf("deltaE2000(%v, %v) = %.5f, want %.4f", pair[0], pair[1], got, tc.want)
			}
		}
	}
}

// contrast is WCAG 2.1's contrast ratio of two sRGB colours.
func contrast(a, b color.RGBA) float64 {
	la, lb := luminance(a), luminance(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// luminance is the relative luminance of an sRGB colour.
func luminance(c color.RGBA) float64 {
	r, g, b := linear(c.R), linear(c.G), linear(c.B)
	return 0.2126*r + 0.7152*g + 0.0722*b
}

// linear undoes the sRGB transfer function.
func linear(v uint8) float64 {
	c := float64(v) / 255
	if c <= 0.04045 {
		return c / 12.92
	}
	return math.Pow((c+0.055)/1.055, 2.4)
}

// lab is a colour in CIELAB (D65).
type lab struct{ L, a, b float64 }

func toLab(c color.RGBA) lab {
	r, g, b := linear(c.R), linear(c.G), linear(c.B)
	x := (0.4124564*r + 0.3575761*g + 0.1804375*b) / 0.95047
	y := 0.2126729*r + 0.7151522*g + 0.0721750*b
	z := (0.0193339*r + 0.1191920*g + 0.9503041*b) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	return lab{L: 116*f(y) - 16, a: 500 * (f(x) - f(y)), b: 200 * (f(y) - f(z))}
}

// deltaE2000 is the CIEDE2000 colour difference (CIE 142-2001).
func deltaE2000(p, q lab) float64 {
	const deg = math.Pi / 180
	pow7 := func(v float64) float64 { return math.Pow(v, 7) }
	cBar := (math.Hypot(p.a, p.b) + math.Hypot(q.a, q.b)) / 2
	g := 0.5 * (1 - math.Sqrt(pow7(cBar)/(pow7(cBar)+pow7(25))))
	a1, a2 := (1+g)*p.a, (1+g)*q.a
	c1, c2 := math.Hypot(a1, p.b), math.Hypot(a2, q.b)
	hue := func(b, a float64) float64 {
		if a == 0 && b == 0 {
			return 0
		}
		h := math.Atan2(b, a) / deg
		if h < 0 {
			h += 360
		}
		return h
	}
	h1, h2 := hue(p.b, a1), hue(q.b, a2)

	dh := 0.0
	if c1*c2 != 0 {
		dh = h2 - h1
		switch {
		case dh > 180:
			dh -= 360
		case dh < -180:
			dh += 360
		}
	}
	dL, dC := q.L-p.L, c2-c1
	dH := 2 * math.Sqrt(c1*c2) * math.Sin(dh/2*deg)

	lBar, cBarP := (p.L+q.L)/2, (c1+c2)/2
	hBar := h1 + h2
	if c1*c2 != 0 {
		if math.Abs(h1-h2) > 180 {
			if hBar < 360 {
				hBar += 360
			} else {
				hBar -= 360
			}
		}
		hBar /= 2
	}
	tt := 1 - 0.17*math.Cos((hBar-30)*deg) + 0.24*math.Cos(2*hBar*deg) + 0.32*math.Cos((3*hBar+6)*deg) - 0.20*math.Cos((4*hBar-63)*deg)
	dTheta := 30 * math.Exp(-math.Pow((hBar-275)/25, 2))
	rc := 2 * math.Sqrt(pow7(cBarP)/(pow7(cBarP)+pow7(25)))
	sl := 1 + 0.015*(lBar-50)*(lBar-50)/math.Sqrt(20+(lBar-50)*(lBar-50))
	sc := 1 + 0.045*cBarP
	sh := 1 + 0.015*cBarP*tt
	rt := -math.Sin(2*dTheta*deg) * rc
	l, c, h := dL/sl, dC/sc, dH/sh
	return math.Sqrt(l*l + c*c + h*h + rt*c*h)
}

func TestPlotUsesPalette(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.svg")
	var runs []*Run
	for i := range distinctSeries {
		runs = append(runs, syntheticRun(fmt.Sprintf("algo-%d", i), uint64(i+1), 20, 8, i%2 == 1))
	}
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
	for i := 1; i < distinctSeries; i++ {
		dash := "stroke-dasharray:" + strings.Trim(strings.ReplaceAll(fmt.Sprint(Series(i).Dashes), " ", ","), "[]")
		if !strings.Contains(svg, dash) {
			t.Errorf("no %s in the figure (series %d)", dash, i)
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
