package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/test/vodatest"
)

// What every run must show, whatever the machine's load: generous
// bounds that only a defect crosses, not timing targets.
const (
	// rssGrowth: the largest RSS of the last third of the samples is at
	// most this multiple of the largest of the first third, which the
	// store reaches its retention count in.
	rssGrowth = 3.0
	// retentionSlack is how far the finished jobs kept may exceed
	// --max-finished-jobs: a retention batch (docs/server.md#retention),
	// the jobs that finish between two passes.
	retentionSlack = 500
	// maxLagP99 bounds each reading dashboard's 99th percentile of the
	// time from a job's submission to its first showing on the stream.
	maxLagP99 = 30 * time.Second
	// stallHold bounds the time from a stalled stream's writes blocking
	// (its send queue full) to the server's closing it: the 30 s a write
	// to a stream may take (docs/api.md#the-event-stream) and a margin.
	// From the request it is longer: until then the server's send buffer
	// (up to 4 MiB) takes what the stream sends.
	stallHold = 45 * time.Second
	// retentionInterval is the server's --retention-interval: short, so
	// that the count is exceeded by little between two passes.
	retentionInterval = time.Second
)

// soakRun is one run: the server and every client driving it.
type soakRun struct {
	cfg     config
	srv     *vodatest.Server
	dataDir string
	hc      *http.Client
	answers *answers
	sent    sendTimes

	sub     *submitter
	dashes  []*dashboard
	rep     *reporters
	probe   *listProbe
	stalled *stalls

	start           time.Time
	lastAt, lastCPU time.Duration
}

func TestSoak(t *testing.T) {
	cfg, err := configFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("soak: %v", cfg)
	r := &soakRun{cfg: cfg, dataDir: t.TempDir(), answers: newAnswers(), sent: make(sendTimes, cfg.jobs)}
	args := []string{"--data-dir", r.dataDir, "--sim-nodes", cfg.nodes,
		"--speed", strconv.FormatFloat(cfg.speed, 'g', -1, 64), "--max-finished-jobs", strconv.Itoa(cfg.maxFinished),
		"--retention-interval", retentionInterval.String(), "--log-level", "warn"}
	if serverHasFlag(t, perCallerStreamsFlag) {
		// Room for every stream, for each dashboard's next one while the
		// server still counts the one that just ended, and the flag's
		// default (10) besides.
		args = append(args, perCallerStreamsFlag, strconv.Itoa(2*cfg.dashboards+cfg.stalled+10))
	}
	if !cfg.simReports {
		// The reporters stand in for the jobs' own reports.
		args = append(args, "--no-sim-reports")
	}
	r.srv = vodatest.StartServer(t, args...)
	base := r.srv.URL()
	r.hc = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: submitConns + racers + cfg.reporters + 8}}
	defer r.hc.CloseIdleConnections()
	// Streams never time out; they end when the run cancels them.
	streams := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.dashboards}}
	defer streams.CloseIdleConnections()

	// Deferred in this order so that a test that fails early cancels the
	// clients before it waits for them.
	var dashboards sync.WaitGroup
	defer dashboards.Wait()
	dctx, stopDashboards := context.WithCancel(context.Background())
	defer stopDashboards()
	for range cfg.dashboards {
		d := newDashboard(base, streams, r.sent, r.answers)
		r.dashes = append(r.dashes, d)
		dashboards.Go(func() { d.follow(dctx) })
	}
	vodatest.WaitFor(t, "every dashboard's first snapshot", time.Minute, func() (bool, error) {
		for i, d := range r.dashes {
			if st := d.state(); st.snapshots == 0 {
				return false, fmt.Errorf("dashboard %d: no snapshot yet (%d ends, last %s)", i, st.ends, st.lastEnd)
			}
		}
		return true, nil
	})

	var load sync.WaitGroup
	defer load.Wait()
	lctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	r.rep = &reporters{hc: r.hc, baseURL: base, dash: r.dashes[0], answers: r.answers}
	for k := range cfg.reporters {
		load.Go(func() { r.rep.steady(lctx, k) })
	}
	if cfg.reporters > 0 {
		load.Go(func() { r.rep.race(lctx) })
	}
	r.probe = &listProbe{hc: r.hc, baseURL: base, answers: r.answers}
	load.Go(func() { r.probe.run(lctx) })

	r.sub = &submitter{hc: r.hc, url: base, sent: r.sent, answers: r.answers}
	r.stalled = &stalls{addr: r.srv.Addr, perWave: cfg.stalled, answers: r.answers}
	r.start = time.Now()
	submitted := make(chan struct{})
	go func() {
		defer close(submitted)
		r.sub.run(lctx, r.start, schedule(cfg.jobs, cfg.burst, cfg.duration))
	}()
	stallsDone := make(chan struct{})
	go func() {
		defer close(stallsDone)
		r.stalled.run(lctx, r.start, stallWaves(cfg.duration))
	}()

	samples, phases := r.sampleUntilDone(t, submitted, stallsDone)
	stopLoad()
	load.Wait()
	<-submitted
	<-stallsDone
	r.writeArtifacts(t, samples)
	t.Logf("%s\nanswers:\n%s", phases, r.answers)

	// First the checks that do not wait for the server: the last two
	// wait for every job to finish and end the test if it does not.
	r.checkSamples(t, samples)
	r.checkStreams(t)
	if f := r.answers.failures(); len(f) > 0 {
		t.Errorf("answers no client may get:\n  %s", strings.Join(f, "\n  "))
	}
	r.checkDashboards(t)
	stopDashboards()
	dashboards.Wait()
	r.checkJobs(t)
}

// perCallerStreamsFlag bounds one caller's event streams on servers that
// have it (docs/api.md#the-event-stream); the soak's streams are all one
// caller's, as the server runs without authentication.
const perCallerStreamsFlag = "--max-event-streams-per-user"

// serverHasFlag says whether `voda server --help` lists flag.
func serverHasFlag(t *testing.T, flag string) bool {
	t.Helper()
	out, err := exec.Command(vodatest.Binary(t), "server", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("voda server --help: %v\n%s", err, out)
	}
	return helpHasFlag(out, flag)
}

// helpHasFlag says whether a command's --help text lists flag: a line
// that starts with it after spaces (and maybe a shorthand), followed by
// its value's type or the end of the name.
func helpHasFlag(help []byte, flag string) bool {
	return regexp.MustCompile(`(?m)^\s+(-\w, )?` + regexp.QuoteMeta(flag) + `(\s|=|$)`).Match(help)
}

func TestHelpHasFlag(t *testing.T) {
	const help = `Flags:
      --max-event-streams int                  most event streams open at once (default 100)
  -h, --help                                   help for server
      --speed float                            how many times faster; see --max-event-streams-per-user
`
	for flag, want := range map[string]bool{
		"--max-event-streams":          true,
		"--max-event-streams-per-user": false, // named in a description, not listed
		"--max-event":                  false,
		"--help":                       true,
		"--speed":                      true,
	} {
		if got := helpHasFlag([]byte(help), flag); got != want {
			t.Errorf("helpHasFlag(%s) = %v, want %v", flag, got, want)
		}
	}
}

// sampleUntilDone records a sample every interval until every job was
// submitted and has finished and every stalled stream was checked, or
// the run's deadline passed; it returns the samples and a line saying
// how long the phases took.
func (r *soakRun) sampleUntilDone(t *testing.T, submitted, stallsDone <-chan struct{}) ([]sample, string) {
	t.Helper()
	// A server that cannot keep up takes longer to be sent the jobs
	// (submitConns at most wait for an answer) and to run them.
	deadline := r.start.Add(2*r.cfg.duration + max(3*time.Minute, r.cfg.duration/2))
	tick := time.NewTicker(r.cfg.interval)
	defer tick.Stop()
	var samples []sample
	var sentIn, drainedIn time.Duration
	for {
		<-tick.C
		samples = append(samples, r.sample())
		select {
		case <-submitted:
			if sentIn == 0 {
				sentIn = time.Since(r.start)
			}
		default:
		}
		if sentIn > 0 && drainedIn == 0 && r.noLiveJobs() {
			drainedIn = time.Since(r.start)
		}
		select {
		case <-stallsDone:
			if drainedIn > 0 {
				return samples, fmt.Sprintf("submissions answered within %v, every job finished within %v, %d samples",
					sentIn.Round(time.Second), drainedIn.Round(time.Second), len(samples))
			}
		default:
		}
		if time.Now().After(deadline) {
			t.Errorf("the run did not end by its deadline, %v after its start: submissions answered within %v (0: not all), "+
				"every job finished within %v (0: not all)", deadline.Sub(r.start).Round(time.Second), sentIn, drainedIn)
			return samples, "cut off at the deadline"
		}
	}
}

// sample records the run's state now.
func (r *soakRun) sample() sample {
	const mib = 1 << 20
	at := time.Since(r.start)
	s := sample{at: at, submitted: int(r.sub.created.Load())}
	m, err := vodatest.ReadMetrics(r.hc, r.srv.URL(), "", nil)
	r.answers.add(askMetrics, metricsCode(err), fmt.Sprint(err))
	if err != nil {
		m = map[string]float64{}
		s.scrapeErr = err.Error()
	}
	metric := func(name string) float64 {
		if err != nil {
			return math.NaN()
		}
		return sumMetric(m, name)
	}
	// The gauges of live and finished jobs are as of the last retention
	// pass, which lasts as long as there is much to remove: the counters
	// say what the store holds now.
	ended := metric("voda_jobs_completed_total") + metric("voda_jobs_failed_total")
	s.live, s.finished = metric("voda_jobs_created_total")-ended, metric("voda_finished_jobs")
	s.removed = metric("voda_jobs_removed_total")
	s.kept = ended - s.removed
	s.rssMiB = metric("process_resident_memory_bytes") / mib
	s.heapMiB = metric("go_memstats_heap_inuse_bytes") / mib
	s.streams, s.dropped = metric("voda_event_streams"), metric("voda_event_streams_dropped_total")
	s.storeMiB = math.NaN()
	if fi, err := os.Stat(filepath.Join(r.dataDir, "voda.db")); err == nil {
		s.storeMiB = float64(fi.Size()) / mib
	}
	cpu := vodatest.ProcCPU(r.srv.PID())
	s.cpu = ms(cpu-r.lastCPU) / (at - r.lastAt).Seconds()
	r.lastCPU, r.lastAt = cpu, at
	list, live := r.probe.take()
	s.listP50, s.listP99 = quantile(list, 0.5), quantile(list, 0.99)
	s.liveP50, s.liveP99 = quantile(live, 0.5), quantile(live, 0.99)
	var lags []time.Duration
	for _, d := range r.dashes {
		lags = append(lags, d.takeLags()...)
		st := d.state()
		if st.connected {
			s.dashboards++
		}
		s.dashboardEnds += st.ends
	}
	s.lagP50, s.lagP99, s.lagMax = quantile(lags, 0.5), quantile(lags, 0.99), quantile(lags, 1)
	s.stalled = int(r.stalled.open.Load())
	s.reports, s.races = r.rep.sent.Load(), r.rep.races.Load()
	return s
}

// metricsCode is the code to count for a scrape: 200, or no answer.
func metricsCode(err error) int {
	if err != nil {
		return noAnswer
	}
	return http.StatusOK
}

// sumMetric is the sum of the samples of metric name, whatever their
// labels.
func sumMetric(m map[string]float64, name string) float64 {
	sum := 0.0
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}

// noLiveJobs says whether the server lists no live job.
func (r *soakRun) noLiveJobs() bool {
	resp, err := r.hc.Get(r.srv.URL() + api.RouteJobs + "?live=true&limit=1")
	if err != nil {
		r.answers.add(askLive, noAnswer, err.Error())
		return false
	}
	defer resp.Body.Close()
	r.answers.add(askLive, resp.StatusCode, "")
	var page struct {
		Items []json.RawMessage `json:"items"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&page) == nil && len(page.Items) == 0
}

// writeArtifacts prints the table and writes the CSV and the PNG.
func (r *soakRun) writeArtifacts(t *testing.T, samples []sample) {
	t.Helper()
	t.Logf("samples:\n%s", table(samples))
	dir := os.Getenv("VODA_ARTIFACTS")
	if dir == "" {
		_, file, _, ok := runtime.Caller(0)
		if !ok {
			t.Fatal("cannot locate the test's source file")
		}
		dir = filepath.Join(filepath.Dir(file), "..", "..", ".cache", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stem := filepath.Join(dir, fmt.Sprintf("soak-%d", r.cfg.jobs))
	f, err := os.Create(stem + ".csv")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeCSV(f, samples); err != nil {
		t.Error(err)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
	if err := writePNG(stem+".png", samples, r.cfg.maxFinished); err != nil {
		t.Error(err)
	}
	t.Logf("wrote %s.csv and %s.png", stem, stem)
}

// checkDashboards: once no job is live, every reading dashboard catches
// up and shows none live (one that missed a job's end would show it
// running for ever), it parsed every event, and its lag stayed bounded.
func (r *soakRun) checkDashboards(t *testing.T) {
	t.Helper()
	vodatest.WaitFor(t, "every dashboard connected and showing no live job", time.Minute, func() (bool, error) {
		for i, d := range r.dashes {
			st := d.state()
			if !st.connected || len(st.live) > 0 {
				slices.Sort(st.live)
				return false, fmt.Errorf("dashboard %d: connected %v, %d live jobs shown (the first: %q), last end %q",
					i, st.connected, len(st.live), st.live[:min(3, len(st.live))], st.lastEnd)
			}
		}
		return true, nil
	})
	for i, d := range r.dashes {
		st := d.state()
		d.mu.Lock()
		lags := slices.Clone(d.allLags)
		d.mu.Unlock()
		p50, p99, worst := quantile(lags, 0.5), quantile(lags, 0.99), quantile(lags, 1)
		t.Logf("dashboard %d: %d streams (%d ended while read, the last: %s), %d events, %.1f MB; "+
			"lag p50 %.0f ms, p99 %.0f ms, max %.0f ms over %d jobs; %d jobs never shown",
			i, st.snapshots, st.ends, st.lastEnd, st.events, float64(st.bytes)/1e6, p50, p99, worst, len(lags), st.missed)
		if len(st.badEvents) > 0 {
			t.Errorf("dashboard %d could not parse events:\n  %s", i, strings.Join(st.badEvents, "\n  "))
		}
		if len(lags) == 0 || !(p99 <= ms(maxLagP99)) {
			t.Errorf("dashboard %d: lag p99 %.0f ms over %d jobs; want at most %v", i, p99, len(lags), maxLagP99)
		}
	}
}

// checkJobs: every job submitted was answered 201 and is listed, finished,
// or was removed by retention, which removes finished jobs only, within
// the count once a pass has run.
func (r *soakRun) checkJobs(t *testing.T) {
	t.Helper()
	submitted := int(r.sub.created.Load())
	if submitted != r.cfg.jobs {
		t.Errorf("%d submissions answered 201, want %d", submitted, r.cfg.jobs)
	}
	var m map[string]float64
	vodatest.WaitFor(t, "a retention pass after the last job finished", time.Minute, func() (bool, error) {
		var err error
		m, err = vodatest.ReadMetrics(r.hc, r.srv.URL(), "voda_", nil)
		if err != nil {
			return false, err
		}
		live, finished := sumMetric(m, "voda_live_jobs"), sumMetric(m, "voda_finished_jobs")
		if live != 0 || finished > float64(r.cfg.maxFinished) {
			return false, fmt.Errorf("the last pass counted %v live and %v finished jobs", live, finished)
		}
		return true, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	jobs, err := r.srv.Client().ListJobs(ctx, client.ListOptions{PageSize: api.MaxListLimit})
	r.answers.add(askListPage, metricsCode(err), fmt.Sprint(err))
	if err != nil {
		t.Fatalf("list every job: %v", err)
	}
	listed := map[int]bool{}
	for _, j := range jobs {
		i, ok := jobIndex(j.Name)
		switch {
		case !ok || i >= r.cfg.jobs:
			t.Errorf("job %s is not one the soak submitted", j.Name)
		case listed[i]:
			t.Errorf("job %d is listed twice (%s)", i, j.Name)
		case model.Status(j.Status) != model.StatusCompleted:
			t.Errorf("job %s is %s (%s), want Completed", j.Name, j.Status, j.Message)
		}
		listed[i] = true
	}
	removed := sumMetric(m, "voda_jobs_removed_total")
	created := sumMetric(m, "voda_jobs_created_total")
	t.Logf("jobs: %d submitted, %v created, %d listed at the end, %v removed by retention (%v by count, %v by age)",
		submitted, created, len(jobs), removed, m[`voda_jobs_removed_total{reason="count"}`], m[`voda_jobs_removed_total{reason="age"}`])
	if created != float64(submitted) || float64(len(jobs))+removed != float64(submitted) {
		t.Errorf("%v jobs created and %d listed + %v removed, want both %d: jobs were lost or made up", created, len(jobs), removed, submitted)
	}
	if failed, aside := sumMetric(m, "voda_jobs_failed_total"), sumMetric(m, "voda_jobs_set_aside_total"); failed+aside > 0 {
		t.Errorf("%v jobs failed and %v were set aside; the simulated cluster fails none", failed, aside)
	}
}

// checkSamples: the finished jobs kept stayed within the count and a
// batch, and the RSS did not grow without bound.
func (r *soakRun) checkSamples(t *testing.T, samples []sample) {
	t.Helper()
	limit := float64(r.cfg.maxFinished + retentionSlack)
	for _, s := range samples {
		if s.kept > limit {
			t.Errorf("at %v the store kept %.0f finished jobs, over --max-finished-jobs %d + %d",
				s.at.Round(time.Second), s.kept, r.cfg.maxFinished, retentionSlack)
		}
	}
	first, last := thirdsMax(samples, func(s sample) float64 { return s.rssMiB })
	heapFirst, heapLast := thirdsMax(samples, func(s sample) float64 { return s.heapMiB })
	t.Logf("RSS max %.0f MiB in the first third of the run, %.0f MiB in the last; Go heap in use %.0f and %.0f MiB",
		first, last, heapFirst, heapLast)
	if !(last <= rssGrowth*first) {
		t.Errorf("RSS grew from %.0f MiB (first third's max) to %.0f MiB (last third's), more than %gx", first, last, rssGrowth)
	}
}

// checkStreams: every stalled stream was ended by the server, and no 429
// came without its Retry-After.
func (r *soakRun) checkStreams(t *testing.T) {
	t.Helper()
	r.stalled.mu.Lock()
	defer r.stalled.mu.Unlock()
	for i, res := range r.stalled.results {
		t.Logf("stalled stream %d, opened at %v: %q, closed by the server after %v with %d bytes left in its kernel's buffer %s",
			i, res.opened.Sub(r.start).Round(time.Second), res.status, res.closedAfter.Round(100*time.Millisecond), res.queued, res.err)
		if res.closedAfter == 0 || !strings.HasPrefix(res.status, "HTTP/1.1 200") {
			t.Errorf("stalled stream %d: answered %q, closed by the server after %v (0: not within %v of its writes blocking): %s",
				i, res.status, res.closedAfter, stallHold, res.err)
		}
	}
	if want := r.cfg.stalled * len(stallWaves(r.cfg.duration)); len(r.stalled.results) != want {
		t.Errorf("%d stalled streams checked, want %d: %s", len(r.stalled.results), want, strings.Join(r.stalled.errs, "; "))
	}
	if r.cfg.reporters > 0 && (r.answers.count(askReport, http.StatusOK) == 0 || r.rep.races.Load() == 0) {
		t.Errorf("%d reports answered 200 and %d races run; the reporters did not report", r.answers.count(askReport, http.StatusOK), r.rep.races.Load())
	}
	if n := r.rep.noRetryAfter.Load(); n > 0 {
		t.Errorf("%d reports answered 429 without a Retry-After", n)
	}
}

// stallWaves are when the waves of stalled streams open: one every two
// minutes of the submissions, evenly spread, at least one.
func stallWaves(d time.Duration) []time.Duration {
	n := max(1, int(d/(2*time.Minute)))
	at := make([]time.Duration, n)
	for k := range at {
		at[k] = d * time.Duration(k+1) / time.Duration(n+1)
	}
	return at
}

// stalls opens waves of stalled streams, holds each unread for
// stallHold, then checks that the server ended it.
type stalls struct {
	addr    string
	perWave int
	answers *answers
	// open counts the stalled streams open now.
	open atomic.Int64

	mu      sync.Mutex
	results []stalledResult
	errs    []string
}

// run opens a wave at each of waves after start, and returns once every
// stream was checked or ctx ended.
func (s *stalls) run(ctx context.Context, start time.Time, waves []time.Duration) {
	var wg sync.WaitGroup
	for _, at := range waves {
		wg.Go(func() {
			if !sleepCtx(ctx, time.Until(start.Add(at))) {
				return
			}
			var opened []*stalledStream
			for range s.perWave {
				st, err := openStalled(s.addr)
				if err != nil {
					s.fail(err)
					continue
				}
				s.open.Add(1)
				opened = append(opened, st)
			}
			var each sync.WaitGroup
			for _, st := range opened {
				each.Go(func() {
					defer s.open.Add(-1)
					res := st.end(stallHold)
					code, _ := strconv.Atoi(strings.Fields(res.status + " 0 0")[1])
					s.answers.add(askEvents, code, "a stalled stream: "+res.status)
					s.mu.Lock()
					s.results = append(s.results, res)
					s.mu.Unlock()
				})
			}
			each.Wait()
		})
	}
	wg.Wait()
}

func (s *stalls) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err.Error())
}

// sleepCtx waits d, and says whether ctx was still going at its end.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
