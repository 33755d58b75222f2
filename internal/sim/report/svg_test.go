package report

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// svgElement is an element of an SVG figure, with the attributes and
// text tests look at.
type svgElement struct {
	name    string
	attrs   map[string]string
	text    string
	classes []string // of the element and the groups around it, innermost first
}

// parseSVG checks that svg is well-formed XML and returns its elements.
func parseSVG(t *testing.T, svg string) []*svgElement {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	var all, open []*svgElement
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &svgElement{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if c := e.attrs["class"]; c != "" {
				e.classes = append(e.classes, c)
			}
			for i := len(open) - 1; i >= 0; i-- {
				if c := open[i].attrs["class"]; c != "" {
					e.classes = append(e.classes, c)
				}
			}
			all = append(all, e)
			open = append(open, e)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				open[len(open)-1].text += string(tok)
			}
		}
	}
	return all
}

func (e *svgElement) in(class string) bool {
	for _, c := range e.classes {
		if c == class {
			return true
		}
	}
	return false
}

// checkSVGText checks what a browser needs to draw the text of an SVG
// figure where gonum laid it out, and that the legend has the entries
// given, in order, each a line sample and a label.
func checkSVGText(t *testing.T, svg string, legends ...string) {
	t.Helper()
	var texts int
	var labels []string
	samples := 0
	for _, e := range parseSVG(t, svg) {
		if e.name == "g" && e.attrs["class"] == "legend-sample" {
			samples++
		}
		if e.name != "text" {
			continue
		}
		texts++
		if e.text == "" {
			t.Errorf("an empty <text> element: %v", e.attrs)
		}
		style := e.attrs["style"]
		if !strings.Contains(style, "font-family:"+svgFontFamily+";") || !strings.Contains(style, "white-space:pre") {
			t.Errorf("text %q has style %q, want font-family %s and white-space:pre", e.text, style, svgFontFamily)
		}
		if l, err := strconv.ParseFloat(e.attrs["textLength"], 64); err != nil || l <= 0 || e.attrs["lengthAdjust"] != "spacingAndGlyphs" {
			t.Errorf("text %q: textLength %q, lengthAdjust %q, want the width gonum measured, spacingAndGlyphs",
				e.text, e.attrs["textLength"], e.attrs["lengthAdjust"])
		}
		if e.in("legend-label") {
			if !e.in("legend-entry") {
				t.Errorf("legend label %q is outside a legend entry", e.text)
			}
			labels = append(labels, e.text)
		}
	}
	if texts < 5 {
		t.Errorf("%d <text> elements, want a title, axis labels and ticks", texts)
	}
	if diff := cmp.Diff(legends, labels); diff != "" {
		t.Errorf("legend labels (-want,+got):\n%s", diff)
	}
	if samples != len(legends) {
		t.Errorf("%d legend line samples, want %d", samples, len(legends))
	}
}

func TestPlotSVGText(t *testing.T) {
	runs := []*Run{syntheticRun("FIFO", 1, 20, 8, false), syntheticRun("ElasticTiresias", 2, 20, 8, true)}
	path := filepath.Join(t.TempDir(), "p.svg")
	if err := Plot(path, runs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range runs {
		s := Summarize(r)
		want = append(want, fmt.Sprintf("%s (avg %.2f h, %d/%d done)", r.Algorithm, s.AvgJCT/3600, s.Completed, s.Jobs))
	}
	for _, r := range runs {
		want = append(want, fmt.Sprintf("cluster: %d GPUs", r.GPUs))
	}
	checkSVGText(t, string(b), want...)
}

func TestChartSVGText(t *testing.T) {
	runs := []*Run{syntheticRun("FIFO", 1, 20, 8, false), syntheticRun("AFS-L", 2, 20, 8, true), syntheticRun("Goodput", 3, 20, 8, true)}
	cdf, height, err := jctCDFPlot(runs)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := chartSVG(cdf, height, "c", "title", "description")
	if err != nil {
		t.Fatal(err)
	}
	labels := legendLabels(t, string(svg))
	if len(labels) != len(runs) {
		t.Fatalf("legend labels %q, want one per run", labels)
	}
	for i, r := range runs {
		if !strings.HasPrefix(labels[i], r.Algorithm+" (avg ") {
			t.Errorf("legend label %d is %q, want %s's", i, labels[i], r.Algorithm)
		}
	}
	checkSVGText(t, string(svg), labels...)
}

// legendLabels returns the text of the legend labels of svg.
func legendLabels(t *testing.T, svg string) []string {
	t.Helper()
	var out []string
	for _, e := range parseSVG(t, svg) {
		if e.name == "text" && e.in("legend-label") {
			out = append(out, e.text)
		}
	}
	return out
}

func TestLegendColumns(t *testing.T) {
	// The legend takes a band above the data area, in as many columns as
	// fit in legendWidth: the band grows with the rows, never the columns.
	for _, tc := range []struct {
		label      string
		n          int
		cols, rows int
	}{
		{"FIFO (avg 1.23 h, 60/60 done)", 1, 1, 1},
		{"FIFO (avg 1.23 h, 60/60 done)", 9, 2, 5},
		{"ElasticTiresias (topology) (avg 12.34 h, 160/160 done)", 18, 1, 18},
		{"a", 30, 8, 4},
	} {
		l := &legend{}
		for range tc.n {
			l.add(tc.label, draw.LineStyle{}, nil)
		}
		p := newPlot()
		band := l.layout(p)
		if l.cols != tc.cols || l.rows() != tc.rows {
			t.Errorf("%d x %q: %d columns of %d rows, want %d of %d", tc.n, tc.label, l.cols, l.rows(), tc.cols, tc.rows)
		}
		if w := vg.Length(l.cols)*l.colWidth() + vg.Length(l.cols-1)*legendColGap; w > legendWidth {
			t.Errorf("%d x %q: %v wide, more than %v", tc.n, tc.label, w, legendWidth)
		}
		if want := vg.Length(tc.rows)*legendRow() - legendRowGap + 2*legendMargin; band != want || p.Title.Padding != want {
			t.Errorf("%d x %q: band %v, title padding %v, want %v", tc.n, tc.label, band, p.Title.Padding, want)
		}
	}
	if band := (&legend{}).layout(newPlot()); band != 0 {
		t.Errorf("empty legend: band %v, want 0", band)
	}
}

func TestCheckPlotFormat(t *testing.T) {
	for _, ext := range PlotFormats() {
		for _, path := range []string{"x" + ext, "dir/x" + strings.ToUpper(ext)} {
			if err := CheckPlotFormat(path); err != nil {
				t.Errorf("CheckPlotFormat(%q) = %v, want nil", path, err)
			}
		}
	}
	for _, path := range []string{"x.gif", "x.svgz", "x.html", "x", "x.png.txt"} {
		err := CheckPlotFormat(path)
		if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), strings.Join(PlotFormats(), ", ")) {
			t.Errorf("CheckPlotFormat(%q) = %v, want an error naming the file and the formats", path, err)
		}
	}
}

// FuzzSVGText draws a figure whose labels are arbitrary strings (run
// labels come from callers): its SVG must stay well-formed, with the
// labels in it as given and a textLength on every text.
func FuzzSVGText(f *testing.F) {
	for _, s := range []string{"FIFO", `a<b>&"c'`, "</text><text>", "two  spaces", "\u00e9\u4e2d\U0001F600", "line\nbreak", " ", "ctrl\x01char", "bad\xffutf8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, label string) {
		c := newSVGCanvas(plotWidth, cdfHeight)
		p := newPlot()
		p.Title.Text = label
		key := &legend{}
		key.add(label, Series(0).lineStyle(), nil)
		p.Add(key)
		key.layout(p)
		p.Draw(draw.New(c))
		var buf strings.Builder
		if _, err := c.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		for _, e := range parseSVG(t, buf.String()) {
			if e.name == "text" && e.text != "" && e.attrs["textLength"] == "" {
				t.Errorf("text %q has no textLength", e.text)
			}
		}
		if got := legendLabels(t, buf.String()); len(got) != 1 || got[0] != xmlText(label) {
			t.Errorf("legend labels %q, want [%q]", got, xmlText(label))
		}
	})
}
