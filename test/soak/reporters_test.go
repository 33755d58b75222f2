package soak

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vodascheduler/voda/internal/api"
)

// Reporters' pace: each steady reporter sends a report every
// reportEvery; every raceEvery, racers reporters race on one job with
// raceReports reports each, sent as fast as they are answered. With the
// default 3 reporters that is about 24 reports a second. Each report is a
// write of the store, which the schedulers' writes wait behind: at 90 a
// second (a report every 50 ms, a race every 2 s) the small run's jobs
// finished at 11 a second instead of 32.
const (
	reportEvery = 250 * time.Millisecond
	raceEvery   = 5 * time.Second
	racers      = 12
	raceReports = 5
)

// reporters post progress reports for the jobs a dashboard shows running,
// as training jobs' rank 0 do (docs/progress.md), each in a generation of
// its own with counters that only grow.
type reporters struct {
	hc      *http.Client
	baseURL string
	dash    *dashboard
	answers *answers
	// sent counts the reports sent; noRetryAfter the 429s without a
	// Retry-After, which docs/progress.md promises.
	sent, noRetryAfter atomic.Int64
	// races counts the races run.
	races atomic.Int64
}

// report sends one report for job name in generation gen, with steps
// steps on workers workers, and returns the answer's code.
func (r *reporters) report(ctx context.Context, name, gen string, workers int, steps int64) int {
	body := fmt.Appendf(nil, `{"generation":%q,"workers":%d,"steps":%d,"epoch":%.7f,"stepSeconds":0.2,"metrics":{"loss":%.4f}}`,
		gen, max(workers, 1), steps, float64(steps)/1e7, 1/float64(steps+1))
	url := r.baseURL + strings.Replace(api.RouteJobProgress, "{name}", name, 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		r.answers.add(askReport, noAnswer, err.Error())
		return noAnswer
	}
	req.Header.Set("Content-Type", "application/json")
	r.sent.Add(1)
	resp, err := r.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			r.answers.add(askReport, noAnswer, err.Error())
		}
		return noAnswer
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	r.answers.add(askReport, resp.StatusCode, fmt.Sprintf("job %s: %s", name, reply))
	if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
		r.noRetryAfter.Add(1)
	}
	return resp.StatusCode
}

// steady is reporter k: a report every reportEvery for a running job
// picked at random, until ctx ends.
func (r *reporters) steady(ctx context.Context, k int) {
	rng := rand.New(rand.NewPCG(uint64(k), 17))
	var steps int64
	every(ctx, reportEvery, func(int) {
		name, workers, ok := r.dash.pickRunning(rng)
		if !ok {
			return
		}
		steps += 100
		// A resize starts a new generation (docs/progress.md), and the
		// reporter's steps only grow, so that none of its reports is a
		// decrease within a generation.
		r.report(ctx, name, fmt.Sprintf("soak-reporter-%d-w%d", k, workers), workers, steps)
	})
}

// race has racers reporters send raceReports reports each for one
// running job at once, every raceEvery, until ctx ends: after a Horovod
// reset, or with every rank reporting, one job has many reporters.
func (r *reporters) race(ctx context.Context) {
	rng := rand.New(rand.NewPCG(99, 17))
	every(ctx, raceEvery, func(n int) {
		name, workers, ok := r.dash.pickRunning(rng)
		if !ok {
			return
		}
		r.races.Add(1)
		var wg sync.WaitGroup
		for k := range racers {
			wg.Go(func() {
				gen := fmt.Sprintf("soak-race-%d-%d", n, k)
				for i := range raceReports {
					if r.report(ctx, name, gen, workers, int64(i+1)*100) != http.StatusOK {
						return
					}
				}
			})
		}
		wg.Wait()
	})
}

// every calls f every d, with the number of the call from 0, until ctx
// ends; a call that takes longer than d delays the next.
func every(ctx context.Context, d time.Duration, f func(n int)) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f(n)
	}
}
