package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
)

// Figure sizes.
const (
	plotWidth     = 9 * vg.Inch
	cdfHeight     = 4.5 * vg.Inch
	gpusHeight    = 3.5 * vg.Inch
	plotDPI       = 150
	minPlottedJCT = 1.0 // seconds; the log axis cannot show 0
)

// Plot writes one figure with panels stacked vertically. On top is the
// cumulative distribution of job completion times, one line per run, each
// with its colour-blind-safe colour, dash pattern and marker (Series): x is
// the JCT in hours, on a log scale when the JCTs span more than a decade;
// y is the fraction of the run's jobs that completed within x, so a run
// that did not finish every job stays below 1. Then comes, for each run in
// the given order, the GPUs each job holds over time (from run.Changes) as
// a stacked area, one colour per job with neighbours differing in hue and
// lightness and a thin gap between them, with the cluster's GPU count as a
// dashed line; x is simulated time in hours. Jobs are stacked in the order
// they first got GPUs, the earliest at the bottom, so the long-running
// jobs form the base. With one run that is the two panels of that run;
// with several, the comparison and then one panel per algorithm, so the
// figure grows taller with the number of runs. Each panel's legend sits
// between its title and its plot (see legend). The format follows the
// extension (PlotFormats); SVG text carries the width it was laid out
// with and fallback fonts (svgCanvas).
func Plot(path string, runs []*Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("plot %s: no runs", path)
	}
	cdf, height, err := jctCDFPlot(runs)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	plots := []*plot.Plot{cdf}
	heights := []vg.Length{height}
	xmax := 0.0
	withPlacer := placersDiffer(runs)
	for _, r := range runs {
		g, height, err := gpusPlot(r, withPlacer)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		plots = append(plots, g)
		heights = append(heights, height)
		xmax = math.Max(xmax, g.X.Max)
	}
	for _, g := range plots[1:] {
		g.X.Max = xmax // one time axis, so the runs line up
	}
	return savePlots(path, plots, heights)
}

// runLabel names a run in legends and titles; withPlacer adds its
// placer, for figures comparing placers.
func runLabel(r *Run, i int, withPlacer bool) string {
	name := r.Algorithm
	if name == "" {
		name = fmt.Sprintf("run %d", i+1)
	}
	if withPlacer && r.Placer != "" {
		name += " (" + r.Placer + ")"
	}
	return name
}

// placersDiffer reports whether the runs used more than one placer, so
// that their labels must name it.
func placersDiffer(runs []*Run) bool {
	for _, r := range runs {
		if r != nil && runs[0] != nil && r.Placer != runs[0].Placer {
			return true
		}
	}
	return false
}

// jctCDFPlot draws the CDF panel of Plot, and returns its height:
// cdfHeight and the legend's; runs is not empty.
func jctCDFPlot(runs []*Run) (*plot.Plot, vg.Length, error) {
	p := newPlot()
	p.Title.Text = "Job completion time CDF"
	p.X.Label.Text = "JCT (hours)"
	p.Y.Label.Text = "fraction of jobs completed"
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = niceTicks{n: 5}
	p.Add(plotter.NewGrid())
	key := &legend{}

	withPlacer := placersDiffer(runs)
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, r := range runs {
		if r == nil {
			return nil, 0, fmt.Errorf("run %d is nil", i)
		}
		jcts := JCTs(r)
		series := Series(i)
		style := series.lineStyle()
		glyph := series.glyphStyle()
		marks := &plotter.Scatter{GlyphStyle: glyph}
		label := runLabel(r, i, withPlacer)
		if len(jcts) == 0 {
			key.add(label+" (no job completed)", style, &glyph)
			continue
		}
		n := float64(len(r.Jobs))
		// Empirical CDF as steps: 0 up to the first JCT, then +1/n at each.
		pts := make(plotter.XYs, 0, len(jcts)+1)
		pts = append(pts, plotter.XY{X: hours(jcts[0]), Y: 0})
		for k, j := range jcts {
			pts = append(pts, plotter.XY{X: hours(j), Y: float64(k+1) / n})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, 0, fmt.Errorf("run %s: %w", label, err)
		}
		l.LineStyle = style
		l.StepStyle = plotter.PostStep
		marks.XYs = cdfMarkers(pts, i, len(runs))
		p.Add(l, marks)
		s := Summarize(r)
		key.add(fmt.Sprintf("%s (avg %.2f h, %d/%d done)", label, s.AvgJCT/3600, s.Completed, s.Jobs), style, &glyph)
		lo, hi = math.Min(lo, pts[0].X), math.Max(hi, pts[len(pts)-1].X)
	}
	switch {
	case math.IsInf(lo, 0): // nothing completed anywhere
		p.X.Min, p.X.Max = 0, 1
	case hi/lo > 10:
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = hourTicks{}
		p.X.Min, p.X.Max = lo/1.2, hi*1.2
	default:
		p.X.Min, p.X.Max = 0, hi*1.05
		p.X.Tick.Marker = niceTicks{n: 10}
	}
	p.Add(key)
	return p, cdfHeight + key.layout(p), nil
}

// markersPerLine is how many markers a CDF line carries.
const markersPerLine = 8

// cdfMarkers picks the points of the i-th of n CDF lines that carry its
// markers: markersPerLine points at evenly spaced fractions of jobs, the
// fractions shifted by line so that markers of different lines do not
// sit on top of each other where the lines coincide. pts starts with the
// line's (x, 0) point, then one point per completed job.
func cdfMarkers(pts plotter.XYs, i, n int) plotter.XYs {
	jobs := len(pts) - 1
	if jobs < 1 {
		return nil
	}
	var out plotter.XYs
	last := 0
	for m := range markersPerLine {
		f := (float64(m) + float64(i+1)/float64(n+1)) / markersPerLine
		k := min(jobs, max(1, int(math.Ceil(f*float64(jobs)))))
		if k == last {
			continue // fewer jobs than markers
		}
		last = k
		out = append(out, pts[k])
	}
	return out
}

// hours converts seconds for the CDF's axis, keeping it positive for the
// log scale.
func hours(sec float64) float64 { return math.Max(sec, minPlottedJCT) / 3600 }

// hourTicks labels a log axis in hours with 1-2-5 steps per decade, which
// reads better than powers of ten alone when JCTs span two or three
// decades.
type hourTicks struct{}

// Ticks implements plot.Ticker.
func (hourTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strings.TrimSuffix(fmt.Sprintf("%.*f", max(0, int(-e)), v), ".")
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// gpusPlot draws the panel of one run of Plot, and returns its height:
// gpusHeight and the legend's; jctCDFPlot has checked that run is not
// nil.
func gpusPlot(run *Run, withPlacer bool) (*plot.Plot, vg.Length, error) {
	stack, err := newGPUStack(run)
	if err != nil {
		return nil, 0, fmt.Errorf("run %s: %w", runLabel(run, 0, withPlacer), err)
	}
	p := newPlot()
	jobs := fmt.Sprintf("%d jobs, one colour each", len(run.Jobs))
	if len(run.Jobs) == 1 {
		jobs = "1 job"
	}
	p.Title.Text = fmt.Sprintf("GPUs held per job over time: %s (%s)", runLabel(run, 0, withPlacer), jobs)
	p.X.Label.Text = "time (hours)"
	p.Y.Label.Text = "GPUs"
	p.Add(stack)
	top := float64(stack.peak)
	key := &legend{}
	if run.GPUs > 0 {
		line, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(run.GPUs)}, {X: stack.end / 3600, Y: float64(run.GPUs)}})
		if err != nil {
			return nil, 0, err
		}
		line.Color = color.Black
		line.Width = vg.Points(1.5)
		line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(line)
		key.add(fmt.Sprintf("cluster: %d GPUs", run.GPUs), line.LineStyle, nil)
		top = math.Max(top, float64(run.GPUs))
	}
	p.Add(key)
	p.X.Min, p.X.Max = 0, math.Max(stack.end/3600, 1.0/60)
	p.Y.Min, p.Y.Max = 0, math.Max(1, top*1.08)
	p.X.Tick.Marker = niceTicks{n: 12}
	p.Y.Tick.Marker = niceTicks{n: 5, integer: true}
	return p, gpusHeight + key.layout(p), nil
}

// niceTicks places about n labelled ticks at multiples of 1, 2 or 5 times
// a power of ten, with an unlabelled tick halfway between; gonum's default
// gives too few labels for reading times off a wide figure.
type niceTicks struct {
	n       int
	integer bool // no fractional steps (GPU counts)
}

// Ticks implements plot.Ticker.
func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / float64(max(t.n, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	if t.integer {
		step = math.Max(1, math.Round(step))
	}
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	half := step / 2
	if t.integer && step < 2 {
		half = 0
	}
	for k := math.Ceil(lo / step); k*step <= hi; k++ {
		v := k * step
		ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("%.*f", decimals, v)})
		if half > 0 && v+half <= hi {
			ticks = append(ticks, plot.Tick{Value: v + half})
		}
	}
	if half > 0 && lo <= math.Ceil(lo/step)*step-half {
		ticks = append(ticks, plot.Tick{Value: math.Ceil(lo/step)*step - half})
	}
	return ticks
}

// gpuStack is a plot.Plotter drawing the stacked area: one polygon per
// stretch of time in which a job holds GPUs without interruption.
type gpuStack struct {
	bands []band
	end   float64 // seconds
	peak  int
}

// band is one filled polygon in data coordinates (hours, GPUs).
type band struct {
	color color.Color
	pts   []plotter.XY
}

// segment is a piece of a job's band with constant bounds.
type segment struct{ t0, t1, lo, hi float64 }

func newGPUStack(run *Run) (*gpuStack, error) {
	changes := slices.Clone(run.Changes)
	for i, c := range changes {
		if math.IsNaN(c.Time) || math.IsInf(c.Time, 0) || c.Time < 0 {
			return nil, fmt.Errorf("change %d (job %s): time %v is not a finite time >= 0", i, c.Job, c.Time)
		}
		if c.GPUs < 0 {
			return nil, fmt.Errorf("change %d (job %s): %d GPUs", i, c.Job, c.GPUs)
		}
	}
	slices.SortStableFunc(changes, func(a, b Change) int { return cmp.Compare(a.Time, b.Time) })

	end := runEnd(run)
	s := &gpuStack{end: end}

	// Stack order: by the first time a job holds GPUs, then by name.
	order := map[string]int{}
	for _, c := range changes {
		if _, ok := order[c.Job]; !ok && c.GPUs > 0 {
			order[c.Job] = len(order)
		}
	}
	held := make([]int, len(order)) // GPUs per job, by stack position
	open := make([][]segment, len(order))
	var active []int // stack positions holding GPUs, ascending

	closeBand := func(k int) {
		segs := open[k]
		open[k] = nil
		if len(segs) == 0 {
			return
		}
		pts := make([]plotter.XY, 0, 4*len(segs))
		for _, g := range segs {
			pts = append(pts, plotter.XY{X: g.t0 / 3600, Y: g.hi}, plotter.XY{X: g.t1 / 3600, Y: g.hi})
		}
		for i := len(segs) - 1; i >= 0; i-- {
			g := segs[i]
			pts = append(pts, plotter.XY{X: g.t1 / 3600, Y: g.lo}, plotter.XY{X: g.t0 / 3600, Y: g.lo})
		}
		s.bands = append(s.bands, band{color: jobColor(k), pts: pts})
	}
	// fill extends every active job's band over [t0, t1) at the current
	// counts.
	fill := func(t0, t1 float64) {
		if t1 <= t0 {
			return
		}
		sum := 0
		for _, k := range active {
			lo := float64(sum)
			sum += held[k]
			hi := float64(sum)
			segs := open[k]
			if n := len(segs); n > 0 && segs[n-1].lo == lo && segs[n-1].hi == hi && segs[n-1].t1 == t0 {
				segs[n-1].t1 = t1
			} else {
				open[k] = append(segs, segment{t0: t0, t1: t1, lo: lo, hi: hi})
			}
		}
		s.peak = max(s.peak, sum)
	}

	now := 0.0
	for i := 0; i < len(changes); {
		t := math.Min(changes[i].Time, end)
		fill(now, t)
		now = t
		// Apply every change at this time before drawing further.
		for ; i < len(changes) && math.Min(changes[i].Time, end) == t; i++ {
			c := changes[i]
			k, ok := order[c.Job]
			if !ok {
				continue // never held GPUs
			}
			was := held[k]
			held[k] = c.GPUs
			switch {
			case was == 0 && c.GPUs > 0:
				pos, _ := slices.BinarySearch(active, k)
				active = slices.Insert(active, pos, k)
			case was > 0 && c.GPUs == 0:
				pos, _ := slices.BinarySearch(active, k)
				active = slices.Delete(active, pos, pos+1)
				closeBand(k)
			}
		}
	}
	fill(now, end)
	for _, k := range slices.Clone(active) {
		closeBand(k)
	}
	return s, nil
}

// bandGap is the white gap left at the top of each band, so that bands
// of neighbouring jobs stay apart even where their colours are alike.
const bandGap = 0.6 // points

// runEnd is where the time axis of a run's GPU panel ends: the run's end
// time or, if unknown, its last change or completion.
func runEnd(run *Run) float64 {
	end := run.EndTime
	if end > 0 && !math.IsInf(end, 0) {
		return end
	}
	end = 0
	for _, c := range run.Changes {
		if !math.IsInf(c.Time, 0) {
			end = math.Max(end, c.Time)
		}
	}
	for _, j := range run.Jobs {
		if j.Done && j.End > end && !math.IsInf(j.End, 0) {
			end = j.End
		}
	}
	return end
}

// coarsened returns a copy of run whose changes happen at the nearest of
// steps even steps of its time axis, the last change of a job within a
// step winning, so that its GPU panel has at most steps columns whatever
// the number of changes: what a figure a few hundred points wide can show
// anyway. Invalid times are left for newGPUStack to report.
func coarsened(run *Run, steps int) *Run {
	end := runEnd(run)
	if steps < 1 || !(end > 0) {
		return run
	}
	dt := end / float64(steps)
	out := *run
	out.Changes = make([]Change, len(run.Changes))
	for i, c := range run.Changes {
		if c.Time >= 0 && !math.IsInf(c.Time, 0) {
			c.Time = math.Min(end, math.Round(c.Time/dt)*dt)
		}
		out.Changes[i] = c
	}
	out.EndTime = end
	return &out
}

// Plot implements plot.Plotter. Each band is filled short of its top
// edge by bandGap (by at most a third of its height, so that thin bands
// stay visible), leaving a thin line of background between stacked jobs
// at no cost in file size.
func (s *gpuStack) Plot(c draw.Canvas, plt *plot.Plot) {
	tx, ty := plt.Transforms(&c)
	for _, b := range s.bands {
		n := len(b.pts)
		pts := make([]vg.Point, n)
		for i, p := range b.pts {
			pts[i] = vg.Point{X: tx(p.X), Y: ty(p.Y)}
		}
		// The first half of the points is the top edge, left to right;
		// pts[n-1-i] is the bottom below pts[i].
		for i := range n / 2 {
			h := pts[i].Y - pts[n-1-i].Y
			pts[i].Y -= min(vg.Points(bandGap), h/3)
		}
		c.FillPolygon(b.color, c.ClipPolygonXY(pts))
	}
}

// DataRange implements plot.DataRanger.
func (s *gpuStack) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, s.end / 3600, 0, float64(s.peak)
}

// savePlots draws the plots stacked vertically, each with its height, into
// one file whose format follows the extension.
func savePlots(path string, plots []*plot.Plot, heights []vg.Length) error {
	var total vg.Length
	for _, h := range heights {
		total += h
	}
	cw, err := newCanvas(path, plotWidth, total)
	if err != nil {
		return fmt.Errorf("plot %w", err)
	}
	dc := draw.New(cw)
	// Tiles have equal heights; stack sub-canvases by hand instead.
	top := dc.Max.Y
	for i, p := range plots {
		sub := dc
		sub.Max.Y = top
		sub.Min.Y = top - heights[i]
		top = sub.Min.Y
		p.Draw(draw.Crop(sub, vg.Points(4), -vg.Points(8), vg.Points(4), -vg.Points(6)))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := cw.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// plotFormats are the extensions of the files Plot writes (in any case),
// as help text lists them.
var plotFormats = []string{".svg", ".png", ".pdf", ".jpg", ".jpeg"}

// PlotFormats returns the extensions of the files Plot writes: the image
// format follows the extension, in upper or lower case.
func PlotFormats() []string { return slices.Clone(plotFormats) }

// CheckPlotFormat returns an error, starting with path, unless path's
// extension names a format Plot writes; it draws and writes nothing.
func CheckPlotFormat(path string) error {
	_, err := newCanvas(path, 1, 1)
	return err
}

// newCanvas makes an empty canvas for the file's format.
func newCanvas(path string, w, h vg.Length) (vg.CanvasWriterTo, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png":
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(plotDPI))}, nil
	case ".jpg", ".jpeg":
		return vgimg.JpegCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(plotDPI))}, nil
	case ".svg":
		return newSVGCanvas(w, h), nil
	case ".pdf":
		return vgpdf.New(w, h), nil
	case "":
		return nil, fmt.Errorf("%s: no extension to tell the image format by (want one of %s)", path, strings.Join(plotFormats, ", "))
	default:
		return nil, fmt.Errorf("%s: unknown image format %s (want one of %s)", path, ext, strings.Join(plotFormats, ", "))
	}
}
