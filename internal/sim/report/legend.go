package report

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Legend layout, in points. The sample comes first and the label after
// it, left-aligned, so that a label drawn wider than measured grows away
// from its sample instead of into it.
const (
	legendFontSize = 12
	legendSample   = 40 // long enough to show a dash pattern
	legendGap      = 6  // between a sample and its label
	legendRowGap   = 3  // between rows
	legendColGap   = 18 // between columns
	legendMargin   = 8  // above and below the legend
	// legendWidth is the width a legend may take: the figure's less its
	// margins and, to spare, more than any y axis takes.
	legendWidth = plotWidth - 80
)

// legend is a figure's key. It goes in a band of its own between the
// title and the data area, right-aligned, in as many columns as fit, so
// that it covers no data and no title runs into it; newLegend sets the
// title's padding to make the band. In SVG each entry is a group of class
// legend-entry holding a group legend-sample and a text legend-label.
type legend struct {
	entries []legendEntry
	cols    int
}

type legendEntry struct {
	label string
	line  draw.LineStyle
	glyph *draw.GlyphStyle // nil: a line alone
}

// add appends an entry; call layout after the last.
func (l *legend) add(label string, line draw.LineStyle, glyph *draw.GlyphStyle) {
	l.entries = append(l.entries, legendEntry{label: label, line: line, glyph: glyph})
}

func legendFace() font.Face {
	f := chartFont
	f.Size = legendFontSize
	return font.DefaultCache.Lookup(f, f.Size)
}

// legendRow is the height of one row of entries.
func legendRow() vg.Length {
	face := legendFace()
	e := face.Extents()
	return e.Ascent + e.Descent + legendRowGap
}

// colWidth is the width of a column: a sample and the longest label.
func (l *legend) colWidth() vg.Length {
	face := legendFace()
	var w vg.Length
	for _, e := range l.entries {
		w = max(w, face.Width(e.label))
	}
	return legendSample + legendGap + w
}

func (l *legend) rows() int {
	return (len(l.entries) + l.cols - 1) / l.cols
}

// layout chooses the columns and returns the height of the band the
// legend needs above the data area, margins included: the padding p's
// title must leave. It is 0 without entries.
func (l *legend) layout(p *plot.Plot) vg.Length {
	if len(l.entries) == 0 {
		return 0
	}
	cw := l.colWidth()
	l.cols = max(1, min(len(l.entries), int((legendWidth+legendColGap)/(cw+legendColGap))))
	band := vg.Length(l.rows())*legendRow() - legendRowGap + 2*legendMargin
	p.Title.Padding = band
	return band
}

// Plot implements plot.Plotter, drawing above c, the data area.
func (l *legend) Plot(c draw.Canvas, _ *plot.Plot) {
	if len(l.entries) == 0 || l.cols == 0 {
		return
	}
	face := legendFace()
	ext := face.Extents()
	cw, row, rows := l.colWidth(), legendRow(), l.rows()
	width := vg.Length(l.cols)*cw + vg.Length(l.cols-1)*legendColGap
	left := c.Max.X - width
	top := c.Max.Y + legendMargin + vg.Length(rows)*row - legendRowGap

	begin(c, "legend")
	for i, e := range l.entries {
		x := left + vg.Length(i/rows)*(cw+legendColGap)
		y := top - vg.Length(i%rows)*row // the top of the row
		mid := y - (ext.Ascent+ext.Descent)/2

		begin(c, "legend-entry")
		begin(c, "legend-sample")
		c.StrokeLine2(e.line, x, mid, x+legendSample, mid)
		if e.glyph != nil {
			c.DrawGlyphNoClip(*e.glyph, vg.Point{X: x + legendSample/2, Y: mid})
		}
		end(c)
		c.SetColor(color.Black)
		textClass(c, "legend-label")
		c.FillString(face, vg.Point{X: x + legendSample + legendGap, Y: y - ext.Ascent}, e.label)
		end(c)
	}
	end(c)
}
