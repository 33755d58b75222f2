package soak

import (
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// series is one curve of a panel.
type series struct {
	label string
	value func(sample) float64
	// dashed draws it dashed: a limit rather than a measure.
	dashed bool
}

// panel is one chart of the figure.
type panel struct {
	title, unit string
	series      []series
}

// Colours that colour-blind readers tell apart (Okabe and Ito), in the
// order a panel's series take them.
var seriesColors = []color.RGBA{
	{0, 114, 178, 255},   // blue
	{213, 94, 0, 255},    // vermillion
	{0, 158, 115, 255},   // bluish green
	{204, 121, 167, 255}, // reddish purple
	{230, 159, 0, 255},   // orange
}

// panels are the figure's charts, for a run keeping maxFinished finished
// jobs.
func panels(maxFinished int) []panel {
	return []panel{
		{"Server memory", "MiB", []series{
			{label: "RSS", value: func(s sample) float64 { return s.rssMiB }},
			{label: "Go heap in use", value: func(s sample) float64 { return s.heapMiB }},
		}},
		{"Store file", "MiB", []series{
			{label: "voda.db", value: func(s sample) float64 { return s.storeMiB }},
		}},
		{"Jobs kept", "jobs", []series{
			{label: "finished", value: func(s sample) float64 { return s.kept }},
			{label: "live", value: func(s sample) float64 { return s.live }},
			{label: "--max-finished-jobs", value: func(sample) float64 { return float64(maxFinished) }, dashed: true},
		}},
		{"GET /api/v1/jobs", "ms", []series{
			{label: "first page p50", value: func(s sample) float64 { return s.listP50 }},
			{label: "first page p99", value: func(s sample) float64 { return s.listP99 }},
			{label: "?live=true p50", value: func(s sample) float64 { return s.liveP50 }},
			{label: "?live=true p99", value: func(s sample) float64 { return s.liveP99 }},
		}},
		{"Event stream lag (submission to event)", "ms", []series{
			{label: "p50", value: func(s sample) float64 { return s.lagP50 }},
			{label: "p99", value: func(s sample) float64 { return s.lagP99 }},
		}},
		{"Server CPU", "ms per s", []series{
			{label: "CPU", value: func(s sample) float64 { return s.cpu }},
		}},
	}
}

// writePNG draws the panels over the samples' time, two a row, as a PNG
// at path.
func writePNG(path string, samples []sample, maxFinished int) error {
	ps := panels(maxFinished)
	const cols = 2
	rows := (len(ps) + cols - 1) / cols
	img := vgimg.NewWith(vgimg.UseWH(12*vg.Inch, vg.Length(rows)*3.2*vg.Inch), vgimg.UseDPI(110))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	for i, pn := range ps {
		p, err := pn.plot(samples)
		if err != nil {
			return fmt.Errorf("plot %s: %w", pn.title, err)
		}
		p.Draw(tiles.At(dc, i%cols, i/cols))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// plot draws the panel; a sample without a figure (NaN) leaves a gap in
// its line rather than a point at zero.
func (pn panel) plot(samples []sample) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.title
	p.X.Label.Text = "minutes"
	p.Y.Label.Text = pn.unit
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	for k, se := range pn.series {
		col := seriesColors[k%len(seriesColors)]
		var pts plotter.XYs
		flush := func() error {
			if len(pts) == 0 {
				return nil
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = col
			l.Width = vg.Points(1.5)
			if se.dashed {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			p.Add(l)
			pts = nil
			return nil
		}
		for _, s := range samples {
			v := se.value(s)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				if err := flush(); err != nil {
					return nil, err
				}
				continue
			}
			pts = append(pts, plotter.XY{X: s.at.Minutes(), Y: v})
		}
		if err := flush(); err != nil {
			return nil, err
		}
		// The legend's entry: a line of the series' style.
		key := &plotter.Line{LineStyle: draw.LineStyle{Color: col, Width: vg.Points(1.5)}}
		if se.dashed {
			key.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Legend.Add(se.label, key)
	}
	return p, nil
}

func TestWritePNG(t *testing.T) {
	var samples []sample
	for i := range 30 {
		lag := float64(i * 10)
		if i == 7 {
			lag = math.NaN() // no job seen first in that interval
		}
		samples = append(samples, sample{at: time.Duration(i) * 10 * time.Second, rssMiB: 50 + float64(i), heapMiB: 10,
			storeMiB: float64(i), kept: float64(i * 100), live: 30, listP50: 5, listP99: 20, liveP50: 2, liveP99: 9,
			lagP50: lag, lagP99: 2 * lag, cpu: 300})
	}
	path := filepath.Join(t.TempDir(), "soak.png")
	if err := writePNG(path, samples, 2000); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != 12*110 || b.Dy() != 3*int(3.2*110) {
		t.Errorf("the figure is %dx%d pixels, want %dx%d", b.Dx(), b.Dy(), 12*110, 3*int(3.2*110))
	}
}
