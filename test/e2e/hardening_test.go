package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/test/vodatest"
)

// burstJobs is the size of the burst that used to leave finished jobs
// running again; VODA_BURST_JOBS overrides it.
func burstJobs(t *testing.T) int {
	if v := os.Getenv("VODA_BURST_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("VODA_BURST_JOBS=%q is not a positive integer", v)
		}
		return n
	}
	return 2000
}

// submitAll posts n copies of body with a few concurrent clients and
// returns the jobs' names.
func submitAll(t *testing.T, srv *server, n int, body []byte) []string {
	t.Helper()
	const clients = 32
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 60 * time.Second}
	url := "http://" + srv.Addr + api.RouteJobs
	names := make([]string, n)
	next := make(chan int)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				resp, err := hc.Post(url, "application/yaml", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					errs <- fmt.Errorf("submission %d: %s %.300s", i, resp.Status, b)
					return
				}
				name, ok := jsonField(b, "name")
				if !ok {
					errs <- fmt.Errorf("submission %d: no name in %.300s", i, b)
					return
				}
				names[i] = name
			}
		}()
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			t.Fatal(err)
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return names
}

// jsonField reads a top-level string field the cheap way.
func jsonField(b []byte, key string) (string, bool) {
	i := bytes.Index(b, []byte(`"`+key+`": "`))
	if i < 0 {
		return "", false
	}
	rest := b[i+len(key)+5:]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return string(rest[:j]), true
}

// metric returns a sample of the server's /metrics, 0 if absent.
func metric(t *testing.T, srv *server, sample string) float64 {
	t.Helper()
	return metricAt(t, srv.Addr, sample)
}

// metricAt returns a sample of the /metrics of the server at addr, 0 if
// absent.
func metricAt(t testing.TB, addr, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + api.RouteMetrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", sample, err)
			}
			return v
		}
	}
	return 0
}

// A burst of 2,000 submissions at high speed, with resyncs racing job
// ends all along, left a dozen Completed jobs Running again on GPUs they
// never gave back, and the completed counter above the job count. Every
// job must end Completed exactly once, and the finished ones hold nothing.
func TestDefect_BurstEveryJobCompletesExactlyOnce(t *testing.T) {
	n := burstJobs(t)
	srv := startServer(t, "--sim-nodes", "v100=4x8", "--data-dir", t.TempDir(), "--speed", "500", "--resync", "500ms", "--log-level", "warn")
	began := time.Now()
	names := submitAll(t, srv, n, manifest("burst", 1, 2, 1))
	submitted := time.Since(began)
	c := srv.Client()
	waitFor(t, "every job to finish", 10*time.Minute, func() (bool, error) {
		list, err := c.ListJobs(ctxT(t), clientListAll)
		if err != nil {
			return false, err
		}
		return count(list, "Completed") == n, nil
	})
	// Give a late, wrong re-admission the time to show: a few resyncs.
	time.Sleep(time.Second)
	list, err := c.ListJobs(ctxT(t), clientListAll)
	if err != nil {
		t.Fatal(err)
	}
	submittedNames := map[string]bool{}
	for _, name := range names {
		submittedNames[name] = true
	}
	checkExactlyOnce(t, list, submittedNames)
	readmitted := 0
	for _, j := range list {
		if j.Status != "Completed" || j.Workers != 0 || len(j.Placement) != 0 {
			readmitted++
			t.Errorf("job %s is %s on %d workers after finishing", j.Name, j.Status, j.Workers)
		}
	}
	sched, err := c.GetScheduler(ctxT(t), "v100")
	if err != nil {
		t.Fatal(err)
	}
	completed := metric(t, srv, `voda_jobs_completed_total{gpu_type="v100"}`)
	t.Logf("burst of %d jobs: submitted in %v, all finished in %v; re-admitted %d; completed counter %v; GPUs in use %d",
		n, submitted.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), readmitted, completed, sched.GPUsInUse)
	if completed != float64(n) {
		t.Errorf("voda_jobs_completed_total = %v, want %d", completed, n)
	}
	if sched.GPUsInUse != 0 || sched.Running != 0 || sched.Waiting != 0 {
		t.Errorf("scheduler after the burst: %d GPUs in use, %d running, %d waiting; want none", sched.GPUsInUse, sched.Running, sched.Waiting)
	}
}

// sigtermTries is how many SIGTERM and restart rounds run.
const sigtermTries = 20

// SIGTERM with about 700 live jobs hung in 15 of 15 tries: a job's end
// reported during the shutdown waited forever on the stopped scheduler
// loop, and the process kept the store's file lock with its API closed.
// Now it exits promptly and the next start succeeds, every time.
func TestDefect_SIGTERMWithLiveJobsExitsPromptly(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, "--sim-nodes", "v100=4x8", "--data-dir", dir, "--speed", "60", "--log-level", "warn")
	// 700 jobs: short ones end all the time (so ends race the shutdown),
	// long ones keep the scheduler full.
	short := submitAll(t, srv, 100, manifest("short", 1, 2, 1))
	long := submitAll(t, srv, 600, manifest("long", 1, 4, 50))
	t.Logf("%d jobs submitted", len(short)+len(long))
	var worst time.Duration
	for try := 1; try <= sigtermTries; try++ {
		time.Sleep(300 * time.Millisecond) // let cycles and ends run
		took, exited := srv.Terminate(15 * time.Second)
		if !exited {
			t.Fatalf("try %d: still running %v after SIGTERM; log:\n%s", try, took, tail(srv.Logs(), 40))
		}
		worst = max(worst, took)
		srv.Start() // fails the test unless the server starts and gets ready
	}
	t.Logf("%d SIGTERMs with about 700 live jobs: slowest exit %v", sigtermTries, worst.Round(time.Millisecond))
	list, err := srv.Client().ListJobs(ctxT(t), clientListAll)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(short)+len(long) {
		t.Fatalf("%d jobs after the restarts, want %d", len(list), len(short)+len(long))
	}
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// post sends a manifest and returns the answer, the time it took and the
// server's resident memory growth.
func post(t *testing.T, srv *server, body []byte) (int, string, time.Duration, int64) {
	t.Helper()
	before, err := srv.RSS()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := http.Post("http://"+srv.Addr+api.RouteJobs, "application/yaml", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	after, err := srv.RSS()
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), took, after - before
}

// MAX_NUM_PROC "2147483647" was accepted; the collector then allocated
// 2^31 floats and that GPU type's scheduler never cycled again, on every
// restart. The API refuses it, naming the field and the limit; and a
// server whose operator raised the limit still keeps every per-worker
// structure to the cluster's size.
func TestDefect_HugeWorkerCountRejectedAndHarmless(t *testing.T) {
	srv := startServer(t, "--sim-nodes", "v100=4x8", "--data-dir", t.TempDir(), "--log-level", "warn")
	code, body, took, grew := post(t, srv, manifest("huge", 1, 2147483647, 1))
	t.Logf("MAX_NUM_PROC 2147483647: %d in %v, RSS grew %d KiB: %.200s", code, took.Round(time.Millisecond), grew>>10, body)
	if code != http.StatusBadRequest || !strings.Contains(body, "MAX_NUM_PROC") || !strings.Contains(body, "limit") {
		t.Fatalf("answer %d %s, want 400 naming MAX_NUM_PROC and the limit", code, body)
	}

	srv = startServer(t, "--sim-nodes", "v100=4x8", "--data-dir", t.TempDir(), "--log-level", "warn", "--speed", "100", "--max-workers", "2147483647")
	code, body, _, _ = post(t, srv, manifest("huge", 1, 2147483647, 1))
	if code != http.StatusCreated {
		t.Fatalf("with --max-workers 2147483647: %d %s", code, body)
	}
	name, _ := jsonField([]byte(body), "name")
	c := srv.Client()
	waitFor(t, "the huge job to complete", 2*time.Minute, func() (bool, error) {
		j, err := c.GetJob(ctxT(t), name)
		return err == nil && j.Status == "Completed", err
	})
	rss, err := srv.RSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a job of max 2147483647 workers ran to completion; server RSS %d MiB", rss>>20)
	if rss > 500<<20 {
		t.Fatalf("server RSS %d MiB after one job", rss>>20)
	}
}

// A 102 KB manifest with a 100 KB anchor used 1,000 times was accepted
// after 49 s, growing the server by 1.5 GB and the store by 334 MB. It is
// refused, and what is stored can never exceed the body limit.
func TestDefect_AliasBombRejected(t *testing.T) {
	srv := startServer(t, "--sim-nodes", "v100=4x8", "--data-dir", t.TempDir(), "--log-level", "warn")
	var b strings.Builder
	b.WriteString(string(manifest("bomb", 1, 2, 1)))
	b.WriteString("            args: [&a " + strings.Repeat("x", 100<<10))
	for range 1000 {
		b.WriteString(", *a")
	}
	b.WriteString("]\n")
	code, body, took, grew := post(t, srv, []byte(b.String()))
	t.Logf("alias bomb of %d KB: %d in %v, RSS grew %d KiB: %.200s", b.Len()>>10, code, took.Round(time.Millisecond), grew>>10, body)
	if code != http.StatusBadRequest || !strings.Contains(body, "alias") {
		t.Fatalf("answer %d %.300s, want 400 about aliases", code, body)
	}
	list, err := srv.Client().ListJobs(ctxT(t), clientListAll)
	if err != nil || len(list) != 0 {
		t.Fatalf("jobs after the bomb: %d %v", len(list), err)
	}
}

// A store file truncated to half made the server die of SIGSEGV inside
// bbolt. It refuses to start with an error that names the file.
func TestDefect_DamagedStoreFileFailsClearly(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, "--sim-nodes", "v100=4x8", "--data-dir", dir, "--log-level", "warn")
	submitAll(t, srv, 50, manifest("job", 1, 2, 5))
	if _, ok := srv.Terminate(15 * time.Second); !ok {
		t.Fatal("server did not stop")
	}
	path := filepath.Join(dir, "voda.db")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary(t), "server", "--addr", vodatest.FreeAddr(t), "--data-dir", dir).CombinedOutput()
	t.Logf("start on a truncated store: %v\n%s", err, tail(string(out), 5))
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1", err)
	}
	if s := string(out); strings.Contains(s, "SIGSEGV") || strings.Contains(s, "goroutine ") ||
		!strings.Contains(s, path) || !strings.Contains(strings.ToLower(s), "damaged") {
		t.Fatalf("output does not explain the damaged file %s:\n%s", path, tail(s, 20))
	}
}
