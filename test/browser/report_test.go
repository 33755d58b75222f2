package browser

import (
	"bytes"
	"encoding/json"
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

// checkPage opens url in Chromium in the time zone tz and returns what the
// page showed, saving a screenshot as name.png.
func checkPage(t *testing.T, url, name, tz string) pageReport {
	t.Helper()
	node, modules, chromium := browserTools(t)
	shot := filepath.Join(artifacts(t), name+".png")
	cmd := exec.Command(node, filepath.Join(repoRoot(t), "test", "browser", "testdata", "check-page.cjs"), url, shot, tz)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "VODA_CHROMIUM="+chromium)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("check-page.cjs %s: %v\n%s", url, err, stderr.String())
	}
	var r pageReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("check-page.cjs printed %q: %v", stdout.String(), err)
	}
	t.Logf("%s opened in Chromium in %v; screenshot %s", url, time.Since(start).Round(time.Millisecond), shot)
	return r
}

// TestSimulationReportInChromium writes a simulation report with
// `voda simulate --html` and opens it in Chromium: every chart is drawn
// with a size, every table has a caption and headers, the page makes no
// request and logs no error, and the generation time is shown in the
// viewer's time zone.
func TestSimulationReportInChromium(t *testing.T) {
	bin := vodatest.Binary(t)
	page := filepath.Join(t.TempDir(), "report.html")
	cmd := exec.Command(bin, "simulate", "--jobs", "60", "--compare", "ElasticFIFO,AFS-L,Goodput", "--html", page, "-q")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("voda simulate --html: %v\n%s", err, out)
	}
	r := checkPage(t, "file://"+page, "simulation-report", "Asia/Kolkata")
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
