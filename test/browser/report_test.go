package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/test/vodatest"
)

// repoRoot is the repository's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// browserTools returns node, the playwright-core modules and Chromium, or
// fails saying how to install them.
func browserTools(t *testing.T) (node, modules, chromium string) {
	t.Helper()
	root := repoRoot(t)
	tools := os.Getenv("VODA_TOOLS")
	if tools == "" {
		tools = filepath.Join(root, ".cache", "tools")
	}
	modules = filepath.Join(tools, "browser", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "playwright-core")); err != nil {
		t.Fatalf("playwright-core is not installed in %s: run hack/tools.sh browser (make test does)", modules)
	}
	chromium = os.Getenv("VODA_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("no Chromium at %s: run hack/test-deps.sh (make test does) or set VODA_CHROMIUM", chromium)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: %v", err)
	}
	return node, modules, chromium
}

// artifacts returns the folder screenshots go to.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("VODA_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), ".cache", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pageReport is what testdata/check-page.cjs prints.
type pageReport struct {
	Console    []string `json:"console"`
	PageErrors []string `json:"pageErrors"`
	Requests   []string `json:"requests"`
	Title      string   `json:"title"`
	Charts     []struct {
		Width, Height float64
		Title         string
	} `json:"charts"`
	Tables []struct {
		Caption       string
		Rows, Headers int
	} `json:"tables"`
	Times []struct {
		Datetime, Text string
	} `json:"times"`
	ScrollWidth int `json:"scrollWidth"`
	ClientWidth int `json:"clientWidth"`
}

// runScript runs the playwright script testdata/script with args and
// decodes the JSON it prints into v.
func runScript(t *testing.T, v any, script string, args ...string) {
	t.Helper()
	node, modules, chromium := browserTools(t)
	cmd := exec.Command(node, append([]string{filepath.Join(repoRoot(t), "test", "browser", "testdata", script)}, args...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "VODA_CHROMIUM="+chromium)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", script, strings.Join(args, " "), err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
		t.Fatalf("%s printed %q: %v", script, stdout.String(), err)
	}
	t.Logf("%s %s ran in Chromium in %v", script, strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
}

// checkPage opens url in Chromium in the time zone tz and returns what the
// page showed, saving a screenshot as name.png.
func checkPage(t *testing.T, url, name, tz string) pageReport {
	t.Helper()
	var r pageReport
	runScript(t, &r, "check-page.cjs", url, filepath.Join(artifacts(t), name+".png"), tz)
	return r
}

// simulationReport writes the report of `voda simulate` with args to a
// temporary file and returns its URL.
func simulationReport(t *testing.T, args ...string) string {
	t.Helper()
	page := filepath.Join(t.TempDir(), "report.html")
	cmd := exec.Command(vodatest.Binary(t), append([]string{"simulate", "-q", "--html", page}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("voda simulate --html: %v\n%s", err, out)
	}
	return "file://" + page
}

// TestSimulationReportInChromium writes a simulation report with
// `voda simulate --html` and opens it in Chromium: every chart is drawn
// with a size, every table has a caption and headers, the page makes no
// request and logs no error, and the generation time is shown in the
// viewer's time zone.
func TestSimulationReportInChromium(t *testing.T) {
	url := simulationReport(t, "--jobs", "60", "--compare", "ElasticFIFO,AFS-L,Goodput")
	r := checkPage(t, url, "simulation-report", "Asia/Kolkata")
	if len(r.Console) > 0 || len(r.PageErrors) > 0 {
		t.Errorf("console %q, page errors %q: want none", r.Console, r.PageErrors)
	}
	if len(r.Requests) > 0 {
		t.Errorf("the page requested %q: want a self-contained page", r.Requests)
	}
	// One JCT CDF and a GPUs-per-job timeline per algorithm.
	if len(r.Charts) < 4 {
		t.Errorf("%d charts drawn, want at least 4", len(r.Charts))
	}
	for i, c := range r.Charts {
		if c.Width < 100 || c.Height < 100 || c.Title == "" {
			t.Errorf("chart %d is %gx%g px titled %q: want a titled chart of some size", i, c.Width, c.Height, c.Title)
		}
	}
	if len(r.Tables) == 0 {
		t.Error("no table")
	}
	for i, tb := range r.Tables {
		if tb.Caption == "" || tb.Headers == 0 || tb.Rows < 2 {
			t.Errorf("table %d: caption %q, %d headers, %d rows", i, tb.Caption, tb.Headers, tb.Rows)
		}
	}
	if len(r.Times) == 0 {
		t.Fatal("no <time> element")
	}
	for _, tm := range r.Times {
		if !strings.Contains(tm.Text, "GMT+5:30") {
			t.Errorf("time %s shown as %q: want it in the viewer's zone (Asia/Kolkata, GMT+5:30)", tm.Datetime, tm.Text)
		}
	}
	if r.ScrollWidth > r.ClientWidth {
		t.Errorf("the page scrolls sideways: %d px wide in a %d px window", r.ScrollWidth, r.ClientWidth)
	}
}

// box is an element's box on the page, in CSS pixels.
type box struct{ X, Y, W, H float64 }

func (b box) String() string { return fmt.Sprintf("(%.1f,%.1f %.1fx%.1f)", b.X, b.Y, b.W, b.H) }

// overlap is how far a and b overlap: the lesser of the widths and heights
// of their intersection, 0 if they do not intersect.
func (a box) overlap(b box) float64 {
	w := math.Min(a.X+a.W, b.X+b.W) - math.Max(a.X, b.X)
	h := math.Min(a.Y+a.H, b.Y+b.H) - math.Max(a.Y, b.Y)
	return math.Max(0, math.Min(w, h))
}

// inside reports whether a lies within b, give or take slack.
func (a box) inside(b box, slack float64) bool {
	return a.X >= b.X-slack && a.Y >= b.Y-slack && a.X+a.W <= b.X+b.W+slack && a.Y+a.H <= b.Y+b.H+slack
}

// chartsReport is what testdata/report-charts.cjs prints.
type chartsReport struct {
	Variants []struct {
		Font   string
		Charts []struct {
			Title string
			Box   box
			Texts []struct {
				Text, Class string
				Box         box
			}
			Entries []struct {
				Label     string
				LabelBox  *box
				SampleBox *box
			}
			Strokes []string
		}
	}
}

// overlapSlack is how far, in CSS pixels, two boxes may overlap without
// counting: less than the antialiasing of one edge.
const overlapSlack = 0.5

// TestSimulationReportChartText opens reports comparing every algorithm
// (and, with long labels, every algorithm with every placer) in Chromium,
// as they are and with their chart text forced into fonts much wider
// (monospace) or of other widths (serif) than the Liberation Sans the
// charts are laid out with, as on machines that lack it. In every chart no
// two texts (title, axis labels, tick labels, legend labels, the cluster
// label) overlap, every legend label stays clear of every legend line
// sample, and all text stays inside the chart. The JCT CDF draws each
// series in its own colour, up to twelve. Every chart is screenshotted.
func TestSimulationReportChartText(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		runs int
	}{
		{name: "all-algorithms", args: []string{"--compare", "all"}, runs: 9},
		{name: "all-algorithms-and-placers", args: []string{"--compare", "all", "--placer", "all"}, runs: 18},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := simulationReport(t, append([]string{"--jobs", "60"}, tc.args...)...)
			var r chartsReport
			runScript(t, &r, "report-charts.cjs", url, filepath.Join(artifacts(t), "report-"+tc.name), "", "monospace", "serif")
			if len(r.Variants) != 3 {
				t.Fatalf("%d font variants measured, want 3", len(r.Variants))
			}
			for _, v := range r.Variants {
				font := v.Font
				if font == "" {
					font = "the page's fonts"
				}
				if len(v.Charts) < 2 {
					t.Fatalf("%s: %d charts, want a JCT CDF and GPU panels", font, len(v.Charts))
				}
				for ci, c := range v.Charts {
					where := fmt.Sprintf("%s, chart %d (%s)", font, ci+1, c.Title)
					if len(c.Texts) < 5 {
						t.Errorf("%s: %d texts, want a title, axis labels and ticks", where, len(c.Texts))
					}
					for i, a := range c.Texts {
						if !a.Box.inside(c.Box, overlapSlack) {
							t.Errorf("%s: %q %v sticks out of the chart %v", where, a.Text, a.Box, c.Box)
						}
						for _, b := range c.Texts[:i] {
							if o := a.Box.overlap(b.Box); o > overlapSlack {
								t.Errorf("%s: %q %v and %q %v overlap by %.1f px", where, b.Text, b.Box, a.Text, a.Box, o)
							}
						}
					}
					wantEntries := 1 // the cluster's GPUs
					if ci == 0 {
						wantEntries = tc.runs
					}
					if len(c.Entries) != wantEntries {
						t.Errorf("%s: %d legend entries, want %d", where, len(c.Entries), wantEntries)
					}
					for _, e := range c.Entries {
						if e.LabelBox == nil || e.SampleBox == nil || e.SampleBox.W < 10 {
							t.Errorf("%s: legend entry %q without a label or a line sample", where, e.Label)
							continue
						}
						for _, o := range c.Entries {
							if o.SampleBox != nil && e.LabelBox.overlap(*o.SampleBox) > overlapSlack {
								t.Errorf("%s: legend label %q %v overlaps the line sample of %q %v", where, e.Label, *e.LabelBox, o.Label, *o.SampleBox)
							}
						}
					}
					if ci == 0 {
						if want := min(tc.runs, 12); len(c.Strokes) != want {
							t.Errorf("%s: %d colours among the series' lines %q, want %d", where, len(c.Strokes), c.Strokes, want)
						}
					}
				}
			}
		})
	}
}
