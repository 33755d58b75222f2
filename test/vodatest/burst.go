package vodatest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
)

// Burst is what SubmitBurst measured.
type Burst struct {
	// Names holds the job each submission was answered with, in
	// submission order.
	Names []string
	// Wall is the time from the first submission to the last answer.
	Wall time.Duration
	// Latencies holds each submission's time to its answer, sorted.
	Latencies []time.Duration
}

// SubmitBurst posts manifest (YAML) n times at once to the jobs route of
// the server at baseURL, each with header (e.g. a bearer token), on
// connections of its own, and fails t unless every answer is 201.
func SubmitBurst(t *testing.T, baseURL string, manifest []byte, n int, header http.Header) Burst {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}, Timeout: 60 * time.Second}
	defer hc.CloseIdleConnections()
	url := baseURL + api.RouteJobs
	b := Burst{Names: make([]string, n), Latencies: make([]time.Duration, n)}
	errs := make(chan error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(manifest))
			if err != nil {
				errs <- err
				return
			}
			req.Header = header.Clone()
			if req.Header == nil {
				req.Header = http.Header{}
			}
			req.Header.Set("Content-Type", "application/yaml")
			resp, err := hc.Do(req)
			if err != nil {
				errs <- err
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			b.Latencies[i] = time.Since(t0)
			if err != nil || resp.StatusCode != http.StatusCreated {
				errs <- fmt.Errorf("submission %d: %s %v %.200s", i, resp.Status, err, body)
				return
			}
			var j api.Job
			if err := json.Unmarshal(body, &j); err != nil {
				errs <- err
				return
			}
			b.Names[i] = j.Name
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	b.Wall = time.Since(began)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	slices.Sort(b.Latencies)
	return b
}

// Rate is the submissions answered per second.
func (b Burst) Rate() float64 { return float64(len(b.Names)) / b.Wall.Seconds() }

// Report is a line for logs and closing notes: the rate and latencies.
func (b Burst) Report(label string) string {
	q := func(p float64) time.Duration { return b.Latencies[int(p*float64(len(b.Latencies)-1))] }
	return fmt.Sprintf("%s: %d concurrent submissions in %v: %.0f jobs/s; latency p50 %v, p99 %v, max %v",
		label, len(b.Names), b.Wall.Round(time.Millisecond), b.Rate(),
		q(0.50).Round(time.Microsecond), q(0.99).Round(time.Microsecond), b.Latencies[len(b.Latencies)-1].Round(time.Microsecond))
}
