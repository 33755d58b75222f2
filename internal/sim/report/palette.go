package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// seriesColors are the colours of the lines of a figure, in the order
// the lines take them. The first four are Okabe and Ito's (2008, "Color
// universal design") blue, vermillion, bluish green and black, which stay
// apart with the common colour vision deficiencies; their reddish purple
// comes fifth, darkened. Okabe and Ito's orange, sky blue and yellow are
// left out: on white they have a contrast of 2.3:1, 2.3:1 and 1.3:1, too
// faint for a 2 pt line. Each of the other seven was picked, from a
// coarse grid of saturated colours with at least 3.1:1 contrast on white
// (WCAG asks 3:1 of graphics), as the farthest in CIEDE2000 from those
// before it. So every colour has a contrast of 3.1:1 or more, and any two
// differ by a CIEDE2000 of 22 or more, more than Okabe and Ito's own
// closest pair (orange and yellow, 21.7). Colour is never the only cue: every series also has its
// dash pattern and marker (SeriesStyle), which tell apart the colours a
// colour vision deficiency confuses.
var seriesColors = []color.RGBA{
	{R: 0x00, G: 0x72, B: 0xB2, A: 0xFF}, // blue
	{R: 0xD5, G: 0x5E, B: 0x00, A: 0xFF}, // vermillion
	{R: 0x00, G: 0x9E, B: 0x73, A: 0xFF}, // bluish green
	{R: 0x00, G: 0x00, B: 0x00, A: 0xFF}, // black
	{R: 0xC4, G: 0x67, B: 0x9E, A: 0xFF}, // reddish purple
	{R: 0x5A, G: 0x5A, B: 0x00, A: 0xFF}, // dark olive
	{R: 0x69, G: 0x00, B: 0xC3, A: 0xFF}, // violet
	{R: 0x87, G: 0x1E, B: 0x2D, A: 0xFF}, // wine
	{R: 0x96, G: 0x96, B: 0x00, A: 0xFF}, // olive
	{R: 0xFF, G: 0x2D, B: 0x4B, A: 0xFF}, // red
	{R: 0x87, G: 0x69, B: 0xFF, A: 0xFF}, // periwinkle
	{R: 0x00, G: 0x5A, B: 0x3C, A: 0xFF}, // dark green
}

// seriesColorNames names seriesColors, for text describing a figure.
var seriesColorNames = []string{"blue", "vermillion", "bluish green", "black", "reddish purple", "dark olive",
	"violet", "wine", "olive", "red", "periwinkle", "dark green"}

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
	{14, 3, 2, 3},
	{14, 3, 2, 3, 2, 3},
	{8, 3, 8, 3, 2, 3},
	{24, 4, 4, 4},
}

// seriesDashNames names seriesDashes, for text describing a figure.
var seriesDashNames = []string{"solid", "dashed", "dotted", "dash-dotted", "long-dashed", "sparsely dotted", "dash-dot-dotted",
	"evenly dashed", "long-dash-dotted", "long-dash-dot-dotted", "dash-dash-dotted", "long-and-short-dashed"}

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
	{"diamond", shapeGlyph{corners: diamond}},
	{"open diamond", shapeGlyph{corners: diamond, open: true}},
	{"downward triangle", shapeGlyph{corners: downTriangle}},
	{"open downward triangle", shapeGlyph{corners: downTriangle, open: true}},
}

// Corners of shapeGlyph outlines, in marker radii from the centre.
var (
	diamond      = []vg.Point{{X: 0, Y: 1.25}, {X: 1.25, Y: 0}, {X: 0, Y: -1.25}, {X: -1.25, Y: 0}}
	downTriangle = []vg.Point{{X: 0, Y: -1.25}, {X: 1.08, Y: 0.62}, {X: -1.08, Y: 0.62}}
)

// shapeGlyph draws a polygon marker, filled or open, for the shapes gonum
// does not have. Corners are scaled by the glyph's radius; open shapes
// are stroked 1 pt wide so that they stay visible next to a 2 pt line.
type shapeGlyph struct {
	corners []vg.Point
	open    bool
}

// DrawGlyph implements draw.GlyphDrawer.
func (g shapeGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	var p vg.Path
	for i, k := range g.corners {
		q := vg.Point{X: pt.X + k.X*sty.Radius, Y: pt.Y + k.Y*sty.Radius}
		if i == 0 {
			p.Move(q)
		} else {
			p.Line(q)
		}
	}
	p.Close()
	if g.open {
		c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1)})
		c.Stroke(p)
		return
	}
	c.SetColor(sty.Color)
	c.Fill(p)
}

// SeriesStyle is how a figure draws its i-th line (one algorithm, or one
// algorithm and placer): a colour (seriesColors), a dash pattern and a
// marker. The first twelve series differ in all three; past twelve the
// colours repeat but with another dash and marker, so that no two of the
// first 144 series look the same.
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
