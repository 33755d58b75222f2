package soak

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/vodascheduler/voda/internal/api"
)

// listEvery is the time between two calls of the latency probe, which
// alternates the first page of GET /api/v1/jobs and ?live=true.
const listEvery = 250 * time.Millisecond

// listProbe calls the job list as people and scripts do, and keeps the
// latencies since the last take.
type listProbe struct {
	hc      *http.Client
	baseURL string
	answers *answers

	mu         sync.Mutex
	list, live []time.Duration
}

// run calls the lists every listEvery until ctx ends.
func (p *listProbe) run(ctx context.Context) {
	every(ctx, listEvery, func(n int) {
		kind, url, into := askList, p.baseURL+api.RouteJobs, &p.list
		if n%2 == 1 {
			kind, url, into = askLive, url+"?live=true", &p.live
		}
		d, ok := p.call(ctx, kind, url)
		if ok {
			p.mu.Lock()
			*into = append(*into, d)
			p.mu.Unlock()
		}
	})
}

// call reads one list to its end and returns its time, or false when
// it failed.
func (p *listProbe) call(ctx context.Context, kind, url string) (time.Duration, bool) {
	t0 := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		p.answers.add(kind, noAnswer, err.Error())
		return 0, false
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			p.answers.add(kind, noAnswer, err.Error())
		}
		return 0, false
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	d := time.Since(t0)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			p.answers.add(kind, noAnswer, fmt.Sprintf("read the list: %v", err))
		}
		return 0, false
	case resp.StatusCode != http.StatusOK || n == 0:
		p.answers.add(kind, resp.StatusCode, fmt.Sprintf("%d bytes", n))
		return 0, false
	}
	p.answers.add(kind, resp.StatusCode, "")
	return d, true
}

// take returns the latencies since the last call.
func (p *listProbe) take() (list, live []time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list, live = p.list, p.live
	p.list, p.live = nil, nil
	return list, live
}

// quantile is the q-quantile of ds in milliseconds (the sample at rank
// q×(n−1) once sorted), NaN for none. It sorts ds.
func quantile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	slices.Sort(ds)
	return ms(ds[int(q*float64(len(ds)-1))])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// sample is the state of the run at one time.
type sample struct {
	at time.Duration // since the first submission was due
	// submitted counts the submissions answered 201.
	submitted int
	// live is the jobs created and not finished, from the counters;
	// finished the server's gauge, as of its last retention pass; kept
	// the finished jobs in the store now: those that finished less those
	// removed, from the counters.
	live, finished, kept, removed float64
	rssMiB, heapMiB, storeMiB     float64
	// cpu is the server's CPU time per second since the last sample, in
	// milliseconds.
	cpu              float64
	listP50, listP99 float64
	liveP50, liveP99 float64
	lagP50, lagP99   float64
	lagMax           float64
	dashboards       int // connected
	dashboardEnds    int // streams that ended, every dashboard's, so far
	streams, dropped float64
	stalled          int // stalled streams open
	reports, races   int64
	scrapeErr        string
}

// column is one figure of the samples: its name and how it is written.
type column struct {
	name  string
	value func(s sample) string
}

// columns are the CSV's and the table's columns.
var columns = []column{
	{"t_s", func(s sample) string { return strconv.FormatFloat(s.at.Seconds(), 'f', 0, 64) }},
	{"submitted", func(s sample) string { return strconv.Itoa(s.submitted) }},
	{"live", num(func(s sample) float64 { return s.live })},
	{"finished_gauge", num(func(s sample) float64 { return s.finished })},
	{"finished_kept", num(func(s sample) float64 { return s.kept })},
	{"removed", num(func(s sample) float64 { return s.removed })},
	{"rss_mib", num(func(s sample) float64 { return s.rssMiB })},
	{"heap_mib", num(func(s sample) float64 { return s.heapMiB })},
	{"store_mib", num(func(s sample) float64 { return s.storeMiB })},
	{"cpu_ms_per_s", num(func(s sample) float64 { return s.cpu })},
	{"list_p50_ms", num(func(s sample) float64 { return s.listP50 })},
	{"list_p99_ms", num(func(s sample) float64 { return s.listP99 })},
	{"live_p50_ms", num(func(s sample) float64 { return s.liveP50 })},
	{"live_p99_ms", num(func(s sample) float64 { return s.liveP99 })},
	{"lag_p50_ms", num(func(s sample) float64 { return s.lagP50 })},
	{"lag_p99_ms", num(func(s sample) float64 { return s.lagP99 })},
	{"lag_max_ms", num(func(s sample) float64 { return s.lagMax })},
	{"dashboards", func(s sample) string { return strconv.Itoa(s.dashboards) }},
	{"dashboard_ends", func(s sample) string { return strconv.Itoa(s.dashboardEnds) }},
	{"server_streams", num(func(s sample) float64 { return s.streams })},
	{"streams_dropped", num(func(s sample) float64 { return s.dropped })},
	{"stalled_open", func(s sample) string { return strconv.Itoa(s.stalled) }},
	{"reports", func(s sample) string { return strconv.FormatInt(s.reports, 10) }},
	{"races", func(s sample) string { return strconv.FormatInt(s.races, 10) }},
}

// num formats a figure to a tenth, empty when there is none (NaN).
func num(f func(sample) float64) func(sample) string {
	return func(s sample) string {
		v := f(s)
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
}

// writeCSV writes the samples with a header line.
func writeCSV(w io.Writer, samples []sample) error {
	cw := csv.NewWriter(w)
	row := make([]string, len(columns))
	for i, c := range columns {
		row[i] = c.name
	}
	if err := cw.Write(row); err != nil {
		return err
	}
	for _, s := range samples {
		for i, c := range columns {
			row[i] = c.value(s)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// table is the samples as aligned text, for the test's log.
func table(samples []sample) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 1, ' ', tabwriter.AlignRight)
	for i, c := range columns {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, c.name)
	}
	fmt.Fprintln(tw, "\t")
	for _, s := range samples {
		for i, c := range columns {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			v := c.value(s)
			if v == "" {
				v = "-"
			}
			fmt.Fprint(tw, v)
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
	return b.String()
}

// thirdsMax returns the largest of f over the first and over the last
// third of the samples.
func thirdsMax(samples []sample, f func(sample) float64) (first, last float64) {
	n := len(samples) / 3
	first, last = math.NaN(), math.NaN()
	for i, s := range samples {
		v := f(s)
		if math.IsNaN(v) {
			continue
		}
		if i < n && !(v <= first) {
			first = v
		}
		if i >= len(samples)-n && !(v <= last) {
			last = v
		}
	}
	return first, last
}

func TestSamplesOut(t *testing.T) {
	samples := []sample{
		{at: 5 * time.Second, submitted: 10, rssMiB: 40, listP50: math.NaN()},
		{at: 10 * time.Second, submitted: 20, rssMiB: 60, listP50: 1.26},
		{at: 15 * time.Second, submitted: 30, rssMiB: 50, listP50: 2},
	}
	var b strings.Builder
	if err := writeCSV(&b, samples); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil || len(rows) != 4 || len(rows[0]) != len(columns) {
		t.Fatalf("CSV of %d rows, %v:\n%s", len(rows), err, b.String())
	}
	col := slices.IndexFunc(columns, func(c column) bool { return c.name == "list_p50_ms" })
	if got := []string{rows[1][col], rows[2][col], rows[0][0], rows[3][0]}; !slices.Equal(got, []string{"", "1.3", "t_s", "15"}) {
		t.Errorf("list_p50_ms of the first two rows, the first column's name and last value: %q", got)
	}
	if lines := strings.Count(table(samples), "\n"); lines != 4 {
		t.Errorf("the table has %d lines, want 4", lines)
	}
	first, last := thirdsMax(samples, func(s sample) float64 { return s.rssMiB })
	if first != 40 || last != 50 {
		t.Errorf("thirdsMax = %v, %v; want 40, 50", first, last)
	}
	if q := quantile([]time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}, 0.5); q != 2 {
		t.Errorf("median of 1, 2, 3 ms = %v", q)
	}
}
