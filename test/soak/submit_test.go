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
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/test/vodatest"
)

// submitConns is how many submissions are in flight at most: enough for
// a burst to arrive at once, as a sweep's client sends it.
const submitConns = 64

// burstShare is the share of the jobs submitted in bursts; the rest come
// at a steady rate.
const burstShare = 0.3

// jobManifest is job i's manifest: mostly small, short jobs, some wide
// and some long, drawn from i so that a run is the same every time. On
// the simulated cluster an epoch is 60 s on one GPU (the amdahl model):
// at --speed 500 the short jobs last a fraction of a second of wall
// time, the long ones a few seconds.
func jobManifest(i int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 26))
	minWorkers := []int{1, 1, 1, 2, 4}[r.IntN(5)]
	maxWorkers := minWorkers * []int{1, 2, 4}[r.IntN(3)]
	epochs := 1 + r.IntN(4)
	if r.IntN(10) == 0 {
		epochs = 20 + r.IntN(41)
	}
	m := vodatest.Manifest(jobName(i), minWorkers, maxWorkers, epochs)
	// Jobs of one application share what Voda measured of it
	// (docs/progress.md); a name of its own for each job would make each
	// an application.
	app := fmt.Sprintf("  name: %s\n  annotations:\n    vodascheduler/application: soak-app-%02d\n", jobName(i), r.IntN(applications))
	return bytes.Replace(m, []byte("  name: "+jobName(i)+"\n"), []byte(app), 1)
}

// applications is how many applications the soak's jobs train.
const applications = 20

// schedule is when each job is submitted: a steady rate over d, with
// bursts of burst jobs at once spread evenly over it. It returns the
// times of the jobs in order, from the start; the jobs of a burst share
// a time.
func schedule(jobs, burst int, d time.Duration) []time.Duration {
	bursts := int(burstShare * float64(jobs) / float64(burst))
	steady := jobs - bursts*burst
	at := make([]time.Duration, 0, jobs)
	nextBurst := func(k int) time.Duration { return d * time.Duration(2*k+1) / time.Duration(2*bursts) }
	k := 0
	for i := range steady {
		t := d * time.Duration(i) / time.Duration(max(steady, 1))
		for ; k < bursts && nextBurst(k) <= t; k++ {
			for range burst {
				at = append(at, nextBurst(k))
			}
		}
		at = append(at, t)
	}
	for ; k < bursts; k++ {
		for range burst {
			at = append(at, nextBurst(k))
		}
	}
	return at
}

// submitter posts the soak's jobs on schedule. A slow server holds the
// jobs due back (at most submitConns in flight), so the schedule is the
// fastest the jobs arrive.
type submitter struct {
	hc      *http.Client
	url     string
	sent    sendTimes
	answers *answers
	// created counts the submissions answered 201.
	created atomic.Int64
}

// run submits every job of at, as it falls due from start, and returns
// when each has its answer or ctx ended.
func (s *submitter) run(ctx context.Context, start time.Time, at []time.Duration) {
	due := make(chan int, len(at))
	var wg sync.WaitGroup
	for range submitConns {
		wg.Go(func() {
			for i := range due {
				s.submit(ctx, i)
			}
		})
	}
	for i, t := range at {
		if wait := time.Until(start.Add(t)); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
		if ctx.Err() != nil {
			break
		}
		due <- i
	}
	close(due)
	wg.Wait()
}

func (s *submitter) submit(ctx context.Context, i int) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+api.RouteJobs, bytes.NewReader(jobManifest(i)))
	if err != nil {
		s.answers.add(askSubmit, noAnswer, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/yaml")
	s.sent[i].Store(time.Now().UnixNano())
	resp, err := s.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			s.answers.add(askSubmit, noAnswer, err.Error())
		}
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	s.answers.add(askSubmit, resp.StatusCode, string(body))
	if resp.StatusCode == http.StatusCreated {
		s.created.Add(1)
	}
}

func TestSchedule(t *testing.T) {
	tests := []struct {
		name        string
		jobs, burst int
		d           time.Duration
		wantBursts  int
	}{
		{name: "small", jobs: 3000, burst: 200, d: 45 * time.Second, wantBursts: 4},
		{name: "full", jobs: 100000, burst: 2000, d: 10 * time.Minute, wantBursts: 15},
		{name: "bursts larger than the share", jobs: 10, burst: 100, d: time.Second, wantBursts: 0},
		{name: "one job", jobs: 1, burst: 1, d: time.Second, wantBursts: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			at := schedule(tc.jobs, tc.burst, tc.d)
			if len(at) != tc.jobs {
				t.Fatalf("%d times, want %d", len(at), tc.jobs)
			}
			same, bursts := 1, 0
			for i := 1; i < len(at); i++ {
				if at[i] < at[i-1] || at[i] >= tc.d {
					t.Fatalf("time %d is %v after %v, or past %v", i, at[i], at[i-1], tc.d)
				}
				if at[i] == at[i-1] {
					same++
					continue
				}
				if same >= tc.burst && tc.burst > 1 {
					bursts++
				}
				same = 1
			}
			if same >= tc.burst && tc.burst > 1 {
				bursts++
			}
			if bursts != tc.wantBursts {
				t.Errorf("%d bursts of %d, want %d", bursts, tc.burst, tc.wantBursts)
			}
		})
	}
}

// TestJobManifest: every job's manifest is one the server takes, for the
// simulated cluster's v100 nodes, of an application of the soak's, with
// the mix of sizes jobManifest promises.
func TestJobManifest(t *testing.T) {
	apps := map[string]bool{}
	long, wide := 0, 0
	const n = 1000
	for i := range n {
		s, err := jobspec.Parse(jobManifest(i), jobspec.Options{GPUTypes: []string{"v100"}, RequireEpochs: true})
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		if s.Name != jobName(i) || !strings.HasPrefix(s.Application, "soak-app-") || s.JobSpec.GPUType != "v100" {
			t.Fatalf("job %d: name %q, application %q, GPU type %q", i, s.Name, s.Application, s.JobSpec.GPUType)
		}
		apps[s.Application] = true
		if s.JobSpec.Epochs >= 20 {
			long++
		}
		if s.JobSpec.MaxWorkers >= 8 {
			wide++
		}
	}
	if len(apps) != applications || long < n/20 || long > n/5 || wide < n/10 {
		t.Errorf("%d applications, %d long jobs and %d wide ones of %d; want %d, about a tenth long, some wide",
			len(apps), long, wide, n, applications)
	}
}
