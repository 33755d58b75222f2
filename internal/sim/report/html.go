package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Defaults of HTMLOptions.
const (
	DefaultHTMLTimelines = 24
	DefaultHTMLSteps     = 400
)

// HTMLOptions tunes WriteHTML.
type HTMLOptions struct {
	// Command is the command line that made the runs, shown as is.
	Command string
	// Version is the simulator's version.
	Version string
	// Generated is when the page was made, shown in UTC and, where the
	// viewer's browser runs scripts, in the viewer's time zone; the zero
	// time means now.
	Generated time.Time
	// MaxTimelines bounds the panels of GPUs held per job over time on
	// the page, over all workloads; 0 is DefaultHTMLTimelines, negative
	// none. Past it each workload shows the same number of runs, the
	// first ones, and says which it leaves out.
	MaxTimelines int
	// TimelineSteps is the number of time steps a GPU panel is drawn
	// with (see coarsened); 0 is DefaultHTMLSteps.
	TimelineSteps int
}

// WriteHTML writes one self-contained HTML page reporting the runs,
// runs[workload][i] being the i-th algorithm (and placer) on a workload,
// every workload with the same runs in the same order (as
// sim.Comparison.Run returns them). The page has the title, when and how
// it was made, then, with several workloads, the mean over workloads
// (MeanOverWorkloads), and for each workload the comparison table
// (WriteComparison's columns), the average JCT by application and, with
// goodput estimates, the step-time prediction errors (WriteApps), the
// JCT CDF figure and the GPUs held per job over time for each run (Plot's
// panels). Figures are inline SVG with the palette of Series, titles and
// text descriptions; the page needs no network, fonts or scripts (one
// small script only shows the generation time in the viewer's time zone).
func WriteHTML(w io.Writer, title string, runs [][]*Run, opts HTMLOptions) error {
	page, err := newHTMLPage(title, runs, opts)
	if err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	var buf bytes.Buffer
	if err := htmlTemplate.Execute(&buf, page); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	if _, err := buf.WriteTo(w); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return nil
}

// htmlPage is what htmlTemplate shows.
type htmlPage struct {
	Title         string
	GeneratedISO  string // RFC 3339 in UTC
	GeneratedText string
	Command       string
	Version       string
	Workloads     []string
	Key           []htmlKey
	Notes         []string
	Sections      []htmlSection
}

// htmlKey is how the figures draw one run.
type htmlKey struct {
	Label, Color, Style string
}

type htmlSection struct {
	ID, Heading string
	Tables      []htmlTable
	Charts      []htmlChart
	Notes       []string
}

type htmlTable struct {
	Caption string
	Header  []string
	Rows    []htmlRow
}

type htmlRow struct {
	Head  string // the row header (the algorithm)
	Names []string
	Nums  []string
}

type htmlChart struct {
	SVG     template.HTML
	Caption string
}

func newHTMLPage(title string, runs [][]*Run, opts HTMLOptions) (*htmlPage, error) {
	if len(runs) == 0 || len(runs[0]) == 0 {
		return nil, fmt.Errorf("no runs")
	}
	rows := make([][]Summary, len(runs))
	for wi, row := range runs {
		if len(row) != len(runs[0]) {
			return nil, fmt.Errorf("workload %d has %d runs, workload 1 has %d", wi+1, len(row), len(runs[0]))
		}
		for i, r := range row {
			if r == nil {
				return nil, fmt.Errorf("workload %d: run %d is nil", wi+1, i+1)
			}
			rows[wi] = append(rows[wi], Summarize(r))
		}
	}
	gen := opts.Generated
	if gen.IsZero() {
		gen = time.Now()
	}
	gen = gen.UTC().Truncate(time.Second)
	if title == "" {
		title = "Voda simulation report"
	}
	p := &htmlPage{
		Title:         title,
		GeneratedISO:  gen.Format(time.RFC3339),
		GeneratedText: gen.Format("2006-01-02 15:04:05") + " UTC",
		Command:       opts.Command,
		Version:       opts.Version,
	}
	withPlacer := placersDiffer(runs[0])
	for i, r := range runs[0] {
		s := Series(i)
		p.Key = append(p.Key, htmlKey{Label: runLabel(r, i, withPlacer), Color: s.Hex(), Style: s.Describe()})
	}
	for wi, row := range runs {
		p.Workloads = append(p.Workloads, workloadName(row[0], wi))
	}

	maxTimelines := opts.MaxTimelines
	if maxTimelines == 0 {
		maxTimelines = DefaultHTMLTimelines
	}
	perWorkload := len(runs[0])
	if total := len(runs) * len(runs[0]); total > maxTimelines {
		perWorkload = max(0, maxTimelines/len(runs))
		if maxTimelines > 0 {
			perWorkload = max(1, perWorkload)
		}
		p.Notes = append(p.Notes, fmt.Sprintf(
			"To keep the page small it shows the GPUs held per job over time for %d of the %d runs of each workload; 'voda simulate --plot' draws them all.",
			perWorkload, len(runs[0])))
	}
	steps := opts.TimelineSteps
	if steps <= 0 {
		steps = DefaultHTMLSteps
	}
	if perWorkload > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf(
			"The GPUs held per job over time are drawn at %d time steps per run, each change moved to the nearest step; the tables use the exact times.", steps))
	}

	if len(runs) > 1 {
		mean := MeanOverWorkloads(rows)
		p.Sections = append(p.Sections, htmlSection{
			ID:      "mean",
			Heading: fmt.Sprintf("Mean over %d workloads", len(runs)),
			Tables:  summaryTables(mean, fmt.Sprintf("mean over %d workloads", len(runs))),
			Notes: []string{"Counts (jobs, restarts, migrations, cycles) add up over the workloads, maxima take the maximum and every other figure is the mean of the workloads' figures; " +
				"by application, an application's contribution is the mean of its contributions."},
		})
	}
	for wi, row := range runs {
		name := workloadName(row[0], wi)
		sec := htmlSection{
			ID:      fmt.Sprintf("workload-%d", wi+1),
			Heading: "Workload " + name,
			Tables:  summaryTables(rows[wi], name),
		}
		charts, notes, err := workloadCharts(row, sec.ID, name, withPlacer, perWorkload, steps)
		if err != nil {
			return nil, fmt.Errorf("workload %s: %w", name, err)
		}
		sec.Charts, sec.Notes = charts, notes
		p.Sections = append(p.Sections, sec)
	}
	return p, nil
}

// workloadName names the workload of a run for headings.
func workloadName(r *Run, wi int) string {
	if r.Workload != "" {
		return r.Workload
	}
	return fmt.Sprintf("%d", wi+1)
}

// summaryTables are the tables of one section: the comparison, the
// average JCT by application and, with goodput estimates, the step-time
// prediction errors.
func summaryTables(sums []Summary, of string) []htmlTable {
	tables := []htmlTable{toHTMLTable(comparisonTable(sums), "Summary, "+of+" (times in simulated seconds)")}
	if apps := appsTable(sums); len(apps.header) > 3 {
		tables = append(tables, toHTMLTable(apps, "Average JCT by application, "+of+
			" (each application's JCTs summed over all completed jobs, in seconds: a row adds up to the average JCT)"))
	}
	if errs := estimatorTable(sums); len(errs.rows) > 0 {
		tables = append(tables, toHTMLTable(errs, "Step-time prediction errors before a job first ran a configuration, "+of))
	}
	return tables
}

func toHTMLTable(t table, caption string) htmlTable {
	h := htmlTable{Caption: caption, Header: t.header}
	for _, r := range t.rows {
		h.Rows = append(h.Rows, htmlRow{Head: r[0], Names: r[1:t.left], Nums: r[t.left:]})
	}
	return h
}

// workloadCharts draws the JCT CDF of a workload's runs and the GPUs per
// job over time of its first limit runs.
func workloadCharts(row []*Run, id, name string, withPlacer bool, limit, steps int) ([]htmlChart, []string, error) {
	cdf, cdfPanel, err := jctCDFPlot(row)
	if err != nil {
		return nil, nil, err
	}
	var desc []string
	for i, r := range row {
		s := Summarize(r)
		desc = append(desc, fmt.Sprintf("%s, %s: %d of %d jobs completed, average %.2f h, median %.2f h, 99th percentile %.2f h",
			runLabel(r, i, withPlacer), Series(i).Describe(), s.Completed, s.Jobs, s.AvgJCT/3600, s.P50JCT/3600, s.P99JCT/3600))
	}
	svg, err := chartSVG(cdf, cdfPanel, id+"-cdf", "Job completion time CDF, workload "+name,
		"Cumulative fraction of jobs completed against job completion time in hours, one line per run. "+strings.Join(desc, "; ")+".")
	if err != nil {
		return nil, nil, err
	}
	charts := []htmlChart{{SVG: svg, Caption: "Job completion time CDF, workload " + name + ": the further left and higher a line, the faster its jobs completed."}}

	var panels []*plot.Plot
	var heights []vg.Length
	xmax := 0.0
	for i, r := range row[:min(limit, len(row))] {
		g, height, err := gpusPlot(coarsened(r, steps), withPlacer)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 || g.X.Max > xmax {
			xmax = g.X.Max
		}
		panels = append(panels, g)
		heights = append(heights, height)
	}
	for i, g := range panels {
		g.X.Max = xmax // one time axis, so the runs line up
		r := row[i]
		label := runLabel(r, i, withPlacer)
		title := fmt.Sprintf("GPUs held per job over time, %s, workload %s", label, name)
		cluster := ""
		switch {
		case r.GPUs > 0 && r.Cluster != "":
			cluster = fmt.Sprintf(" on a cluster of %d GPUs, nodes x GPUs %s (dashed line)", r.GPUs, r.Cluster)
		case r.GPUs > 0:
			cluster = fmt.Sprintf(" on a cluster of %d GPUs (dashed line)", r.GPUs)
		}
		svg, err := chartSVG(g, heights[i], fmt.Sprintf("%s-gpus-%d", id, i+1), title, fmt.Sprintf(
			"Stacked areas of the GPUs each of the %d jobs held over %.1f hours of simulated time%s, one colour per job, the earliest started at the bottom.",
			len(r.Jobs), runEnd(r)/3600, cluster))
		if err != nil {
			return nil, nil, err
		}
		charts = append(charts, htmlChart{SVG: svg, Caption: title + "."})
	}
	var notes []string
	if limit < len(row) {
		var left []string
		for i, r := range row[limit:] {
			left = append(left, runLabel(r, limit+i, withPlacer))
		}
		notes = append(notes, "GPUs held per job over time not shown for "+strings.Join(left, ", ")+".")
	}
	return charts, notes, nil
}

// chartSVG draws p as an inline SVG element of the page's width and the
// given height, scaling with the page, with title and desc as its
// accessible name and description. The drawing is gonum's SVG, whose
// text it escapes; only the opening tag is replaced.
func chartSVG(p *plot.Plot, height vg.Length, id, title, desc string) (template.HTML, error) {
	c := newSVGCanvas(plotWidth, height)
	p.Draw(draw.Crop(draw.New(c), vg.Points(4), -vg.Points(8), vg.Points(4), -vg.Points(6)))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	start := strings.Index(s, "<svg")
	if start < 0 {
		return "", fmt.Errorf("gonum's SVG has no <svg> element")
	}
	end := strings.IndexByte(s[start:], '>')
	if end < 0 {
		return "", fmt.Errorf("gonum's SVG has no <svg> element")
	}
	body := strings.TrimSpace(s[start+end+1:])
	esc := template.HTMLEscapeString
	head := fmt.Sprintf(`<svg class="chart" viewBox="0 0 %s %s" xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="%s-title" aria-describedby="%s-desc">`+
		`<title id="%s-title">%s</title><desc id="%s-desc">%s</desc>`,
		svgNum(plotWidth.Points()), svgNum(height.Points()), id, id, id, esc(title), id, esc(desc))
	return template.HTML(head + "\n" + body), nil
}

func svgNum(x float64) string {
	if x == math.Trunc(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

var htmlTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="voda simulate{{if .Version}} {{.Version}}{{end}}">
<title>{{.Title}}</title>
<style>
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: #1a1a1a; background: #fff; line-height: 1.45; margin: 0 auto; padding: 1rem; max-width: 80rem; }
h1 { font-size: 1.6rem; margin: 0.5rem 0; }
h2 { font-size: 1.3rem; margin-top: 2.5rem; border-bottom: 1px solid #767676; }
a { color: #0b57a4; }
a:focus, .scroll:focus { outline: 3px solid #0b57a4; outline-offset: 2px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 0.9em; }
.scroll { overflow-x: auto; margin: 1rem 0; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 0.92rem; }
caption { text-align: left; font-weight: 600; padding: 0.3rem 0; caption-side: top; }
th, td { padding: 0.25rem 0.6rem; border-bottom: 1px solid #c8c8c8; white-space: nowrap; }
thead th { border-bottom: 2px solid #1a1a1a; text-align: right; vertical-align: bottom; }
thead th.name, th[scope=row], td.name { text-align: left; }
td.num { text-align: right; }
tbody tr:nth-child(even) { background: #f3f3f3; }
figure { margin: 1.5rem 0; }
figcaption { font-size: 0.92rem; margin-top: 0.3rem; }
svg.chart { display: block; width: 100%; max-width: 60rem; height: auto; border: 1px solid #c8c8c8; background: #fff; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; border: 1px solid #1a1a1a; vertical-align: -0.1em; margin-right: 0.3em; }
.note { font-size: 0.92rem; color: #404040; }
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<dl class="meta">
<dt>Generated</dt><dd><time datetime="{{.GeneratedISO}}" data-local>{{.GeneratedText}}</time></dd>
{{- if .Command}}
<dt>Command</dt><dd><code>{{.Command}}</code></dd>
{{- end}}
{{- if .Version}}
<dt>Version</dt><dd>{{.Version}}</dd>
{{- end}}
<dt>Workloads</dt><dd>{{range $i, $w := .Workloads}}{{if $i}}, {{end}}{{$w}}{{end}}</dd>
<dt>Line styles</dt><dd><ul>
{{- range .Key}}
<li><span class="swatch" style="background: {{.Color}}"></span>{{.Label}}: {{.Style}}</li>
{{- end}}
</ul></dd>
</dl>
<p class="note">Times are simulated: JCTs, makespans and queueing in seconds or hours from the start of the workload. Wall-clock figures (wall s) vary from run to run.</p>
{{- range .Notes}}
<p class="note">{{.}}</p>
{{- end}}
{{- if gt (len .Sections) 1}}
<nav aria-label="Sections"><ul>
{{- range .Sections}}
<li><a href="#{{.ID}}">{{.Heading}}</a></li>
{{- end}}
</ul></nav>
{{- end}}
</header>
<main>
{{- range .Sections}}
<section id="{{.ID}}" aria-labelledby="{{.ID}}-h">
<h2 id="{{.ID}}-h">{{.Heading}}</h2>
{{- range .Tables}}
<div class="scroll" role="region" aria-label="{{.Caption}}" tabindex="0">
<table>
<caption>{{.Caption}}</caption>
<thead><tr>{{range $i, $h := .Header}}<th scope="col"{{if eq $i 0}} class="name"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr><th scope="row">{{.Head}}</th>{{range .Names}}<td class="name">{{.}}</td>{{end}}{{range .Nums}}<td class="num">{{.}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
</div>
{{- end}}
{{- range .Notes}}
<p class="note">{{.}}</p>
{{- end}}
{{- range .Charts}}
<figure>
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{- end}}
</section>
{{- end}}
</main>
<script>
(function () {
  try {
    var els = document.querySelectorAll("time[data-local]");
    for (var i = 0; i < els.length; i++) {
      var iso = els[i].getAttribute("datetime");
      var d = new Date(iso);
      if (isNaN(d.getTime())) { continue; }
      els[i].textContent = d.toLocaleString(undefined, { dateStyle: "long", timeStyle: "long" });
      els[i].title = iso;
    }
  } catch (e) {
    // Keep the UTC time written in the page.
  }
})();
</script>
</body>
</html>
`))
