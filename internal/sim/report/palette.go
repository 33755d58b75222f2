package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// seriesColors is the palette of Okabe and Ito (2008, "Color universal
// design"), whose colours stay apart with the common colour vision
// deficiencies, in the order the lines of a figure take them. Yellow
// comes last for its low contrast on white. Colour is never the only cue:
// every series also has its dash pattern and marker (SeriesStyle).
var seriesColors = []color.RGBA{
	{R: 0x00, G: 0x72, B: 0xB2, A: 0xFF}, // blue
	{R: 0xE6, G: 0x9F, B: 0x00, A: 0xFF}, // orange
	{R: 0x00, G: 0x9E, B: 0x73, A: 0xFF}, // bluish green
	{R: 0xD5, G: 0x5E, B: 0x00, A: 0xFF}, // vermillion
	{R: 0xCC, G: 0x79, B: 0xA7, A: 0xFF}, // reddish purple
	{R: 0x56, G: 0xB4, B: 0xE9, A: 0xFF}, // sky blue
	{R: 0x00, G: 0x00, B: 0x00, A: 0xFF}, // black
	{R: 0xF0, G: 0xE4, B: 0x42, A: 0xFF}, // yellow
}

// seriesColorNames names seriesColors, for text describing a figure.
var seriesColorNames = []string{"blue", "orange", "bluish green", "vermillion", "reddish purple", "sky blue", "black", "yellow"}

// seriesDashes are dash patterns in points (on, off, ...), all different
// and long enough to tell apart on a 2 pt line; nil is solid.
var seriesDashes = [][]float64{
	nil,
	{8, 3},
	{2, 2},
	{8, 2, 2, 2},
	{14, 4},
	{1, 4},
	{8, 2, 2, 2, 2, 2},
	{4, 4},
}

// seriesDashNames names seriesDashes, for text describing a figure.
var seriesDashNames = []string{"solid", "dashed", "dotted", "dash-dotted", "long-dashed", "sparsely dotted", "dash-dot-dotted", "evenly dashed"}

// seriesMarkers are the markers on the lines, filled and open shapes.
var seriesMarkers = []struct {
	name  string
	glyph draw.GlyphDrawer
}{
	{"circle", draw.CircleGlyph{}},
	{"triangle", draw.PyramidGlyph{}},
	{"square", draw.BoxGlyph{}},
	{"cross", draw.CrossGlyph{}},
	{"open circle", draw.RingGlyph{}},
	{"open triangle", draw.TriangleGlyph{}},
	{"open square", draw.SquareGlyph{}},
	{"plus", draw.PlusGlyph{}},
}

// SeriesStyle is how a figure draws its i-th line (one algorithm, or one
// algorithm and placer): a colour of the Okabe-Ito palette, a dash
// pattern and a marker. The first eight series differ in all three; past
// eight the colours repeat but with another dash and marker, so that no
// two of the first 64 series look the same.
type SeriesStyle struct {
	Color color.RGBA
	// ColorName names the colour in words ("blue").
	ColorName string
	// Dashes is the dash pattern in points, on and off; nil is solid.
	Dashes []float64
	// DashName names the dash pattern ("solid", "dotted").
	DashName string
	// Marker names the marker's shape ("circle", "open square").
	Marker string
	glyph  draw.GlyphDrawer
}

// Series returns the style of the i-th series (i >= 0).
func Series(i int) SeriesStyle {
	i = max(i, 0)
	n := len(seriesColors)
	c, round := i%n, i/n
	d := (i + round) % n
	m := (i + 3*round) % n
	return SeriesStyle{
		Color:     seriesColors[c],
		ColorName: seriesColorNames[c],
		Dashes:    seriesDashes[d],
		DashName:  seriesDashNames[d],
		Marker:    seriesMarkers[m].name,
		glyph:     seriesMarkers[m].glyph,
	}
}

// Hex is the colour as #RRGGBB.
func (s SeriesStyle) Hex() string {
	return fmt.Sprintf("#%02X%02X%02X", s.Color.R, s.Color.G, s.Color.B)
}

// Describe says in words how the series looks, for text alternatives
// of figures: "blue solid line with circles".
func (s SeriesStyle) Describe() string {
	return fmt.Sprintf("%s %s line with %s markers", s.ColorName, s.DashName, s.Marker)
}

func (s SeriesStyle) lineStyle() draw.LineStyle {
	var dashes []vg.Length
	for _, d := range s.Dashes {
		dashes = append(dashes, vg.Points(d))
	}
	return draw.LineStyle{Color: s.Color, Width: vg.Points(2), Dashes: dashes}
}

func (s SeriesStyle) glyphStyle() draw.GlyphStyle {
	return draw.GlyphStyle{Color: s.Color, Radius: vg.Points(3.5), Shape: s.glyph}
}

// jobColor gives the band of the job at stack position k its colour:
// hues in golden-ratio steps, so that neighbouring bands differ in hue,
// and three clearly different lightnesses in turn, so that neighbours
// differ in lightness too, which survives colour vision deficiencies
// where hue alone (red against green) would not. Bands are also drawn
// with a thin gap between them (gpuStack.Plot).
func jobColor(k int) color.Color {
	h := math.Mod(float64(k)*0.618033988749895, 1)
	l := []float64{0.40, 0.60, 0.78}[k%3]
	return hsl(h, 0.65, l)
}

func hsl(h, s, l float64) color.RGBA {
	c := (1 - math.Abs(2*l-1)) * s
	x := c * (1 - math.Abs(math.Mod(h*6, 2)-1))
	m := l - c/2
	var r, g, b float64
	switch int(h * 6) {
	case 0:
		r, g, b = c, x, 0
	case 1:
		r, g, b = x, c, 0
	case 2:
		r, g, b = 0, c, x
	case 3:
		r, g, b = 0, x, c
	case 4:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	to := func(v float64) uint8 { return uint8(math.Round(255 * (v + m))) }
	return color.RGBA{R: to(r), G: to(g), B: to(b), A: 255}
}
