package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/sim/polluxdata"
	"github.com/vodascheduler/voda/internal/sim/report"
)

// run executes the voda command with args and returns what it wrote.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// mustRun is run for commands that must succeed.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := run(t, args...)
	if err != nil {
		t.Fatalf("voda %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// requiredSummaryKeys are the JSON keys scripts rely on.
var requiredSummaryKeys = []string{
	"algorithm", "jobs", "completed", "avg_jct_s", "p50_jct_s", "p99_jct_s",
	"makespan_s", "avg_queue_s", "gpu_utilization", "restarts", "migrations", "wall_s",
	"placer", "migrations_per_job", "avg_spread_jobs", "cycles", "place_ms_avg", "place_ms_max",
}

// vodaWorkload is a small workload in the Voda format.
const vodaWorkload = `# three jobs of built-in parametric models
name,submit,app,min_workers,max_workers,requested_workers,duration
job-a,0,resnet50,1,4,2,600
job-b,30,bert,2,8,4,1200
job-c,60,ncf,1,2,1,300
`

func writeWorkload(t *testing.T, dir, name string) string {
	return writeTestFile(t, dir, name, vodaWorkload)
}

// writeTestFile writes content to the file name in dir and returns its path.
func writeTestFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read --json output: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("parse --json output: %v\n%s", err, b)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open --jobs-csv output: %v", err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return rows
}

// tableRows returns the first column of each line of a comparison table
// after its header.
func tableRows(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "algorithm ") && strings.Contains(l, "avg JCT s") {
			if header >= 0 {
				t.Fatalf("two comparison tables in output:\n%s", out)
			}
			header = i
		}
	}
	if header < 0 {
		t.Fatalf("no comparison table in output:\n%s", out)
	}
	var names []string
	for _, l := range lines[header+1:] {
		if f := strings.Fields(l); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

func TestSimulateTextSummary(t *testing.T) {
	t.Parallel()
	stdout, stderr, err := run(t, "simulate", "--jobs", "30", "-q")
	if err != nil {
		t.Fatalf("simulate: %v", err)
	}
	for _, re := range []string{
		`(?m)^algorithm\s+ElasticFIFO$`,
		`(?m)^placer\s+topology$`, // the default
		`(?m)^workload\s+generated-30-seed1$`,
		`(?m)^cluster\s+64 GPUs$`, // 16 nodes x 4 GPUs by default
		`(?m)^jobs\s+30 \(30 completed\)$`,
		`(?m)^avg JCT\s+\d+\.\d s \(\d+\.\d\d h\)$`,
		`(?m)^p50 JCT\s+`,
		`(?m)^p99 JCT\s+`,
		`(?m)^makespan\s+`,
		`(?m)^GPU util\s+\d+\.\d %$`,
		`(?m)^migrations\s+\d+ \(\d+\.\d\d per job\)$`,
		`(?m)^cycles\s+[1-9]\d*$`,
		`(?m)^spread\s+\d+\.\d\d jobs per cycle`,
		`(?m)^placement\s+\d+\.\d{3} ms per cycle \(max \d+\.\d{3} ms\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout) {
			t.Errorf("summary does not match %s:\n%s", re, stdout)
		}
	}
	if stderr != "" {
		t.Errorf("stderr with -q = %q, want empty", stderr)
	}
}

func TestSimulateProgressOnStderr(t *testing.T) {
	t.Parallel()
	quiet := mustRun(t, "simulate", "--jobs", "30", "-q")
	stdout, stderr, err := run(t, "simulate", "--jobs", "30")
	if err != nil {
		t.Fatalf("simulate: %v", err)
	}
	if !strings.Contains(stderr, "simulating") {
		t.Errorf("stderr without -q = %q, want a progress line", stderr)
	}
	// The summary is the same apart from the wall-clock times.
	wall := regexp.MustCompile(`(?m)^(wall|placement) .*$`)
	if diff := cmp.Diff(wall.ReplaceAllString(quiet, ""), wall.ReplaceAllString(stdout, "")); diff != "" {
		t.Errorf("stdout with progress differs from -q (-want,+got):\n%s", diff)
	}
}

func TestSimulateJSON(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "summary.json")
	stdout := mustRun(t, "simulate", "--jobs", "30", "-q", "--json", path)
	var got map[string]any
	readJSON(t, path, &got)
	for _, k := range requiredSummaryKeys {
		if _, ok := got[k]; !ok {
			t.Errorf("JSON summary has no key %q: %v", k, got)
		}
	}
	if got["algorithm"] != "ElasticFIFO" || got["jobs"] != 30.0 || got["completed"] != 30.0 {
		t.Errorf("algorithm, jobs, completed = %v, %v, %v, want ElasticFIFO, 30, 30", got["algorithm"], got["jobs"], got["completed"])
	}
	avg, _ := got["avg_jct_s"].(float64)
	p50, _ := got["p50_jct_s"].(float64)
	p99, _ := got["p99_jct_s"].(float64)
	if !(avg > 0 && p50 > 0 && p50 <= p99) {
		t.Errorf("avg, p50, p99 JCT = %v, %v, %v, want positive with p50 <= p99", avg, p50, p99)
	}
	if u, _ := got["gpu_utilization"].(float64); !(u > 0 && u <= 1) {
		t.Errorf("gpu_utilization = %v, want in (0, 1]", got["gpu_utilization"])
	}
	if got["placer"] != "topology" {
		t.Errorf("placer = %v, want the default, topology", got["placer"])
	}
	// Wall-clock times vary; only their consistency is checked.
	cycles, _ := got["cycles"].(float64)
	placeAvg, _ := got["place_ms_avg"].(float64)
	placeMax, _ := got["place_ms_max"].(float64)
	if !(cycles > 0 && placeAvg >= 0 && placeAvg <= placeMax) {
		t.Errorf("cycles, place_ms_avg, place_ms_max = %v, %v, %v; want cycles > 0 and 0 <= avg <= max", cycles, placeAvg, placeMax)
	}
	restarts, _ := got["restarts"].(float64)
	migrations, _ := got["migrations"].(float64)
	if got["avg_restarts_per_job"] != restarts/30 || got["migrations_per_job"] != migrations/30 {
		t.Errorf("per-job restarts, migrations = %v, %v; want %v, %v", got["avg_restarts_per_job"], got["migrations_per_job"], restarts/30, migrations/30)
	}
	if spread, _ := got["avg_spread_jobs"].(float64); !(spread >= 0 && spread <= 30) {
		t.Errorf("avg_spread_jobs = %v, want within [0, 30]", got["avg_spread_jobs"])
	}
	// The file and the text summary report the same run.
	if want := regexp.MustCompile(`(?m)^avg JCT\s+` + regexp.QuoteMeta(fmt.Sprintf("%.1f s ", avg))); !want.MatchString(stdout) {
		t.Errorf("text summary does not show the JSON's avg JCT %.1f:\n%s", avg, stdout)
	}
}

func TestSimulateJSONToStdout(t *testing.T) {
	t.Parallel()
	stdout := mustRun(t, "simulate", "--jobs", "30", "-q", "--json", "-")
	i := strings.Index(stdout, "{")
	if i < 0 {
		t.Fatalf("no JSON on stdout with --json -:\n%s", stdout)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout[i:]), &got); err != nil {
		t.Fatalf("JSON after the text summary does not parse: %v\n%s", err, stdout[i:])
	}
	if got["jobs"] != 30.0 {
		t.Errorf("jobs = %v, want 30", got["jobs"])
	}
}

// failingWriter fails every write, as a closed stdout or a full disk do.
type failingWriter struct{}

var errDiskFull = errors.New("no space left on device")

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestSimulateWriteError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeWorkload(t, dir, "a.csv")
	writeWorkload(t, dir, "b.csv")
	for _, args := range [][]string{
		{"--jobs", "5"},
		{"--jobs", "5", "--compare", "fifo,afs-l"},
		{"--jobs", "5", "--json", "-"},
		{"--workload", dir},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			cmd := newRootCommand()
			cmd.SetOut(failingWriter{})
			cmd.SetErr(io.Discard)
			cmd.SetArgs(append([]string{"simulate", "-q"}, args...))
			if err := cmd.ExecuteContext(t.Context()); !errors.Is(err, errDiskFull) {
				t.Errorf("error %v, want the write error", err)
			}
		})
	}
}

func TestSimulateCompare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		compare string
		want    []string
	}{
		{compare: "FIFO,elasticfifo,afs-l", want: []string{"FIFO", "ElasticFIFO", "AFS-L"}},
		{compare: " tiresias , , SRJF ", want: []string{"Tiresias", "SRJF"}},
		{compare: "all", want: []string{"FIFO", "ElasticFIFO", "SRJF", "ElasticSRJF", "Tiresias", "ElasticTiresias", "FfDLOptimizer", "AFS-L", "Goodput"}},
		{compare: "ALL", want: []string{"FIFO", "ElasticFIFO", "SRJF", "ElasticSRJF", "Tiresias", "ElasticTiresias", "FfDLOptimizer", "AFS-L", "Goodput"}},
	}
	for _, tc := range tests {
		t.Run(tc.compare, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "summary.json")
			stdout := mustRun(t, "simulate", "--jobs", "30", "-q", "--compare", tc.compare, "--json", path)
			if diff := cmp.Diff(tc.want, tableRows(t, stdout)); diff != "" {
				t.Errorf("table rows (-want,+got):\n%s\n%s", diff, stdout)
			}
			if n := strings.Count(stdout, "30/30"); n != len(tc.want) {
				t.Errorf("%d rows show 30/30 done, want %d:\n%s", n, len(tc.want), stdout)
			}
			var sums []map[string]any
			readJSON(t, path, &sums)
			var names []string
			for _, s := range sums {
				names = append(names, s["algorithm"].(string))
				for _, k := range requiredSummaryKeys {
					if _, ok := s[k]; !ok {
						t.Errorf("JSON summary of %v has no key %q", s["algorithm"], k)
					}
				}
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("JSON summaries (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSimulateJobsCSV(t *testing.T) {
	t.Parallel()
	header := []string{"name", "app", "submit_s", "start_s", "end_s", "jct_s", "queue_s",
		"min_workers", "max_workers", "requested", "restarts", "migrations", "gpu_seconds", "done"}
	check := func(t *testing.T, path string) {
		t.Helper()
		rows := readCSV(t, path)
		if len(rows) != 31 {
			t.Fatalf("%s: %d rows, want a header and 30 jobs", path, len(rows))
		}
		if diff := cmp.Diff(header, rows[0]); diff != "" {
			t.Errorf("%s header (-want,+got):\n%s", path, diff)
		}
		for _, r := range rows[1:] {
			if r[len(r)-1] != "true" {
				t.Errorf("%s: job %s done = %s, want true", path, r[0], r[len(r)-1])
			}
		}
	}

	t.Run("one run", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := filepath.Join(dir, "jobs.csv")
		mustRun(t, "simulate", "--jobs", "30", "-q", "--jobs-csv", path)
		check(t, path)
	})
	t.Run("one file per run", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, "simulate", "--jobs", "30", "-q", "--compare", "fifo,afs-l", "--jobs-csv", filepath.Join(dir, "jobs.csv"))
		for _, name := range []string{"jobs-generated-30-seed1-FIFO.csv", "jobs-generated-30-seed1-AFS-L.csv"} {
			check(t, filepath.Join(dir, name))
		}
		if _, err := os.Stat(filepath.Join(dir, "jobs.csv")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("jobs.csv itself: Stat = %v, want not to exist with several runs", err)
		}
	})
}

// plotHelpFormats returns the file formats the help of --plot lists.
func plotHelpFormats(t *testing.T) []string {
	t.Helper()
	help := mustRun(t, "simulate", "--help")
	line := regexp.MustCompile(`(?m)^\s+--plot string\s+(.*)$`).FindStringSubmatch(help)
	if line == nil {
		t.Fatalf("simulate --help has no --plot line:\n%s", help)
	}
	list := regexp.MustCompile(`to this ((?:\.\w+(?:, | or )?)+) file`).FindStringSubmatch(line[1])
	if list == nil {
		t.Fatalf("--plot help %q does not list the formats as 'to this .a, .b or .c file'", line[1])
	}
	return regexp.MustCompile(`\.\w+`).FindAllString(list[1], -1)
}

func TestSimulatePlot(t *testing.T) {
	t.Parallel()
	// The help lists exactly the formats --plot writes, and each writes
	// its format.
	formats := plotHelpFormats(t)
	if diff := cmp.Diff(report.PlotFormats(), formats); diff != "" {
		t.Errorf("formats in --plot's help (-accepted,+listed):\n%s", diff)
	}
	signatures := map[string][]byte{".png": []byte("\x89PNG"), ".svg": []byte("<svg"), ".pdf": []byte("%PDF"),
		".jpg": {0xFF, 0xD8, 0xFF}, ".jpeg": {0xFF, 0xD8, 0xFF}}
	for _, ext := range formats {
		t.Run(ext, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "x"+ext)
			mustRun(t, "simulate", "--jobs", "30", "-q", "--compare", "fifo,elasticfifo", "--plot", path)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("plot not written: %v", err)
			}
			sig, ok := signatures[ext]
			if !ok {
				t.Fatalf("no signature known for %s", ext)
			}
			if !bytes.Contains(b[:min(len(b), 512)], sig) {
				t.Errorf("%s does not start with the %s signature %q", path, ext, sig)
			}
		})
	}
}

// pollux is a small workload in the Pollux artifact's format, whose
// applications need measured profiles (--profiles).
const polluxWorkload = `name,time,application,num_replicas,batch_size
cifar10-0,107,cifar10,2,2048
bert-1,110,bert,1,12
`

// TestSimulateChecksBeforeRunning gives simulate outputs it cannot write
// and inputs it cannot use: it must fail before the runs start (no
// progress bar), with an error naming the flag, the file and what would
// do, and leave no file behind nor change one that was there.
func TestSimulateChecksBeforeRunning(t *testing.T) {
	t.Parallel()
	hint := "docs/simulator.md#getting-the-pollux-data"
	formats := strings.Join(report.PlotFormats(), ", ")
	for _, tc := range []struct {
		name string
		// args are the flags after --jobs 5; {dir} is the test's
		// directory, which holds kept.json, w/a.csv and w/b.csv (Voda
		// workloads), pollux.csv and foo.csv (a Voda workload of an
		// application without a model); {profiles} is the Pollux
		// artifact's profiles.
		args []string
		want []string
	}{
		{name: "unknown plot format", args: []string{"--plot", "{dir}/x.gif"}, want: []string{"--plot {dir}/x.gif", "unknown image format .gif", formats}},
		{name: "plot without extension", args: []string{"--plot", "{dir}/jct"}, want: []string{"--plot {dir}/jct", "no extension", formats}},
		{name: "plot format after a long run", args: []string{"--workload", "{dir}/w", "--compare", "all", "--json", "{dir}/kept.json", "--plot", "{dir}/x.GIF"},
			want: []string{"--plot {dir}/x.GIF", "unknown image format .gif"}},
		{name: "html in a missing directory", args: []string{"--html", "{dir}/missing/r.html"}, want: []string{"--html: ", "{dir}/missing/r.html", "directory {dir}/missing does not exist"}},
		{name: "json into a directory", args: []string{"--json", "{dir}/w"}, want: []string{"--json: ", "{dir}/w is a directory"}},
		{name: "jobs CSV in a missing directory", args: []string{"--compare", "fifo,afs-l", "--jobs-csv", "{dir}/missing/jobs.csv"},
			want: []string{"--jobs-csv: ", "{dir}/missing/jobs-generated-5-seed1-FIFO.csv", "does not exist"}},
		{name: "plots of a workload directory in a missing directory", args: []string{"--workload", "{dir}/w", "--plot", "{dir}/missing/p.svg"},
			want: []string{"--plot: ", "{dir}/missing/p-a.svg", "does not exist"}},
		{name: "two flags write one file", args: []string{"--json", "{dir}/out", "--html", "{dir}/./out"}, want: []string{"--json and --html both write {dir}/./out"}},
		{name: "pollux workload without profiles", args: []string{"--workload", "{dir}/pollux.csv"},
			want: []string{"workload pollux", "no performance model for cifar10", "--profiles DIR", "../shared/traces/pollux/traces", hint}},
		{name: "application missing from the profiles", args: []string{"--workload", "{dir}/foo.csv", "--profiles", "{profiles}"},
			want: []string{"workload foo", `application "foo"`, "--profiles {profiles} has no profile of it"}},
		{name: "missing workload", args: []string{"--workload", "{dir}/traces/pollux/workloads"},
			want: []string{"{dir}/traces/pollux/workloads", "no such file", hint}},
		{name: "missing profiles", args: []string{"--workload", "{dir}/pollux.csv", "--profiles", "{dir}/traces/pollux/traces"},
			want: []string{"--profiles", "{dir}/traces/pollux/traces", "no such file", hint}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeWorkload(t, filepath.Join(mkdir(t, dir, "w")), "a.csv")
			writeWorkload(t, filepath.Join(dir, "w"), "b.csv")
			writeTestFile(t, dir, "pollux.csv", polluxWorkload)
			writeTestFile(t, dir, "foo.csv", "name,submit,app\nfoo-0,0,foo\n")
			writeTestFile(t, dir, "kept.json", "kept")
			before := listFiles(t, dir)

			profiles := ""
			if slices.Contains(tc.args, "{profiles}") {
				profiles = polluxdata.Traces(t)
			}
			expand := strings.NewReplacer("{dir}", dir, "{profiles}", profiles)
			args := []string{"simulate", "--jobs", "5"}
			for _, a := range tc.args {
				args = append(args, expand.Replace(a))
			}
			_, stderr, err := run(t, args...)
			if err == nil {
				t.Fatalf("voda %s succeeded, want an error", strings.Join(args, " "))
			}
			for _, w := range tc.want {
				if w = expand.Replace(w); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(stderr, "simulating") {
				t.Errorf("the runs started before the error; stderr:\n%s", stderr)
			}
			if diff := cmp.Diff(before, listFiles(t, dir)); diff != "" {
				t.Errorf("files in the test's directory (-before,+after):\n%s", diff)
			}
		})
	}
}

// mkdir makes the directory name in dir and returns its path.
func mkdir(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// listFiles returns every file under dir with its content.
func listFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		files[strings.TrimPrefix(path, dir)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestSimulateWritesToDevices(t *testing.T) {
	t.Parallel()
	// Checking outputs first must not refuse files that are not regular
	// files, nor open them twice.
	mustRun(t, "simulate", "--jobs", "5", "-q", "--json", os.DevNull)
}

func TestSimulateHTML(t *testing.T) {
	t.Parallel()
	wdir := t.TempDir()
	writeWorkload(t, wdir, "b.csv")
	writeWorkload(t, wdir, "a.csv")
	for _, tc := range []struct {
		name string
		args []string
		// svgs counts the figures: a JCT CDF per workload and a panel of
		// GPUs per job per run.
		svgs int
		want []string
	}{
		{name: "generated workload", args: []string{"--jobs", "30", "--compare", "fifo,elasticfifo"}, svgs: 3,
			want: []string{"<title>Voda simulation: FIFO, ElasticFIFO on generated", "<h2 id=\"workload-1-h\">Workload generated",
				"<code>voda simulate --compare fifo,elasticfifo --html ", " --jobs 30 --quiet</code>",
				"FIFO: blue solid line with circle markers", "ElasticFIFO: vermillion dashed line with triangle markers"}},
		{name: "one algorithm", args: []string{"--jobs", "10"}, svgs: 2, want: []string{"Voda simulation: ElasticFIFO on generated"}},
		{name: "workload directory", args: []string{"--workload", wdir, "--compare", "fifo,elasticfifo"}, svgs: 6,
			want: []string{"Voda simulation: FIFO, ElasticFIFO on 2 workloads", "Mean over 2 workloads", "Workload a", "Workload b"}},
		{name: "placers", args: []string{"--jobs", "10", "--algorithm", "fifo", "--placer", "greedy,topology"}, svgs: 3,
			want: []string{"with placers greedy, topology", "FIFO (greedy): blue solid line"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "r.html")
			stdout := mustRun(t, append([]string{"simulate", "-q", "--html", path}, tc.args...)...)
			if !strings.Contains(stdout, "avg JCT") {
				t.Errorf("no text summary on stdout with --html:\n%s", stdout)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("page not written: %v", err)
			}
			page := string(b)
			if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.HasSuffix(page, "</html>\n") {
				t.Errorf("page is not one HTML document: starts %q", page[:min(len(page), 40)])
			}
			if n := strings.Count(page, "<svg "); n != tc.svgs {
				t.Errorf("%d <svg> figures, want %d", n, tc.svgs)
			}
			rest := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
			if strings.Contains(rest, "http://") || strings.Contains(rest, "https://") {
				t.Error("page refers to a URL")
			}
			if !regexp.MustCompile(`<dt>Version</dt><dd>\S+ \(revision \S+\)</dd>`).MatchString(page) {
				t.Error("page does not give the version")
			}
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
	t.Run("unwritable", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "missing", "r.html")
		_, _, err := run(t, "simulate", "-q", "--jobs", "5", "--html", path)
		if err == nil || !strings.HasPrefix(err.Error(), "--html: ") || !strings.Contains(err.Error(), "missing") {
			t.Errorf("error %v, want one naming --html and the file", err)
		}
	})
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"SRJF,AFS-L", "SRJF,AFS-L"},
		{"../shared/traces/x.csv", "../shared/traces/x.csv"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"<script>", "'<script>'"},
	} {
		if got := shellQuote(tc.in); got != tc.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestSimulateErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	workload := writeWorkload(t, dir, "w.csv")
	empty := t.TempDir()
	tests := []struct {
		name string
		args []string
		// want are substrings of the error.
		want []string
	}{
		{name: "unknown algorithm", args: []string{"--algorithm", "nope"}, want: []string{"--algorithm", `"nope"`, "ElasticFIFO"}},
		{name: "unknown compare entry", args: []string{"--compare", "fifo,nope"}, want: []string{"--compare", `"nope"`, "AFS-L"}},
		{name: "compare names nothing", args: []string{"--compare", " , "}, want: []string{"--compare", "no algorithm"}},
		{name: "bad parameter value", args: []string{"--algorithm", "Tiresias", "--param", "threshold=abc"}, want: []string{"Tiresias", "threshold", `"abc"`}},
		{name: "unknown parameter", args: []string{"--param", "bogus=1"}, want: []string{"unknown param", "bogus"}},
		{name: "parameter for another algorithm", args: []string{"--algorithm", "fifo", "--param", "threshold=10"}, want: []string{"FIFO", "unknown param", "threshold"}},
		{name: "parameter without value", args: []string{"--param", "novalue"}, want: []string{"--param", "novalue", "name=value"}},
		{name: "parameter given twice", args: []string{"--algorithm", "tiresias", "--param", "threshold=1", "--param", "THRESHOLD=2"}, want: []string{"--param", "twice"}},
		{name: "no nodes", args: []string{"--nodes", "0"}, want: []string{"--nodes", "at least 1"}},
		{name: "unknown estimator", args: []string{"--estimator", "magic"}, want: []string{"--estimator", `"magic"`, "workers, goodput or oracle"}},
		{name: "oracle with adaptive batches", args: []string{"--oracle", "--adaptive-batch"}, want: []string{"--oracle", "--adaptive-batch"}},
		{name: "oracle with goodput estimates", args: []string{"--oracle", "--estimator", "goodput"}, want: []string{"--oracle", "--estimator goodput"}},
		{name: "adaptive batches on parametric models", args: []string{"--adaptive-batch", "--jobs", "3"}, want: []string{"measured profile", "--profiles"}},
		{name: "no GPUs per node", args: []string{"--gpus-per-node", "0"}, want: []string{"--gpus-per-node", "at least 1"}},
		{name: "negative interval", args: []string{"--interval", "-1s"}, want: []string{"--interval", "negative"}},
		{name: "unknown placer", args: []string{"--placer", "nope"}, want: []string{"--placer", `"nope"`, "topology, greedy", "voda placers"}},
		{name: "unknown placer in a list", args: []string{"--placer", "greedy,nope"}, want: []string{"--placer", `"nope"`, "topology, greedy"}},
		{name: "placer names nothing", args: []string{"--placer", " , "}, want: []string{"--placer", "no placer"}},
		{name: "unknown placer parameter", args: []string{"--placer-param", "bogus=1"}, want: []string{"--placer-param", "topology", "unknown param", "bogus"}},
		{name: "placer parameter for another placer", args: []string{"--placer", "greedy", "--placer-param", "migration_budget=3"}, want: []string{"--placer-param", "greedy", "unknown param", "migration_budget"}},
		{name: "placer parameter no compared placer takes", args: []string{"--placer", "all", "--placer-param", "bogus=1"}, want: []string{"--placer-param bogus", "none of topology, greedy", "voda placers"}},
		{name: "bad placer parameter value", args: []string{"--placer-param", "migration_budget=abc"}, want: []string{"--placer-param", "topology", "migration_budget", `"abc"`}},
		{name: "bad placer parameter value with several placers", args: []string{"--placer", "greedy,topology", "--placer-param", "node_penalty=x"}, want: []string{"--placer-param", "topology", "node_penalty", `"x"`}},
		{name: "negative placer parameter", args: []string{"--placer-param", "restart_cost=-1"}, want: []string{"--placer-param", "topology", "restart_cost", "negative"}},
		{name: "placer parameter without value", args: []string{"--placer-param", "novalue"}, want: []string{"--placer-param", "novalue", "name=value"}},
		{name: "placer parameter given twice", args: []string{"--placer-param", "node_penalty=1", "--placer-param", "NODE_PENALTY=2"}, want: []string{"--placer-param", "twice"}},
		{name: "algorithm parameter given as placer parameter", args: []string{"--algorithm", "tiresias", "--placer", "all", "--placer-param", "threshold=1"}, want: []string{"--placer-param threshold", "none of"}},
		{name: "missing workload", args: []string{"--workload", filepath.Join(dir, "missing.csv")}, want: []string{"workload", "missing.csv"}},
		{name: "unknown format", args: []string{"--workload", workload, "--format", "nope"}, want: []string{"--format", `unknown format "nope"`, "voda"}},
		{name: "wrong format", args: []string{"--workload", workload, "--format", "pollux"}, want: []string{"w.csv"}},
		{name: "empty workload directory", args: []string{"--workload", empty}, want: []string{"workload", "no *.csv files", empty}},
		{name: "missing profiles", args: []string{"--profiles", filepath.Join(dir, "nothing-here")}, want: []string{"--profiles"}},
		{name: "positional argument", args: []string{"extra"}, want: []string{"extra"}},
		{name: "unknown team split", args: []string{"--teams", "fair:4"}, want: []string{"--teams", `unknown kind "fair"`}},
		{name: "team split without count", args: []string{"--teams", "equal"}, want: []string{"--teams", "KIND:N"}},
		{name: "bad quota", args: []string{"--quotas", "team-a=8:4"}, want: []string{"--quotas", "limit 4 below guarantee 8"}},
		{name: "quota of a bad team", args: []string{"--quotas", "Team_A=8"}, want: []string{"--quotas", `team "Team_A"`}},
		{name: "quota given twice", args: []string{"--quotas", "a=1,a=2"}, want: []string{"--quotas", "twice"}},
		{name: "unknown flag", args: []string{"--bogus"}, want: []string{"--bogus"}},
		// A bad --cluster, or one given with --nodes or --gpus-per-node.
		{name: "cluster: empty", args: []string{"--cluster", ""}, want: []string{"--cluster", "no node groups"}},
		{name: "cluster: zero nodes", args: []string{"--cluster", "0x8"}, want: []string{`--cluster "0x8"`, "at least 1 node"}},
		{name: "cluster: zero GPUs", args: []string{"--cluster", "4x8,2x0"}, want: []string{"--cluster", "group 2x0", "at least 1 GPU"}},
		{name: "cluster: negative", args: []string{"--cluster", "-1x8"}, want: []string{"--cluster", `nodes "-1"`, "positive whole number"}},
		{name: "cluster: not a number", args: []string{"--cluster", "4xeight"}, want: []string{"--cluster", `GPUs per node "eight"`}},
		{name: "cluster: fraction", args: []string{"--cluster", "2.5x8"}, want: []string{"--cluster", `nodes "2.5"`}},
		{name: "cluster: no size", args: []string{"--cluster", "4"}, want: []string{"--cluster", `group "4"`, "NODESxGPUS"}},
		{name: "cluster: empty group", args: []string{"--cluster", "4x8,"}, want: []string{"--cluster", `group ""`}},
		{name: "cluster: too many nodes", args: []string{"--cluster", "60000x8,6000x8"}, want: []string{"--cluster", "more than 65536 nodes"}},
		{name: "cluster: too large a node", args: []string{"--cluster", "1x2048"}, want: []string{"--cluster", "2048 GPUs per node", "at most 1024"}},
		{name: "cluster: too many GPUs", args: []string{"--cluster", "2000x1024"}, want: []string{"--cluster", "more than 1048576 GPUs"}},
		{name: "cluster: with --nodes", args: []string{"--cluster", "4x8", "--nodes", "16"}, want: []string{"--cluster", "--nodes or --gpus-per-node"}},
		{name: "cluster: with --gpus-per-node", args: []string{"--gpus-per-node", "8", "--cluster", "4x8"}, want: []string{"--cluster", "--nodes or --gpus-per-node"}},
		{name: "too many --nodes", args: []string{"--nodes", "70000", "--gpus-per-node", "1"}, want: []string{"--nodes 70000", "more than 65536 nodes"}},
		{name: "too large --gpus-per-node", args: []string{"--gpus-per-node", "4096"}, want: []string{"--gpus-per-node 4096", "at most 1024"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"simulate", "-q", "--jobs", "5"}, tc.args...)
			stdout, _, err := run(t, args...)
			if err == nil {
				t.Fatalf("voda %s succeeded, want an error; stdout:\n%s", strings.Join(args, " "), stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(stdout, "avg JCT") {
				t.Errorf("a summary was printed despite the error:\n%s", stdout)
			}
		})
	}
}

func TestSimulateMissingWorkloadIsNotExist(t *testing.T) {
	t.Parallel()
	_, _, err := run(t, "simulate", "-q", "--workload", filepath.Join(t.TempDir(), "missing.csv"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error = %v, want one wrapping fs.ErrNotExist", err)
	}
}

func TestSimulateWorkloadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeWorkload(t, dir, "small.csv")
	for _, format := range []string{"auto", "voda", "VODA"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			stdout := mustRun(t, "simulate", "-q", "--workload", path, "--format", format)
			for _, re := range []string{`(?m)^workload\s+small$`, `(?m)^jobs\s+3 \(3 completed\)$`} {
				if !regexp.MustCompile(re).MatchString(stdout) {
					t.Errorf("summary does not match %s:\n%s", re, stdout)
				}
			}
		})
	}
}

func TestSimulateWorkloadDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeWorkload(t, dir, "b.csv")
	writeWorkload(t, dir, "a.csv")
	// Not a workload: only *.csv files are read.
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a workload"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	jsonPath, plot := filepath.Join(out, "s.json"), filepath.Join(out, "jct.svg")
	stdout := mustRun(t, "simulate", "-q", "--workload", dir, "--compare", "fifo,elasticfifo",
		"--json", jsonPath, "--jobs-csv", filepath.Join(out, "jobs.csv"), "--plot", plot)

	// Workloads in name order, then the mean.
	ia, ib, im := strings.Index(stdout, "== a\n"), strings.Index(stdout, "== b\n"), strings.Index(stdout, "== mean over 2 workloads\n")
	if ia < 0 || ib < 0 || im < 0 || !(ia < ib && ib < im) {
		t.Errorf("want sections == a, == b, == mean over 2 workloads in that order:\n%s", stdout)
	}
	if im >= 0 {
		if diff := cmp.Diff([]string{"FIFO", "ElasticFIFO"}, tableRows(t, stdout[im:])); diff != "" {
			t.Errorf("mean table rows (-want,+got):\n%s", diff)
		}
		// Both workloads are the same three jobs: the mean counts six.
		if n := strings.Count(stdout[im:], "6/6"); n != 2 {
			t.Errorf("mean table shows 6/6 done %d times, want 2:\n%s", n, stdout[im:])
		}
	}

	var sums []map[string]any
	readJSON(t, jsonPath, &sums)
	var got []string
	for _, s := range sums {
		got = append(got, s["workload"].(string)+"/"+s["algorithm"].(string))
	}
	if diff := cmp.Diff([]string{"a/FIFO", "a/ElasticFIFO", "b/FIFO", "b/ElasticFIFO"}, got); diff != "" {
		t.Errorf("JSON summaries (-want,+got):\n%s", diff)
	}
	for _, name := range []string{"jobs-a-FIFO.csv", "jobs-a-ElasticFIFO.csv", "jobs-b-FIFO.csv", "jobs-b-ElasticFIFO.csv"} {
		if rows := readCSV(t, filepath.Join(out, name)); len(rows) != 4 {
			t.Errorf("%s: %d rows, want a header and 3 jobs", name, len(rows))
		}
	}
	for _, name := range []string{"jct-a.svg", "jct-b.svg"} {
		if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v, want a non-empty file", name, err)
		}
	}
}

func TestSimulateHelp(t *testing.T) {
	t.Parallel()
	stdout := mustRun(t, "simulate", "--help")
	for _, flag := range []string{"--workload", "--format", "--profiles", "--algorithm", "--compare",
		"--param", "--placer", "--placer-param", "--interval", "--json", "--jobs-csv", "--plot", "--html"} {
		if !regexp.MustCompile(`(?m)^\s+(-\w, )?` + regexp.QuoteMeta(flag) + `(\s|$)`).MatchString(stdout) {
			t.Errorf("simulate --help does not list %s:\n%s", flag, stdout)
		}
	}
	// Both placer flags point to the listing of placers.
	for _, flag := range []string{"--placer", "--placer-param"} {
		if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(flag) + ` .*'voda placers'`).MatchString(stdout) {
			t.Errorf("simulate --help: %s does not mention 'voda placers':\n%s", flag, stdout)
		}
	}
}

// parseListing reads the output of 'voda algorithms' or 'voda placers'
// after its header: entry lines start in the first column, parameter
// lines (flag name=<...>) are indented under their entry.
func parseListing(lines []string, flag string) (names []string, params map[string][]string) {
	params = map[string][]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		switch {
		case len(f) == 0:
		case !strings.HasPrefix(l, " "):
			names = append(names, f[0])
		case len(names) > 0 && f[0] == flag:
			name, _, _ := strings.Cut(f[1], "=")
			params[names[len(names)-1]] = append(params[names[len(names)-1]], name)
		}
	}
	return names, params
}

func TestAlgorithmsCommand(t *testing.T) {
	t.Parallel()
	stdout := mustRun(t, "algorithms")
	lines := strings.Split(stdout, "\n")
	names, params := parseListing(lines, "--param")
	want := []string{"FIFO", "ElasticFIFO", "SRJF", "ElasticSRJF", "Tiresias", "ElasticTiresias", "FfDLOptimizer", "AFS-L", "Goodput"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("algorithms (-want,+got):\n%s\n%s", diff, stdout)
	}
	if !strings.HasPrefix(lines[0], "NAME") {
		t.Errorf("first line = %q, want the NAME header", lines[0])
	}
	if diff := cmp.Diff([]string{"threshold", "starvation"}, params["Tiresias"]); diff != "" {
		t.Errorf("Tiresias params (-want,+got):\n%s\n%s", diff, stdout)
	}
	if diff := cmp.Diff([]string{"payback", "hold", "starve"}, params["Goodput"]); diff != "" {
		t.Errorf("Goodput params (-want,+got):\n%s\n%s", diff, stdout)
	}
	if p := params["FIFO"]; len(p) != 0 {
		t.Errorf("FIFO params = %v, want none", p)
	}
	if !strings.Contains(stdout, "--param threshold=<threshold> (default ") {
		t.Errorf("algorithms does not show how to set threshold:\n%s", stdout)
	}
}

func polluxDir(t *testing.T) string { return polluxdata.Dir(t) }

func TestSimulatePolluxTiresias(t *testing.T) {
	t.Parallel()
	dir := polluxDir(t)
	path := filepath.Join(t.TempDir(), "s.json")
	mustRun(t, "simulate",
		"--workload", filepath.Join(dir, "workloads", "workload-6.csv"),
		"--profiles", filepath.Join(dir, "traces"),
		"--interval", "60s", "--algorithm", "tiresias",
		"--param", "threshold=57600", "--param", "starvation=0",
		"--placer", "greedy", // the artifact's placement
		"--json", path, "-q")
	var got map[string]any
	readJSON(t, path, &got)
	const want = 3469.69
	avg, _ := got["avg_jct_s"].(float64)
	if math.Abs(avg-want) > 0.005*want {
		t.Errorf("avg_jct_s = %v, want %v within 0.5%%", avg, want)
	}
	if got["jobs"] != 160.0 || got["completed"] != 160.0 {
		t.Errorf("jobs, completed = %v, %v, want 160, 160", got["jobs"], got["completed"])
	}
}

// tableCells returns the first two columns (algorithm and placer) of each
// row of the comparison table in out, as "algorithm/placer".
func tableCells(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "algorithm" && f[1] == "placer" {
			var cells []string
			for _, r := range lines[i+1:] {
				f := strings.Fields(r)
				if len(f) < 2 {
					break
				}
				cells = append(cells, f[0]+"/"+f[1])
			}
			return cells
		}
	}
	t.Fatalf("no comparison table with a placer column in output:\n%s", out)
	return nil
}

func TestSimulatePlacers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		placer string
		want   []string // algorithm/placer, in table order
	}{
		{placer: "greedy", want: []string{"FIFO/greedy", "AFS-L/greedy"}},
		{placer: "Topology, GREEDY", want: []string{"FIFO/topology", "FIFO/greedy", "AFS-L/topology", "AFS-L/greedy"}},
		{placer: "greedy,topology,greedy", want: []string{"FIFO/greedy", "FIFO/topology", "AFS-L/greedy", "AFS-L/topology"}},
		{placer: "all", want: []string{"FIFO/topology", "FIFO/greedy", "AFS-L/topology", "AFS-L/greedy"}},
		{placer: "ALL", want: []string{"FIFO/topology", "FIFO/greedy", "AFS-L/topology", "AFS-L/greedy"}},
	}
	for _, tc := range tests {
		t.Run(tc.placer, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "summary.json")
			stdout := mustRun(t, "simulate", "--jobs", "30", "-q", "--compare", "fifo,afs-l", "--placer", tc.placer,
				"--json", path, "--jobs-csv", filepath.Join(dir, "jobs.csv"))
			if diff := cmp.Diff(tc.want, tableCells(t, stdout)); diff != "" {
				t.Errorf("table rows (-want,+got):\n%s\n%s", diff, stdout)
			}
			var sums []map[string]any
			readJSON(t, path, &sums)
			var got []string
			for _, s := range sums {
				got = append(got, fmt.Sprintf("%v/%v", s["algorithm"], s["placer"]))
				for _, k := range requiredSummaryKeys {
					if _, ok := s[k]; !ok {
						t.Errorf("JSON summary of %v/%v has no key %q", s["algorithm"], s["placer"], k)
					}
				}
				if c, _ := s["cycles"].(float64); c <= 0 {
					t.Errorf("JSON summary of %v/%v: cycles = %v, want > 0", s["algorithm"], s["placer"], s["cycles"])
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("JSON summaries (-want,+got):\n%s", diff)
			}
			// One jobs file per run, named after its placer when there are
			// several.
			for _, cell := range tc.want {
				algo, placer, _ := strings.Cut(cell, "/")
				name := "jobs-generated-30-seed1-" + algo + ".csv"
				if len(tc.want) > 2 {
					name = "jobs-generated-30-seed1-" + algo + "-" + placer + ".csv"
				}
				if rows := readCSV(t, filepath.Join(dir, name)); len(rows) != 31 {
					t.Errorf("%s: %d rows, want a header and 30 jobs", name, len(rows))
				}
			}
		})
	}
}

// Placers compared on several workloads: one mean row per algorithm and
// placer.
func TestSimulatePlacersMeanOverWorkloads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeWorkload(t, dir, "a.csv")
	writeWorkload(t, dir, "b.csv")
	stdout := mustRun(t, "simulate", "-q", "--workload", dir, "--compare", "elasticfifo,fifo", "--placer", "greedy,topology")
	im := strings.Index(stdout, "== mean over 2 workloads\n")
	if im < 0 {
		t.Fatalf("no mean section:\n%s", stdout)
	}
	want := []string{"ElasticFIFO/greedy", "ElasticFIFO/topology", "FIFO/greedy", "FIFO/topology"}
	if diff := cmp.Diff(want, tableCells(t, stdout[im:])); diff != "" {
		t.Errorf("mean table rows (-want,+got):\n%s\n%s", diff, stdout[im:])
	}
	if n := strings.Count(stdout[im:], "6/6"); n != len(want) {
		t.Errorf("mean table shows 6/6 done %d times, want %d:\n%s", n, len(want), stdout[im:])
	}
}

// Several placers with parameters only one of them declares run; the
// parameter reaches that placer only.
func TestSimulatePlacerParams(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--placer-param", "migration_budget=0"},
		{"--placer", "greedy,topology", "--placer-param", "migration_budget=2", "--placer-param", "node_penalty=0.1"},
		{"--placer", "all", "--placer-param", "RESTART_COST=60"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			mustRun(t, append([]string{"simulate", "--jobs", "20", "-q"}, args...)...)
		})
	}
}

func TestPlacersCommand(t *testing.T) {
	t.Parallel()
	stdout := mustRun(t, "placers")
	lines := strings.Split(stdout, "\n")
	if !strings.HasPrefix(lines[0], "NAME") {
		t.Errorf("first line = %q, want the NAME header", lines[0])
	}
	names, params := parseListing(lines, "--placer-param")
	if diff := cmp.Diff([]string{"topology", "greedy"}, names); diff != "" {
		t.Errorf("placers (-want,+got):\n%s\n%s", diff, stdout)
	}
	if diff := cmp.Diff([]string{"migration_budget", "keep_resized", "restart_cost", "node_penalty", "defrag_budget"}, params["topology"]); diff != "" {
		t.Errorf("topology params (-want,+got):\n%s\n%s", diff, stdout)
	}
	if p := params["greedy"]; len(p) != 0 {
		t.Errorf("greedy params = %v, want none", p)
	}
	for _, want := range []string{
		fmt.Sprintf("--placer-param migration_budget=<migration_budget> (default %d)", placement.DefaultMigrationBudget),
		fmt.Sprintf("--placer-param node_penalty=<node_penalty> (default %v)", placement.DefaultNodePenalty),
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("placers does not show %q:\n%s", want, stdout)
		}
	}
	if _, _, err := run(t, "placers", "extra"); err == nil {
		t.Error("placers with an argument: no error")
	}
}

// TestSimulateTeams runs a generated workload split among teams: the
// text report gains the teams table and its reclaims line, the JSON its
// team shares, and the split's teams get equal guarantees of the GPUs.
func TestSimulateTeams(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want []string // regular expressions of the text output
	}{
		{name: "equal split, equal guarantees", args: []string{"--teams", "equal:4"},
			want: []string{`(?m)^== teams:`, `(?m)^ElasticFIFO\s+topology\s+team-1\s+16\s+10/10\s`, `(?m)^ElasticFIFO\s+topology\s+team-4\s+16\s+10/10\s`,
				`(?m)^ElasticFIFO\s+topology\s+all\s+40/40\s`, `(?m)^ElasticFIFO/topology: (no reclaims|\d+ reclaims)`}},
		{name: "skewed split, given quotas", args: []string{"--teams", "skewed:2", "--quotas", "team-1=48:0:2,team-2=16"},
			want: []string{`(?m)^ElasticFIFO\s+topology\s+team-1\s+48\s+20/20\s`, `(?m)^ElasticFIFO\s+topology\s+team-2\s+16\s+20/20\s`}},
		{name: "quotas ignored", args: []string{"--teams", "equal:2", "--ignore-quotas"},
			want: []string{`(?m)^ElasticFIFO\s+topology\s+team-1\s+32\s+20/20\s`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := mustRun(t, append([]string{"simulate", "-q", "--jobs", "40"}, tc.args...)...)
			for _, re := range tc.want {
				if !regexp.MustCompile(re).MatchString(out) {
					t.Errorf("output does not match %s:\n%s", re, out)
				}
			}
		})
	}
	plain := mustRun(t, "simulate", "-q", "--jobs", "40")
	if strings.Contains(plain, "== teams") {
		t.Errorf("a run without teams reports teams:\n%s", plain)
	}
	ignored := mustRun(t, "simulate", "-q", "--jobs", "40", "--teams", "equal:2", "--ignore-quotas")
	avg := regexp.MustCompile(`(?m)^avg JCT\s+(.*)$`)
	if a, b := avg.FindString(plain), avg.FindString(ignored); a == "" || a != b {
		t.Errorf("--ignore-quotas changed the schedule: %q, want %q", b, a)
	}
}
