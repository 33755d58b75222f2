package vodatest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
)

// ReportRun is what FireReports measured.
type ReportRun struct {
	// Wall is the time from the first report to the last answer of the
	// last round (probes excluded).
	Wall time.Duration
	// Latencies holds each report's time to its answer (in PaceReports,
	// from when it was due), sorted.
	Latencies []time.Duration
	// Interleaved counts the jobs whose probe found another generation
	// stored (the simulated cluster reported in between) and so was
	// answered 200.
	Interleaved int
}

// Report is a line for logs and closing notes: the rate and latencies.
func (r ReportRun) Report(label string) string {
	q := func(p float64) time.Duration { return r.Latencies[int(p*float64(len(r.Latencies)-1))] }
	return fmt.Sprintf("%s: %d reports in %v: %.0f reports/s; latency p50 %v, p99 %v, max %v",
		label, len(r.Latencies), r.Wall.Round(time.Millisecond), float64(len(r.Latencies))/r.Wall.Seconds(),
		q(0.50).Round(time.Microsecond), q(0.99).Round(time.Microsecond), r.Latencies[len(r.Latencies)-1].Round(time.Microsecond))
}

// progressBody is a job's report number round (from 1) in generation
// "load" on one worker, having done steps steps a round: about the size
// of docs/progress.md's example, its counters growing with round.
func progressBody(round int64, steps int64) []byte {
	s := round * steps
	return fmt.Appendf(nil, `{"generation":"load","workers":1,"nodes":1,"steps":%d,"samples":%d,"epoch":%.2f,`+
		`"globalBatchSize":32,"localBatchSize":32,"stepSeconds":0.21,"metrics":{"loss":%.4f}}`,
		s, s*32, float64(s)/1000, 1/float64(round+1))
}

// reporter posts progress reports to the server at baseURL, for jobs
// jobs at once, each on a keep-alive connection of its own.
type reporter struct {
	hc      *http.Client
	baseURL string
}

func newReporter(baseURL string, jobs int) *reporter {
	return &reporter{hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: jobs}, Timeout: 60 * time.Second}, baseURL: baseURL}
}

// post sends body as job name's report and returns the answer's status
// and body.
func (r *reporter) post(name string, body []byte) (int, []byte, error) {
	resp, err := r.hc.Post(r.baseURL+strings.Replace(api.RouteJobProgress, "{name}", name, 1), "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// report sends job name's report number round and fails unless it is
// answered 200.
func (r *reporter) report(name string, round, steps int64) error {
	code, reply, err := r.post(name, progressBody(round, steps))
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("job %s, report %d: %d %v %.200s", name, round, code, err, reply)
	}
	return nil
}

// probe checks that job name's stored state holds its report number
// round: steps 0 in the same generation is a decrease, refused naming the
// steps stored, which must be that round's. A 200 (interleaved) means the
// stored generation is another: the simulated cluster's report came after
// the round.
func (r *reporter) probe(name string, round, steps int64) (interleaved bool, err error) {
	code, reply, err := r.post(name, []byte(`{"generation":"load","workers":1,"steps":0,"epoch":0}`))
	want := fmt.Sprintf("steps: 0 is below %d, reported earlier", round*steps)
	switch {
	case err != nil:
		return false, fmt.Errorf("job %s, probe: %w", name, err)
	case code == http.StatusOK:
		return true, nil
	case code != http.StatusBadRequest || !bytes.Contains(reply, []byte(want)):
		return false, fmt.Errorf("job %s does not hold its last round: the probe was answered %d %.300s, want 400 %q", name, code, reply, want)
	}
	return false, nil
}

// FireReports has every job in names (running on one worker each) send
// rounds progress reports in a row, steps steps apart, to the server at
// baseURL: one goroutine per job, all at once, on keep-alive connections.
// After its last round each job sends a probe that checks its stored
// state holds that round. It fails t unless every report is answered 200
// and every probe finds the last round (or, see Interleaved, another
// generation).
func FireReports(t *testing.T, baseURL string, names []string, rounds int, steps int64) ReportRun {
	t.Helper()
	rep := newReporter(baseURL, len(names))
	defer rep.hc.CloseIdleConnections()
	latencies := make([][]time.Duration, len(names))
	return runReporters(t, rep, names, steps, latencies, func(i int, name string, _ time.Time) (int64, error) {
		for r := range rounds {
			t0 := time.Now()
			err := rep.report(name, int64(r+1), steps)
			latencies[i] = append(latencies[i], time.Since(t0))
			if err != nil {
				return 0, err
			}
		}
		return int64(rounds), nil
	})
}

// PaceReports has every job in names (running on one worker each, having
// sent rounds reports before) report at a fixed offered rate, rate
// reports a second in all, for d: each job every len(names)/rate
// seconds, the jobs' schedules spread evenly over that interval, as jobs
// reporting on their own clocks are. Each report's latency is measured
// from the time it was due, not from when it was sent, so that a report
// held up behind its job's previous one counts the wait: an open loop,
// in which a slow server does not lower the offered rate. Wall is from
// the first report due to the last answer. It checks the answers and the
// stored states as FireReports does.
func PaceReports(t *testing.T, baseURL string, names []string, rounds int, steps int64, rate float64, d time.Duration) ReportRun {
	t.Helper()
	rep := newReporter(baseURL, len(names))
	defer rep.hc.CloseIdleConnections()
	every := time.Duration(float64(len(names)) / rate * float64(time.Second))
	latencies := make([][]time.Duration, len(names))
	return runReporters(t, rep, names, steps, latencies, func(i int, name string, began time.Time) (int64, error) {
		round := int64(rounds)
		for due := began.Add(time.Duration(float64(i) / rate * float64(time.Second))); due.Sub(began) < d; due = due.Add(every) {
			time.Sleep(time.Until(due))
			round++
			err := rep.report(name, round, steps)
			latencies[i] = append(latencies[i], time.Since(due))
			if err != nil {
				return 0, err
			}
		}
		return round, nil
	})
}

// runReporters runs send for every job in names at once, each in a
// goroutine of its own, all started at the same time (began), and then
// probes each job for the last round send returns. It fails t on any
// error, and returns the run: the latencies send recorded, a slice a job,
// and the time from began to the last send's end.
func runReporters(t *testing.T, rep *reporter, names []string, steps int64, latencies [][]time.Duration,
	send func(i int, name string, began time.Time) (last int64, err error)) ReportRun {
	t.Helper()
	ends := make([]time.Time, len(names))
	interleaved := make([]bool, len(names))
	errs := make(chan error, len(names))
	start := make(chan struct{})
	var began time.Time
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			<-start
			last, err := send(i, name, began)
			if err != nil {
				errs <- err
				return
			}
			ends[i] = time.Now()
			if interleaved[i], err = rep.probe(name, last, steps); err != nil {
				errs <- err
			}
		})
	}
	began = time.Now()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	run := ReportRun{Latencies: slices.Concat(latencies...)}
	slices.Sort(run.Latencies)
	run.Wall = slices.MaxFunc(ends, time.Time.Compare).Sub(began)
	for _, in := range interleaved {
		if in {
			run.Interleaved++
		}
	}
	return run
}

// ProcCPU is the CPU time (user and system) process pid has used, 0 if
// /proc does not say.
func ProcCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command (in parentheses): utime and stime are
	// the 12th and 13th, in clock ticks (100 a second on Linux).
	_, rest, _ := bytes.Cut(b, []byte(") "))
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100)
}

// SelfCPU is the CPU time the calling process has used.
func SelfCPU() time.Duration { return ProcCPU(os.Getpid()) }

// MetricSamples returns the samples of the /metrics of the server at
// baseURL whose line begins with prefix, by name and labels.
func MetricSamples(t *testing.T, baseURL, prefix string) map[string]float64 {
	t.Helper()
	return MetricSamplesAs(t, baseURL, prefix, nil)
}

// MetricSamplesAs is MetricSamples for a server with authentication: the
// request carries header (e.g. a bearer token).
func MetricSamplesAs(t *testing.T, baseURL, prefix string, header http.Header) map[string]float64 {
	t.Helper()
	out, err := ReadMetrics(http.DefaultClient, baseURL, prefix, header)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ReadMetrics is MetricSamplesAs through hc that returns its error
// instead of failing a test: for a caller that scrapes a server under
// load, where one scrape that timed out is a gap in a series rather than
// the end of the test, or that scrapes outside the test's goroutine.
func ReadMetrics(hc *http.Client, baseURL, prefix string, header http.Header) (map[string]float64, error) {
	req, err := http.NewRequest(http.MethodGet, baseURL+api.RouteMetrics, nil)
	if err != nil {
		return nil, err
	}
	if header != nil {
		req.Header = header.Clone()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", api.RouteMetrics, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metric %q: no value", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("GET %s: %w", api.RouteMetrics, err)
	}
	return out, nil
}
