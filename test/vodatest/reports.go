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
	// Latencies holds each report's time to its answer, sorted.
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

// FireReports has every job in names (running on one worker each) send
// rounds progress reports in a row, steps steps apart, to the server at
// baseURL: one goroutine per job, all at once, on keep-alive connections.
// After its last round each job sends a probe that checks its stored
// state holds that round. It fails t unless every report is answered 200
// and every probe finds the last round (or, see Interleaved, another
// generation).
func FireReports(t *testing.T, baseURL string, names []string, rounds int, steps int64) ReportRun {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: len(names)}, Timeout: 60 * time.Second}
	defer hc.CloseIdleConnections()
	post := func(name string, body []byte) (int, []byte, error) {
		resp, err := hc.Post(baseURL+strings.Replace(api.RouteJobProgress, "{name}", name, 1), "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}

	latencies := make([][]time.Duration, len(names))
	ends := make([]time.Time, len(names))
	probed := make([]int, len(names)) // http status of each job's probe
	errs := make(chan error, len(names))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, name := range names {
		latencies[i] = make([]time.Duration, rounds)
		wg.Go(func() {
			<-start
			for r := range rounds {
				body := progressBody(int64(r+1), steps)
				t0 := time.Now()
				code, reply, err := post(name, body)
				latencies[i][r] = time.Since(t0)
				if err != nil || code != http.StatusOK {
					errs <- fmt.Errorf("job %s, report %d: %d %v %.200s", name, r+1, code, err, reply)
					return
				}
			}
			ends[i] = time.Now()
			// The probe: steps 0 in the same generation is a decrease,
			// refused naming the steps stored, which must be the last
			// round's. A 200 means the stored generation is another:
			// the simulated cluster's report came after the last round.
			code, reply, err := post(name, []byte(`{"generation":"load","workers":1,"steps":0,"epoch":0}`))
			probed[i] = code
			want := fmt.Sprintf("steps: 0 is below %d, reported earlier", int64(rounds)*steps)
			switch {
			case err != nil:
				errs <- fmt.Errorf("job %s, probe: %v", name, err)
			case code == http.StatusOK:
			case code != http.StatusBadRequest || !bytes.Contains(reply, []byte(want)):
				errs <- fmt.Errorf("job %s does not hold its last round: the probe was answered %d %.300s, want 400 %q", name, code, reply, want)
			}
		})
	}
	began := time.Now()
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
	for _, code := range probed {
		if code == http.StatusOK {
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
	resp, err := http.Get(baseURL + api.RouteMetrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric %s: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
