package report

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

var htmlTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))

// evil is a name that must come out escaped wherever it appears.
const evil = `<script>alert("x")</script>&'`

func htmlRuns(workloads, algorithms int) [][]*Run {
	var runs [][]*Run
	for w := range workloads {
		var row []*Run
		for a := range algorithms {
			r := syntheticRun(fmt.Sprintf("algo-%d", a), uint64(w+1), 30, 8, a%2 == 1)
			r.Workload = fmt.Sprintf("workload-%d", w+1)
			r.Placer = "topology"
			row = append(row, r)
		}
		runs = append(runs, row)
	}
	return runs
}

func TestWriteHTML(t *testing.T) {
	evilRuns := htmlRuns(1, 2)
	evilRuns[0][0].Algorithm = evil
	evilRuns[0][0].Workload = evil
	evilRuns[0][1].Workload = evil
	evilRuns[0][1].Placer = evil
	evilRuns[0][1].Jobs[0].App = evil
	evilRuns[0][1].Estimator = []EstimatorError{{App: evil, NewPlacements: 3, NewPlacementMeanErr: 0.1, NewPlacementMaxErr: 0.2}}
	estimated := htmlRuns(2, 2)
	for _, row := range estimated {
		row[1].Estimator = []EstimatorError{{App: "bert", NewPlacements: 3, NewPlacementMeanErr: 0.1, NewPlacementMaxErr: 0.2, NewBatches: 1, NewBatchMeanErr: 0.05, NewBatchMaxErr: 0.05}}
	}
	for _, tc := range []struct {
		name     string
		runs     [][]*Run
		opts     HTMLOptions
		charts   int // <svg> elements: a CDF per workload, then timelines
		tables   int
		sections int
		want     []string // in the page's text
	}{
		{name: "one run", runs: htmlRuns(1, 1), charts: 2, tables: 2, sections: 1,
			want: []string{"Workload workload-1", "algo-0: blue solid line with circle markers"}},
		{name: "three algorithms", runs: htmlRuns(1, 3), charts: 4, tables: 2, sections: 1,
			want: []string{"algo-2: bluish green dotted line with square markers"}},
		{name: "three workloads", runs: htmlRuns(3, 2), charts: 9, tables: 8, sections: 4,
			want: []string{"Mean over 3 workloads", "Workload workload-3", "workload-1, workload-2, workload-3"}},
		{name: "estimator errors", runs: estimated, charts: 6, tables: 9, sections: 3,
			want: []string{"Step-time prediction errors before a job first ran a configuration, mean over 2 workloads"}},
		{name: "timelines capped", runs: htmlRuns(3, 2), opts: HTMLOptions{MaxTimelines: 4}, charts: 6, tables: 8, sections: 4,
			want: []string{"for 1 of the 2 runs of each workload", "GPUs held per job over time not shown for algo-1."}},
		{name: "no timelines", runs: htmlRuns(2, 2), opts: HTMLOptions{MaxTimelines: -1}, charts: 2, tables: 6, sections: 3},
		{name: "escaped names", runs: evilRuns, opts: HTMLOptions{Command: "voda simulate --compare '" + evil + "'", Version: evil}, charts: 3, tables: 3, sections: 1,
			want: []string{"Workload " + evil, evil + " (topology): blue solid line", "voda simulate --compare '" + evil + "'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Generated = htmlTime
			var buf bytes.Buffer
			if err := WriteHTML(&buf, "Report "+tc.name, tc.runs, tc.opts); err != nil {
				t.Fatal(err)
			}
			page := buf.String()
			checkBalanced(t, page)
			checkSelfContained(t, page)
			doc, err := html.Parse(strings.NewReader(page))
			if err != nil {
				t.Fatal(err)
			}
			root := find(doc, "html")
			if len(root) != 1 || attr(root[0], "lang") != "en" {
				t.Errorf("want one <html lang=en>")
			}
			if got := text(find(doc, "title")[0]); got != "Report "+tc.name {
				t.Errorf("title %q", got)
			}
			if n := len(find(doc, "h1")); n != 1 {
				t.Errorf("%d <h1>, want 1", n)
			}
			if n := len(find(doc, "section")); n != tc.sections {
				t.Errorf("%d sections, want %d", n, tc.sections)
			}
			svgs := find(doc, "svg")
			if len(svgs) != tc.charts {
				t.Errorf("%d <svg>, want %d", len(svgs), tc.charts)
			}
			for i, s := range svgs {
				titles, descs := find(s, "title"), find(s, "desc")
				if attr(s, "role") != "img" || len(titles) == 0 || len(descs) == 0 || text(titles[0]) == "" || text(descs[0]) == "" {
					t.Errorf("svg %d: role %q, %d titles, %d descs; want role=img, a title and a description", i, attr(s, "role"), len(titles), len(descs))
				}
				if attr(s, "viewbox") == "" || attr(s, "width") != "" {
					t.Errorf("svg %d: viewBox %q width %q, want a viewBox and no fixed width", i, attr(s, "viewbox"), attr(s, "width"))
				}
				if fig := s.Parent; fig.Data != "figure" || len(find(fig, "figcaption")) != 1 {
					t.Errorf("svg %d is not in a figure with a caption", i)
				}
			}
			tables := find(doc, "table")
			if len(tables) != tc.tables {
				t.Errorf("%d tables, want %d", len(tables), tc.tables)
			}
			for i, tb := range tables {
				checkTable(t, i, tb)
			}
			ids := map[string]bool{}
			for _, n := range find(doc, "") {
				if id := attr(n, "id"); id != "" {
					if ids[id] {
						t.Errorf("id %q twice", id)
					}
					ids[id] = true
				}
			}
			for _, a := range find(doc, "a") {
				if h := attr(a, "href"); !strings.HasPrefix(h, "#") || !ids[h[1:]] {
					t.Errorf("link to %q, want one to a section of the page", h)
				}
			}
			for _, n := range find(doc, "") {
				for _, ref := range []string{"aria-labelledby", "aria-describedby"} {
					if id := attr(n, ref); id != "" && !ids[id] {
						t.Errorf("%s=%q names no element", ref, id)
					}
				}
			}
			if n := len(find(doc, "script")); n != 1 {
				t.Errorf("%d <script>, want only the time zone one", n)
			}
			times := find(doc, "time")
			if len(times) != 1 || attr(times[0], "datetime") != "2026-03-04T04:06:07Z" || text(times[0]) != "2026-03-04 04:06:07 UTC" {
				t.Errorf("generation time: want <time datetime=2026-03-04T04:06:07Z>2026-03-04 04:06:07 UTC, got %d <time>", len(times))
			}
			all := text(doc)
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("page text lacks %q", w)
				}
			}
			if strings.Contains(page, "<script>alert") || strings.Contains(page, "ZgotmplZ") {
				t.Errorf("a name came out unescaped or was filtered")
			}
		})
	}
}

// checkBalanced checks that every element but void ones is closed, in
// order, and that the page starts with the HTML5 doctype.
func checkBalanced(t *testing.T, page string) {
	t.Helper()
	if !strings.HasPrefix(page, "<!DOCTYPE html>\n") {
		t.Errorf("page starts %q, want the HTML5 doctype", page[:min(len(page), 20)])
	}
	void := map[string]bool{"meta": true, "link": true, "br": true, "hr": true, "img": true, "input": true}
	z := html.NewTokenizer(strings.NewReader(page))
	var stack []string
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatal(z.Err())
			}
			if len(stack) > 0 {
				t.Errorf("unclosed elements %v", stack)
			}
			return
		case html.StartTagToken:
			name, _ := z.TagName()
			if !void[string(name)] {
				stack = append(stack, string(name))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if len(stack) == 0 || stack[len(stack)-1] != string(name) {
				t.Fatalf("</%s> closes %v", name, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
}

// checkSelfContained checks that the page references nothing outside
// itself: no URL but the SVG namespace, no external scripts, styles,
// images or fonts.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	rest := regexp.MustCompile(`xmlns(:\w+)?="http://www\.w3\.org/[^"]*"`).ReplaceAllString(page, "")
	for _, bad := range []string{"http://", "https://", "url(", "@import", " src=", "<link", "<img", "<iframe"} {
		if i := strings.Index(rest, bad); i >= 0 {
			t.Errorf("page has %q: ...%s...", bad, rest[max(0, i-60):min(len(rest), i+60)])
		}
	}
}

// checkTable checks that a table has a caption, column headers and a
// row header on every row.
func checkTable(t *testing.T, i int, tb *html.Node) {
	t.Helper()
	if c := find(tb, "caption"); len(c) != 1 || text(c[0]) == "" {
		t.Errorf("table %d has no caption", i)
	}
	var cols int
	for _, th := range find(tb, "th") {
		switch attr(th, "scope") {
		case "col":
			cols++
		case "row":
		default:
			t.Errorf("table %d: <th> %q without scope", i, text(th))
		}
	}
	if cols < 3 {
		t.Errorf("table %d: %d column headers", i, cols)
	}
	rows := find(find(tb, "tbody")[0], "tr")
	if len(rows) == 0 {
		t.Errorf("table %d has no rows", i)
	}
	for _, r := range rows {
		cells := 0
		for c := r.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode {
				cells++
			}
		}
		if r.FirstChild == nil || r.FirstChild.Data != "th" || attr(r.FirstChild, "scope") != "row" || cells != cols {
			t.Errorf("table %d: row %q has %d cells for %d columns, want a row header first", i, text(r), cells, cols)
		}
	}
}

// find returns the elements named tag (any with "") under n, n included,
// in document order.
func find(n *html.Node, tag string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (tag == "" || n.Data == tag) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val
		}
	}
	return ""
}

// text is the text under n, outside scripts and styles.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style") {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func TestWriteHTMLDeterministic(t *testing.T) {
	write := func(at time.Time) string {
		var buf bytes.Buffer
		if err := WriteHTML(&buf, "r", htmlRuns(2, 3), HTMLOptions{Generated: at}); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	a, b := write(htmlTime), write(htmlTime)
	if a != b {
		t.Fatal("two pages of the same runs at the same time differ")
	}
	later := write(htmlTime.Add(90 * time.Minute))
	stamp := regexp.MustCompile(`<time datetime="[^"]*" data-local>[^<]*</time>`)
	if later == a || stamp.ReplaceAllString(later, "") != stamp.ReplaceAllString(a, "") {
		t.Error("pages made at different times differ beyond the time stamp")
	}
	var now bytes.Buffer
	before := time.Now().UTC().Truncate(time.Second)
	if err := WriteHTML(&now, "r", htmlRuns(1, 1), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<time datetime="([^"]*)"`).FindStringSubmatch(now.String())
	got, err := time.Parse(time.RFC3339, m[1])
	if err != nil || got.Before(before) || got.After(time.Now()) {
		t.Errorf("zero Generated: page dated %v (%v), want now", m[1], err)
	}
}

func TestWriteHTMLErrors(t *testing.T) {
	ragged := htmlRuns(2, 2)
	ragged[1] = ragged[1][:1]
	nilRun := htmlRuns(1, 2)
	nilRun[0][1] = nil
	badChange := htmlRuns(1, 1)
	badChange[0][0].Changes = []Change{{Time: -1, Job: "a", GPUs: 1}}
	for _, tc := range []struct {
		name string
		runs [][]*Run
		want string
	}{
		{"no runs", nil, "no runs"},
		{"empty workload", [][]*Run{{}}, "no runs"},
		{"ragged", ragged, "workload 2 has 1 runs, workload 1 has 2"},
		{"nil run", nilRun, "workload 1: run 2 is nil"},
		{"bad change", badChange, "change 0 (job a)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteHTML(&buf, "", tc.runs, HTMLOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes despite the error", buf.Len())
			}
		})
	}
}

func TestCoarsened(t *testing.T) {
	run := syntheticRun("elastic", 3, 400, 64, true)
	orig := slices.Clone(run.Changes)
	c := coarsened(run, 50)
	if !slices.Equal(orig, run.Changes) {
		t.Error("coarsened changed the run itself")
	}
	if len(c.Changes) != len(run.Changes) || c.EndTime != runEnd(run) {
		t.Fatalf("coarsened: %d changes, end %v; want %d and %v", len(c.Changes), c.EndTime, len(run.Changes), runEnd(run))
	}
	steps := map[float64]bool{}
	for i, ch := range c.Changes {
		steps[ch.Time] = true
		if d := ch.Time - run.Changes[i].Time; d > runEnd(run)/100+1e-6 || d < -runEnd(run)/100-1e-6 {
			t.Errorf("change %d moved by %v, more than half a step", i, d)
		}
	}
	if len(steps) > 51 {
		t.Errorf("%d distinct times, want at most 51", len(steps))
	}
	fine, err := newGPUStack(run)
	if err != nil {
		t.Fatal(err)
	}
	coarse, err := newGPUStack(c)
	if err != nil {
		t.Fatal(err)
	}
	points := func(s *gpuStack) (n int) {
		for _, b := range s.bands {
			n += len(b.pts)
		}
		return n
	}
	if points(coarse) >= points(fine) {
		t.Errorf("coarsened stack has %d points, the exact one %d", points(coarse), points(fine))
	}
	// A long run with many changes makes a page of bounded size.
	var buf bytes.Buffer
	if err := WriteHTML(&buf, "", [][]*Run{{run, syntheticRun("fifo", 3, 400, 64, false)}}, HTMLOptions{Generated: htmlTime}); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 1<<20 {
		t.Errorf("page of two runs of 400 jobs: %d bytes, want under 1 MiB", buf.Len())
	}
	t.Logf("page of two runs of 400 jobs: %d bytes; exact stack %d points, coarsened %d", buf.Len(), points(fine), points(coarse))
}

// The GPUs held per job over time name the cluster's shape when the run
// has one.
func TestWriteHTMLClusterShape(t *testing.T) {
	for _, shape := range []string{"", "4x8,8x4"} {
		runs := htmlRuns(1, 1)
		runs[0][0].Cluster = shape
		var buf bytes.Buffer
		if err := WriteHTML(&buf, "r", runs, HTMLOptions{Generated: htmlTime}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("on a cluster of %d GPUs (dashed line)", runs[0][0].GPUs)
		if shape != "" {
			want = fmt.Sprintf("on a cluster of %d GPUs, nodes x GPUs 4x8,8x4 (dashed line)", runs[0][0].GPUs)
		}
		if !strings.Contains(buf.String(), want) {
			t.Errorf("cluster %q: the page does not say %q", shape, want)
		}
	}
}
