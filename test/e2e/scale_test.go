package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/store"
)

// BenchmarkJobsAt100k measures, rather than asserts, what a store of many
// finished jobs costs the binary: a store of VODA_SCALE_FINISHED (default
// 100,000) finished and VODA_SCALE_LIVE (default 1,000) live jobs is built
// with the store's API, the binary started on it, and it reports the
// latency (p50, p99 of 100 calls) of GET /api/v1/jobs's first page and of
// ?live=true, the time to read every page, the process's memory; then the
// binary is started again with --max-finished-jobs at a tenth of the
// finished jobs, and it reports the first retention pass (its time, the
// jobs it removed, the API's latency meanwhile) and the store file's size
// before and after. It takes minutes:
//
//	go test ./test/e2e -run '^$' -bench BenchmarkJobsAt100k -benchtime 1x -timeout 30m -v
func BenchmarkJobsAt100k(b *testing.B) {
	needProc(b)
	finished := envInt(b, "VODA_SCALE_FINISHED", 100000)
	live := envInt(b, "VODA_SCALE_LIVE", 1000)
	dir := b.TempDir()
	built := time.Now()
	buildScaleStore(b, dir, finished, live)
	path := filepath.Join(dir, "voda.db")
	b.Logf("built a store of %d finished and %d live jobs in %v: %.1f MB", finished, live, time.Since(built).Round(time.Second), fileMB(b, path))
	bin := buildForBench(b)
	for b.Loop() {
		keep := finished / 10
		args := []string{"--data-dir", dir, "--sim-nodes", "v100=4x8", "--log-level", "warn",
			"--finished-retention", "0", "--max-finished-jobs", "0"}
		started := time.Now()
		srv := startBenchServer(b, bin, args)
		waitReady(b, srv.Addr)
		b.Logf("ready in %v, RSS %d MiB (Go heap in use %.0f MiB; the rest is mostly the store file, mapped)", time.Since(started).Round(time.Millisecond),
			procRSSKiB(b, srv.PID())/1024, metricAt(b, srv.Addr, "go_memstats_heap_inuse_bytes")/(1<<20))
		base := "http://" + srv.Addr + api.RouteJobs
		for _, c := range []struct{ name, url string }{{"first-page", base}, {"live", base + "?live=true"}} {
			lat, size := callTimes(b, c.url, 100)
			b.Logf("GET %s: p50 %v, p99 %v, %d bytes", strings.TrimPrefix(c.url, "http://"+srv.Addr), lat[49], lat[98], size)
			b.ReportMetric(float64(lat[49].Microseconds())/1e3, c.name+"-p50-ms")
			b.ReportMetric(float64(lat[98].Microseconds())/1e3, c.name+"-p99-ms")
		}
		c, err := client.New(srv.Addr, &http.Client{Timeout: 10 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		readAll := time.Now()
		jobs, err := c.ListJobs(context.Background(), client.ListOptions{})
		if err != nil || len(jobs) != finished+live {
			b.Fatalf("ListJobs: %d jobs, %v", len(jobs), err)
		}
		b.Logf("every page (%d jobs, %d pages): %v; RSS after %d MiB (Go heap in use %.0f MiB)", len(jobs), (len(jobs)+api.DefaultListLimit-1)/api.DefaultListLimit,
			time.Since(readAll).Round(time.Millisecond), procRSSKiB(b, srv.PID())/1024, metricAt(b, srv.Addr, "go_memstats_heap_inuse_bytes")/(1<<20))
		b.ReportMetric(time.Since(readAll).Seconds(), "every-page-s")
		srv.stop()
		before := fileMB(b, path)

		// Retention: the first pass, at start, removes nine tenths.
		args = []string{"--data-dir", dir, "--sim-nodes", "v100=4x8", "--log-level", "info",
			"--finished-retention", "0", "--max-finished-jobs", strconv.Itoa(keep)}
		srv = startBenchServer(b, bin, args)
		base = "http://" + srv.Addr + api.RouteJobs
		var (
			mu   sync.Mutex
			lat  []time.Duration
			stop atomic.Bool
			wg   sync.WaitGroup
		)
		hc := &http.Client{Timeout: time.Minute}
		wg.Go(func() { // the API's latency while the pass runs
			for !stop.Load() {
				t0 := time.Now()
				if _, err := getAll(hc, base+"?live=true"); err != nil {
					b.Errorf("during retention: %v", err)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		})
		var took float64
		for deadline := time.Now().Add(20 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("no retention pass after 20 minutes")
			}
			if n := metricAt(b, srv.Addr, "voda_retention_duration_seconds_count"); n >= 1 {
				took = metricAt(b, srv.Addr, "voda_retention_duration_seconds_sum")
				break
			}
		}
		stop.Store(true)
		wg.Wait()
		removed := metricAt(b, srv.Addr, `voda_jobs_removed_total{reason="count"}`)
		kept := metricAt(b, srv.Addr, "voda_finished_jobs")
		slices.Sort(lat)
		apiP99, apiMax := time.Duration(0), time.Duration(0)
		if len(lat) > 0 {
			apiP99, apiMax = lat[len(lat)*99/100], lat[len(lat)-1]
		}
		srv.stop()
		after := fileMB(b, path)
		b.Logf("retention: removed %.0f (kept %.0f) in %.1f s; GET ?live=true meanwhile: %d calls, p99 %v, max %v; store file %.1f MB -> %.1f MB",
			removed, kept, took, len(lat), apiP99, apiMax, before, after)
		b.ReportMetric(took, "retention-s")
		b.ReportMetric(before, "MB-before")
		b.ReportMetric(after, "MB-after")
	}
}

func fileMB(b *testing.B, path string) float64 {
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return float64(info.Size()) / 1e6
}

// buildScaleStore fills dir's embedded store as the API and the
// schedulers would have: finished jobs submitted a minute apart over the
// last months, each with its placement history and progress, then live
// ones, waiting. Concurrent creates share commits.
func buildScaleStore(b *testing.B, dir string, finished, live int) {
	ctx := context.Background()
	s, err := store.Open(ctx, "", dir)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := s.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}()
	doc, err := yaml.YAMLToJSON(manifest("scale", 1, 2, 1000))
	if err != nil {
		b.Fatal(err)
	}
	progress := []byte(`{"latest":{"generation":"g-1","workers":2,"nodes":1,"steps":120000,"epoch":1000,"totalEpochs":1000},` +
		`"measured":{"placements":[{"workers":1,"nodes":1,"seconds":3000,"work":50},{"workers":2,"nodes":1,"seconds":9000,"work":290}]},"pad":"` +
		strings.Repeat("p", 400) + `"}`)
	now := time.Now()
	first := now.Add(-time.Duration(finished+live) * time.Minute)
	job := func(i int) store.Job {
		name := fmt.Sprintf("scale-%06d", i)
		submit := first.Add(time.Duration(i) * time.Minute)
		j := store.Job{Name: name, Kind: "MPIJob", Namespace: "default", Manifest: doc,
			Spec:   model.JobSpec{Name: name, GPUType: "v100", MinWorkers: 1, MaxWorkers: 2, RequestedWorkers: 1, Epochs: 1000, SubmitTime: submit},
			Status: store.JobStatus{State: model.JobState{Status: model.StatusWaiting}, Est: model.Estimates{RemainingSeconds: -1}, Updated: submit}}
		if i < finished {
			end := submit.Add(50 * time.Minute)
			j.Status.State = model.JobState{Status: model.StatusCompleted, FirstStart: submit.Add(time.Minute), RunSeconds: 2940, AttainedService: 5880}
			j.Status.Progress, j.Status.FinishTime, j.Status.Updated = 1, end, end
			j.Status.Allocations = []store.Allocation{
				{At: submit.Add(time.Minute), Placement: model.JobPlacement{{Node: "v100-node-0", Workers: 1}}},
				{At: submit.Add(10 * time.Minute), Placement: model.JobPlacement{{Node: "v100-node-1", Workers: 2}}},
				{At: end},
			}
			j.Progress = progress
		}
		return j
	}
	sem := make(chan struct{}, 256)
	var wg sync.WaitGroup
	var failed atomic.Value
	for i := range finished + live {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.CreateJob(ctx, job(i)); err != nil {
				failed.Store(err)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

func waitReady(b *testing.B, addr string) {
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + api.RouteReadyz)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	b.Fatal("the server was not ready after 5 minutes")
}

// getAll reads url's answer whole and returns its size.
func getAll(hc *http.Client, url string) (int64, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return n, err
}

// callTimes makes n sequential calls of url, after one to warm up, and
// returns their times sorted and the answer's size.
func callTimes(b *testing.B, url string, n int) ([]time.Duration, int64) {
	hc := &http.Client{Timeout: time.Minute}
	size, err := getAll(hc, url)
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, n)
	for i := range lat {
		t0 := time.Now()
		if _, err := getAll(hc, url); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	slices.Sort(lat)
	return lat, size
}
