package report

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	gtext "gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chartFont is the typeface of every figure: Liberation Sans, which gonum
// embeds and measures text with, and which has the widths of Arial and
// Helvetica, so that a browser showing an SVG figure with any of the
// three draws the text as wide as it was laid out.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// svgFontFamily is the font-family SVG text gets instead of gonum's bare
// "Liberation Sans": metric-compatible fonts first (Arimo is Liberation
// Sans under another name), then the page's system font and a generic
// family, so that a browser always finds one.
const svgFontFamily = `'Liberation Sans', Arimo, Arial, Helvetica, system-ui, sans-serif`

// newPlot is plot.New with every text in chartFont.
func newPlot() *plot.Plot {
	p := plot.New()
	for _, sty := range []*gtext.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		sty.Font.Typeface, sty.Font.Variant = chartFont.Typeface, chartFont.Variant
	}
	return p
}

// svgCanvas is gonum's SVG canvas made safe for text in a browser. gonum
// lays text out with the metrics of chartFont but the SVG only names the
// font; a browser without it draws a wider or narrower one, and titles,
// labels and legends run into each other. So the canvas records the width
// gonum measured for each string, and WriteTo gives every <text> element
// that width as its textLength (the browser fits whatever font it has to
// it) and a font-family with fallbacks. It also lets figures group what
// they draw under a class (begin, end), for tests and style sheets.
type svgCanvas struct {
	*vgsvg.Canvas
	texts []svgText // one per <text> element of the SVG, in order
	// class is the class of the next string drawn.
	class string
}

// svgText is what WriteTo does with one <text> element of gonum's SVG.
type svgText struct {
	width vg.Length
	class string
	// markup, if set, replaces the element: a group's start or end.
	markup string
}

func newSVGCanvas(w, h vg.Length) *svgCanvas {
	return &svgCanvas{Canvas: vgsvg.New(w, h)}
}

// FillString implements vg.Canvas.
func (c *svgCanvas) FillString(f font.Face, pt vg.Point, s string) {
	c.texts = append(c.texts, svgText{width: f.Width(s), class: c.class})
	c.class = ""
	c.Canvas.FillString(f, pt, s)
}

// mark puts markup where the next element of the SVG goes. gonum's
// canvas writes nothing but its own elements, so the markup goes in as a
// placeholder <text> element that WriteTo replaces.
func (c *svgCanvas) mark(markup string) {
	c.texts = append(c.texts, svgText{markup: markup})
	c.Canvas.FillString(font.DefaultCache.Lookup(chartFont, 1), vg.Point{}, "")
}

// svgOf returns the svgCanvas c draws on, if any: gonum nests
// draw.Canvas values as it crops them.
func svgOf(c vg.Canvas) *svgCanvas {
	for {
		switch v := c.(type) {
		case *svgCanvas:
			return v
		case draw.Canvas:
			c = v.Canvas
		case *draw.Canvas:
			c = v.Canvas
		default:
			return nil
		}
	}
}

// begin starts a group of what c draws next under class, when c draws
// SVG; end closes it. Groups nest, and must not span a Push or Pop.
func begin(c draw.Canvas, class string) {
	if s := svgOf(c); s != nil {
		s.mark(`<g class="` + class + `">`)
	}
}

func end(c draw.Canvas) {
	if s := svgOf(c); s != nil {
		s.mark(`</g>`)
	}
}

// textClass gives the next string c draws a class, when c draws SVG.
func textClass(c draw.Canvas, class string) {
	if s := svgOf(c); s != nil {
		s.class = class
	}
}

var (
	svgTextElement = regexp.MustCompile(`<text ([^>]*)>([^<]*)</text>`)
	svgFontFamilyP = regexp.MustCompile(`font-family:[^;"]*`)
)

// WriteTo implements vg.CanvasWriterTo: gonum's SVG with its <text>
// elements rewritten (see svgCanvas).
func (c *svgCanvas) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	if _, err := c.Canvas.WriteTo(&buf); err != nil {
		return 0, err
	}
	svg := buf.String()
	found := svgTextElement.FindAllStringSubmatchIndex(svg, -1)
	if len(found) != len(c.texts) {
		return 0, fmt.Errorf("svg: %d text elements for %d strings drawn", len(found), len(c.texts))
	}
	var out strings.Builder
	out.Grow(len(svg) + 80*len(found))
	last := 0
	for k, m := range found {
		out.WriteString(svg[last:m[0]])
		last = m[1]
		t := c.texts[k]
		if t.markup != "" {
			out.WriteString(t.markup)
			continue
		}
		attrs := svgFontFamilyP.ReplaceAllLiteralString(svg[m[2]:m[3]], "font-family:"+svgFontFamily)
		// gonum measured the spaces too: keep them.
		attrs = strings.Replace(attrs, `style="`, `style="white-space:pre;`, 1)
		out.WriteString("<text ")
		out.WriteString(attrs)
		if t.width > 0 {
			fmt.Fprintf(&out, ` textLength="%.2f" lengthAdjust="spacingAndGlyphs"`, t.width.Points())
		}
		if t.class != "" {
			fmt.Fprintf(&out, ` class="%s"`, t.class)
		}
		out.WriteString(">")
		out.WriteString(xmlText(svg[m[4]:m[5]]))
		out.WriteString("</text>")
	}
	out.WriteString(svg[last:])
	n, err := io.WriteString(w, out.String())
	return int64(n), err
}

// xmlText makes escaped text fit for XML 1.0, which a standalone SVG
// file is: line breaks and tabs become spaces (SVG text is one line), and
// other control characters, invalid UTF-8 and non-characters become
// U+FFFD. gonum writes labels as they are given.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case r < 0x20, r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF:
			return utf8.RuneError
		}
		return r
	}, s)
}
