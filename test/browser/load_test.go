package browser

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/test/vodatest"
)

// loadSpeed is the simulated cluster's --speed in TestDashboardLoad. The
// server's whole clock runs at it: the 30 s rate limit lets a scheduling
// cycle run every 6 s, a running job reports its progress every 2 s (a
// job event to every stream: about 100 a second with 1,000 jobs), and the
// shortest job of loadMix (one epoch, 90 s of simulated time with its
// restart) completes 18 s after it starts. So in every window jobs
// complete and waiting ones start, while loadMix's longer jobs keep the
// queue from draining during the full size's run (about 5 minutes). Much
// faster (the dashboard test's 60) would measure a flood of progress
// events no real cluster sends; real time (1) would measure nearly idle
// streams, and would take minutes before a first job completes.
const loadSpeed = 5

// loadMix is the jobs TestDashboardLoad submits, in turns of equal
// bursts: small rigid jobs of one epoch, and elastic ones that ask more
// GPUs and train far longer (an epoch is 60 s of one simulated v100).
// Their minimums add up to four times the cluster's GPUs (half a GPU per
// job), so about a fifth of the jobs run and the rest wait.
var loadMix = []struct{ min, max, epochs int }{{1, 1, 1}, {1, 4, 16}, {2, 8, 32}, {4, 8, 64}}

// loadTokens is the token file of TestDashboardLoad: one admin.
const loadTokens = "admin-token-0123456789,root,0,voda:admins\n"

// loadReady is the first line testdata/load.cjs prints.
type loadReady struct {
	Ready       *bool      `json:"ready"`
	PageMs      []*float64 `json:"pageMs"`
	Shown       []int      `json:"shown"`
	StreamBytes []float64  `json:"streamBytes"`
	Error       string     `json:"error"`
}

// loadFinal is the last line testdata/load.cjs prints.
type loadFinal struct {
	Console    []string `json:"console"`
	PageErrors []string `json:"pageErrors"`
	Released   string   `json:"released"`
	HeldMs     float64  `json:"heldMs"`
	Error      string   `json:"error"`
	Pages      []struct {
		Caption     string  `json:"caption"`
		Connection  string  `json:"connection"`
		Streams     int     `json:"streams"`
		Navigations int     `json:"navigations"`
		HeldBytes   float64 `json:"heldBytes"`
		// MainThread is the page's main-thread time while held, in
		// seconds, as Chromium counts it; nil if it could not say.
		MainThread *struct {
			Script float64 `json:"script"`
			Style  float64 `json:"style"`
			Layout float64 `json:"layout"`
			Task   float64 `json:"task"`
		} `json:"mainThread"`
	} `json:"pages"`
}

// loadWindow is what one measuring window found of the server.
type loadWindow struct {
	wall, cpu          time.Duration
	rssMean, rssMax    float64 // bytes
	heapMean, heapMax  float64 // bytes, go_memstats_heap_inuse_bytes
	completed          float64 // jobs completed during the window
	polls, pollSeconds float64 // the event streams' reads of the store
	streams            []float64
	dropped            float64 // streams closed for falling behind
	status             map[string]int
}

// cpuRate is the server's CPU time per second of the window, in ms/s.
func (w loadWindow) cpuRate() float64 { return ms(w.cpu) / w.wall.Seconds() }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

const mib = 1 << 20

// TestDashboardLoad measures what the dashboard's live stream costs the
// server: `voda server` on the simulated cluster (--speed loadSpeed, one
// v100 node of 8 GPUs per 16 jobs) with JOBS jobs submitted through the API
// (loadMix: some run, most wait), once a first job has completed, over
// three windows of WINDOW: no dashboard open; PAGES dashboards open in one
// Chromium (testdata/load.cjs: PAGES browser contexts signed in with the
// token, at /ui/#/, the cluster view with the live jobs table, the
// heaviest view); closed again. The cost per dashboard is the open window's figure
// less the mean of the other two (which cancels the jobs' own drift),
// divided by PAGES. It logs one table: the server's CPU time per second,
// its resident memory and Go heap in use (mean and peak of samples every
// second), the jobs completed in each window (the server's own work
// besides the streams), the event streams' reads of the store, the bytes
// each page's stream received, the CPU of node and Chromium, and how long
// each page took from opening to showing every live job.
//
// It fails unless every page shows every live job within 30 s of opening
// (as many as JOBS less the jobs completed when it showed them, at most
// JOBS less those completed before it opened: the stream's snapshot holds
// no finished job),
// no page logs a console error or warning or throws, voda_event_streams is
// PAGES at the start and the end of the second window, no stream is
// dropped or reopened, and every page is still live at the end.
//
// Sizes come from the environment; the defaults are small, for `make test`:
//
//	VODA_DASHBOARD_LOAD_JOBS    jobs submitted (default 100)
//	VODA_DASHBOARD_LOAD_PAGES   dashboards open at once (default 2)
//	VODA_DASHBOARD_LOAD_WINDOW  each measuring window (default 10s)
//
// `make dashboard-cost` runs it at full size: 1,000 jobs, 10 dashboards,
// 60 s windows.
func TestDashboardLoad(t *testing.T) {
	jobs := loadEnvInt(t, "VODA_DASHBOARD_LOAD_JOBS", 100)
	pages := loadEnvInt(t, "VODA_DASHBOARD_LOAD_PAGES", 2)
	window := loadEnvDuration(t, "VODA_DASHBOARD_LOAD_WINDOW", 10*time.Second)
	const readyBound = 30 * time.Second
	node, modules, chromium := browserTools(t)

	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(loadTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := max(2, (jobs+15)/16)
	// A burst holds a connection per submission: --max-connections (1,024)
	// would close some of 1,000; --max-event-streams (100) bounds PAGES,
	// and so does --max-event-streams-per-user (10): every page is the
	// admin's.
	srv := vodatest.StartServer(t, "--data-dir", filepath.Join(dir, "data"),
		"--sim-nodes", fmt.Sprintf("v100=%dx8", nodes), "--speed", strconv.Itoa(loadSpeed),
		"--token-auth-file", tokens, "--log-level", "warn",
		"--max-connections", strconv.Itoa(max(1024, 4*jobs)),
		"--max-event-streams", strconv.Itoa(max(api.DefaultMaxStreams, 2*pages)),
		"--max-event-streams-per-user", strconv.Itoa(max(api.DefaultMaxStreamsPerCaller, 2*pages)))
	base := srv.URL()
	header := http.Header{"Authorization": {"Bearer admin-token-0123456789"}}

	// Bursts of a fortieth of the jobs each, taking loadMix's kinds in
	// turn, so that the queue mixes them.
	chunk := max(1, jobs/40)
	var submitWall time.Duration
	for sent, k := 0, 0; sent < jobs; k++ {
		m := loadMix[k%len(loadMix)]
		n := min(chunk, jobs-sent)
		b := vodatest.SubmitBurst(t, base, vodatest.Manifest(fmt.Sprintf("load-%d-%d", m.min, m.max), m.min, m.max, m.epochs), n, header)
		submitWall += b.Wall
		sent += n
	}
	listed := time.Now()
	vodatest.WaitFor(t, "GET /api/v1/jobs to list every job, the scheduler to admit them and run some", 60*time.Second, func() (bool, error) {
		st, err := loadStatuses(base, header)
		if err != nil {
			return false, err
		}
		total := 0
		for _, n := range st {
			total += n
		}
		return total == jobs && st["Submitted"] == 0 && st["Running"] > 0, nil
	})
	admitted := time.Since(listed)
	// The windows measure a cluster where jobs complete and others start,
	// not the admission.
	vodatest.WaitFor(t, "a first job to complete", 120*time.Second, func() (bool, error) {
		return loadMetrics(t, base, header)[`voda_jobs_completed_total{gpu_type="v100"}`] >= 1, nil
	})
	t.Logf("%d jobs submitted in %v (bursts of %d), admitted %v later, first completion %v after that",
		jobs, submitWall.Round(time.Millisecond), chunk, admitted.Round(time.Millisecond), (time.Since(listed) - admitted).Round(time.Millisecond))

	baseline := measureLoad(t, srv, header, window)
	if baseline.streams[0] != 0 || baseline.streams[1] != 0 {
		t.Fatalf("voda_event_streams %v with no dashboard open, want 0", baseline.streams)
	}

	completedBefore := loadMetrics(t, base, header)[`voda_jobs_completed_total{gpu_type="v100"}`]
	shot := filepath.Join(artifacts(t), "dashboard-load.png")
	hold := 2*window + 2*time.Minute
	cmd := exec.Command(node, filepath.Join(repoRoot(t), "test", "browser", "testdata", "load.cjs"),
		base, "admin-token-0123456789", strconv.Itoa(pages),
		strconv.FormatInt((readyBound+90*time.Second).Milliseconds(), 10), strconv.FormatInt(hold.Milliseconds(), 10), shot)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "VODA_CHROMIUM="+chromium)
	var stderr vodatest.SyncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	// However the test ends, the script closes its browser and exits:
	// stdin's end releases it, a TERM makes it close the browser, a kill
	// ends it.
	t.Cleanup(func() {
		stdin.Close()
		ended := func(d time.Duration) bool {
			timeout := time.After(d)
			for {
				select {
				case _, ok := <-lines:
					if !ok {
						return true
					}
				case <-timeout:
					return false
				}
			}
		}
		if ended(20 * time.Second) {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if ended(10 * time.Second) {
			return
		}
		_ = cmd.Process.Kill()
		ended(10 * time.Second)
	})
	next := func(what string, timeout time.Duration) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("load.cjs ended before printing %s: %v\n%s", what, <-exited, stderr.String())
			}
			return l
		case <-time.After(timeout):
			t.Fatalf("load.cjs printed no %s within %v\n%s", what, timeout, stderr.String())
		}
		return ""
	}
	var ready loadReady
	first := next("ready line", readyBound+3*time.Minute)
	if err := json.Unmarshal([]byte(first), &ready); err != nil {
		t.Fatalf("load.cjs printed %q: %v", first, err)
	}
	completedReady := loadMetrics(t, base, header)[`voda_jobs_completed_total{gpu_type="v100"}`]
	if ready.Ready == nil || !*ready.Ready {
		t.Errorf("the dashboards did not all show their live jobs within %v: %s (ms by page, -1 for never: %v)",
			readyBound+90*time.Second, ready.Error, loadPageMs(ready.PageMs))
		var final loadFinal
		_ = json.Unmarshal([]byte(next("final line", 3*time.Minute)), &final)
		t.Fatalf("console %q, page errors %q, pages %+v\n%s", final.Console, final.PageErrors, final.Pages, stderr.String())
	}

	t.Logf("%d dashboards showed %v live jobs after %v ms (%d jobs, %.0f completed before they opened, %.0f once all showed theirs)",
		pages, ready.Shown, loadPageMs(ready.PageMs), jobs, completedBefore, completedReady)
	for i, n := range ready.Shown {
		if lo, hi := jobs-int(completedReady), jobs-int(completedBefore); n < lo || n > hi {
			t.Errorf("page %d showed %d live jobs, want %d to %d: the jobs less those completed", i, n, lo, hi)
		}
	}

	browserCPU := loadTreeCPU(cmd.Process.Pid)
	loaded := measureLoad(t, srv, header, window)
	browserCPU = loadTreeCPU(cmd.Process.Pid) - browserCPU

	if _, err := io.WriteString(stdin, "done\n"); err != nil {
		t.Fatalf("releasing load.cjs: %v", err)
	}
	var final loadFinal
	last := next("final line", 3*time.Minute)
	if err := json.Unmarshal([]byte(last), &final); err != nil {
		t.Fatalf("load.cjs printed %q: %v", last, err)
	}
	if err := <-exited; err != nil {
		t.Errorf("load.cjs: %v\n%s", err, stderr.String())
	}

	// Closed: the same again, so that the jobs' own drift (the queue
	// shortens, running jobs change) cancels in the mean of before and
	// after.
	after := measureLoad(t, srv, header, window)

	pageMs := loadPageMs(ready.PageMs)
	sorted := slices.Clone(pageMs)
	slices.Sort(sorted)
	var heldBytes float64
	for _, p := range final.Pages {
		heldBytes += p.HeldBytes
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dashboard load: %d jobs on v100=%dx8 at --speed %d, %d dashboards (/ui/#/) in one Chromium, %v windows: before opening, open, after closing\n",
		jobs, nodes, loadSpeed, pages, window)
	fmt.Fprintf(&b, "  %-36s %12s %12s %12s %14s\n", "server", "before", fmt.Sprintf("%d open", pages), "after", "per dashboard")
	row := func(label string, unit float64, f func(loadWindow) float64) {
		bf, ld, af := f(baseline)/unit, f(loaded)/unit, f(after)/unit
		fmt.Fprintf(&b, "  %-36s %12.1f %12.1f %12.1f %+14.2f\n", label, bf, ld, af, (ld-(bf+af)/2)/float64(pages))
	}
	row("CPU (ms/s)", 1, loadWindow.cpuRate)
	row("RSS mean (MiB)", mib, func(w loadWindow) float64 { return w.rssMean })
	row("RSS max (MiB)", mib, func(w loadWindow) float64 { return w.rssMax })
	row("Go heap in use, mean (MiB)", mib, func(w loadWindow) float64 { return w.heapMean })
	row("Go heap in use, max (MiB)", mib, func(w loadWindow) float64 { return w.heapMax })
	fmt.Fprintf(&b, "  %-36s %12.0f %12.0f %12.0f\n", "jobs completed in the window", baseline.completed, loaded.completed, after.completed)
	fmt.Fprintf(&b, "  %-36s %12s %12s %12s\n", "jobs waiting/running at the end", loadStatusText(baseline.status), loadStatusText(loaded.status), loadStatusText(after.status))
	fmt.Fprintf(&b, "  %-36s %12s %12s %12s\n", "voda_event_streams (start, end)", loadPair(baseline.streams), loadPair(loaded.streams), loadPair(after.streams))
	if loaded.polls > 0 {
		fmt.Fprintf(&b, "  %-36s %12.0f %12.0f %12.0f\n", "event polls of the store", baseline.polls, loaded.polls, after.polls)
		fmt.Fprintf(&b, "  %-36s %12s %12.2f\n", "event poll, mean (ms)", "-", 1000*loaded.pollSeconds/loaded.polls)
	}
	fmt.Fprintf(&b, "  %-36s %12s %12.1f\n", "stream KiB/s received per page", "-", heldBytes/float64(pages)/1024/(final.HeldMs/1000))
	fmt.Fprintf(&b, "  %-36s %12s %12.0f\n", "stream KiB until a page showed all", "-", loadMean(ready.StreamBytes)/1024)
	fmt.Fprintf(&b, "  %-36s %12s %12.0f\n", "node and Chromium CPU (ms/s)", "-", ms(browserCPU)/loaded.wall.Seconds())
	var script, style, layout, task float64
	measured := 0
	for _, p := range final.Pages {
		if m := p.MainThread; m != nil {
			script, style, layout, task = script+m.Script, style+m.Style, layout+m.Layout, task+m.Task
			measured++
		}
	}
	if measured > 0 && final.HeldMs > 0 {
		per := func(v float64) float64 { return 1000 * v / float64(measured) / (final.HeldMs / 1000) }
		fmt.Fprintf(&b, "  %-36s %12s %12s\n", "a page's main thread (ms/s)", "-",
			fmt.Sprintf("%.0f: script %.0f, style %.0f, layout %.0f", per(task), per(script), per(style), per(layout)))
	}
	fmt.Fprintf(&b, "  page time to every live job (ms): min %.0f, median %.0f, max %.0f; by page %v",
		sorted[0], sorted[len(sorted)/2], sorted[len(sorted)-1], pageMs)
	t.Log(b.String())

	for i, m := range pageMs {
		if m > float64(readyBound.Milliseconds()) {
			t.Errorf("page %d showed every live job after %.0f ms: want within %v", i, m, readyBound)
		}
	}
	for _, c := range final.Console {
		t.Errorf("console: %s", c)
	}
	for _, e := range final.PageErrors {
		t.Errorf("page error: %s", e)
	}
	if final.Error != "" {
		t.Errorf("load.cjs: %s", final.Error)
	}
	for _, n := range loaded.streams {
		if n != float64(pages) {
			t.Errorf("voda_event_streams %v while %d dashboards were open, want %d", loaded.streams, pages, pages)
			break
		}
	}
	if loaded.dropped > 0 {
		t.Errorf("%.0f event streams dropped for falling behind while the dashboards were open", loaded.dropped)
	}
	if len(final.Pages) != pages {
		t.Fatalf("load.cjs reported %d pages, want %d", len(final.Pages), pages)
	}
	for i, p := range final.Pages {
		if p.Streams != 1 || p.Navigations != 1 || p.Connection != "live" {
			t.Errorf("page %d opened %d event streams and navigated %d times, and ended %q (%q): want one stream, one navigation, live",
				i, p.Streams, p.Navigations, p.Connection, p.Caption)
		}
	}
}

// measureLoad measures the server over d: its CPU time, its resident
// memory and Go heap every second, and its stream and job metrics at the
// start and the end.
func measureLoad(t *testing.T, srv *vodatest.Server, header http.Header, d time.Duration) loadWindow {
	t.Helper()
	base := srv.URL()
	var w loadWindow
	m0 := loadMetrics(t, base, header)
	start, cpu0 := time.Now(), vodatest.ProcCPU(srv.PID())
	var n float64
	for {
		rss, err := srv.RSS()
		if err != nil {
			t.Fatal(err)
		}
		heap := vodatest.MetricSamplesAs(t, base, "go_memstats_heap_inuse_bytes", header)["go_memstats_heap_inuse_bytes"]
		w.rssMean += float64(rss)
		w.heapMean += heap
		w.rssMax = max(w.rssMax, float64(rss))
		w.heapMax = max(w.heapMax, heap)
		n++
		left := d - time.Since(start)
		if left <= 0 {
			break
		}
		time.Sleep(min(time.Second, left))
	}
	w.cpu, w.wall = vodatest.ProcCPU(srv.PID())-cpu0, time.Since(start)
	m1 := loadMetrics(t, base, header)
	w.rssMean /= n
	w.heapMean /= n
	delta := func(k string) float64 { return m1[k] - m0[k] }
	w.completed = delta(`voda_jobs_completed_total{gpu_type="v100"}`)
	w.polls = delta("voda_event_poll_duration_seconds_count")
	w.pollSeconds = delta("voda_event_poll_duration_seconds_sum")
	w.dropped = delta("voda_event_streams_dropped_total")
	w.streams = []float64{m0["voda_event_streams"], m1["voda_event_streams"]}
	w.status = map[string]int{
		"Waiting": int(m1[`voda_jobs_waiting{gpu_type="v100"}`]),
		"Running": int(m1[`voda_jobs_running{gpu_type="v100"}`]),
	}
	return w
}

// loadTreeCPU is the CPU time process pid and its descendants have used.
func loadTreeCPU(pid int) time.Duration {
	children := map[int][]int{}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// The fields after the command: state, then the parent's ID.
		_, rest, _ := strings.Cut(string(b), ") ")
		fields := strings.Fields(rest)
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		id, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		children[ppid] = append(children[ppid], id)
	}
	var total time.Duration
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		total += vodatest.ProcCPU(queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return total
}

// loadMetrics returns the server's voda_ samples.
func loadMetrics(t *testing.T, base string, header http.Header) map[string]float64 {
	t.Helper()
	return vodatest.MetricSamplesAs(t, base, "voda_", header)
}

// loadStatuses counts the jobs GET /api/v1/jobs lists, by status.
func loadStatuses(base string, header http.Header) (map[string]int, error) {
	req, err := http.NewRequest(http.MethodGet, base+api.RouteJobs, nil)
	if err != nil {
		return nil, err
	}
	req.Header = header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", api.RouteJobs, resp.Status)
	}
	var list api.JobList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, j := range list.Items {
		out[string(j.Status)]++
	}
	return out, nil
}

func loadPair(xs []float64) string { return fmt.Sprintf("%g, %g", xs[0], xs[1]) }

func loadStatusText(st map[string]int) string {
	return fmt.Sprintf("%d/%d", st["Waiting"], st["Running"])
}

// loadPageMs is the pages' times to all jobs, -1 for a page that never
// showed them.
func loadPageMs(ms []*float64) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = -1
		if m != nil {
			out[i] = *m
		}
	}
	return out
}

func loadMean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func loadEnvInt(t *testing.T, key string, def int) int {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", key, v)
	}
	return n
}

func loadEnvDuration(t *testing.T, key string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		t.Fatalf("%s=%q: want a duration of at least 1s, e.g. 60s", key, v)
	}
	return d
}
