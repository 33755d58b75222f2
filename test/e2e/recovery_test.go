package e2e

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

// clientListAll lists every job.
var clientListAll = client.ListOptions{}

// epochSeconds is the "amdahl" model's one-GPU epoch time: no job can
// finish with fewer GPU-seconds than its epochs times this.
const epochSeconds = 60

func TestRecoveryAfterKill(t *testing.T) {
	runRecovery(t, "--data-dir", t.TempDir())
}

// runRecovery submits jobs to a server, deletes one, kills the server
// with SIGKILL while jobs run, starts it again on the same state, and
// checks every job is there exactly once and finishes correctly.
func runRecovery(t *testing.T, stateArgs ...string) {
	args := append([]string{
		"--sim-nodes", "v100=2x4", "--speed", "40", "--rate-limit", "2s",
		"--restart-cost", "5s", "--resync", "1s", "--log-level", "debug",
	}, stateArgs...)
	srv := startServer(t, args...)
	c := srv.Client()
	ctx := ctxT(t)

	// Ten jobs of 2 to 4 workers on 8 GPUs: at most four run at once, so
	// the kill finds jobs done, running and waiting.
	const jobs = 10
	epochs := func(i int) int { return 3 + i%4 }
	submitted := map[string]bool{}
	work := map[string]float64{} // one-GPU seconds
	var names []string
	for i := range jobs {
		j, err := c.CreateJob(ctx, manifest(fmt.Sprintf("train-%d", i), 2, 4, epochs(i)))
		if err != nil {
			t.Fatalf("create job %d: %v", i, err)
		}
		if submitted[j.Name] {
			t.Fatalf("name %s given twice", j.Name)
		}
		submitted[j.Name] = true
		names = append(names, j.Name)
		work[j.Name] = float64(epochs(i) * epochSeconds)
	}
	canceled := names[len(names)-1]
	if _, err := c.DeleteJob(ctx, canceled); err != nil {
		t.Fatalf("delete %s: %v", canceled, err)
	}

	// Let some jobs complete while others run, then kill the server. The
	// queue is checked in the same poll: a forecast may be missing for a
	// moment (a job that just started has no measurement yet), so the test
	// waits for the state it asserts rather than sampling it once.
	var before map[string]api.Job
	waitFor(t, "two jobs completed, one running and one waiting with an estimated start", 60*time.Second, func() (bool, error) {
		list, err := c.ListJobs(ctx, clientListAll)
		if err != nil {
			return false, err
		}
		before = byName(list)
		if count(list, "Completed") < 2 || count(list, "Running") < 1 || count(list, "Waiting") < 1 {
			return false, nil
		}
		return true, checkQueue(before)
	})
	srv.Kill()
	for _, j := range before {
		t.Logf("before kill: %s %s workers=%d progress=%.3f service=%.0f", j.Name, j.Status, j.Workers, j.Progress, j.AttainedService)
	}
	srv.Start()
	c = srv.Client()

	after, err := c.ListJobs(ctx, clientListAll)
	if err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, after, submitted)
	for _, j := range after {
		b := before[j.Name]
		if b.Status == "Completed" && (j.Status != "Completed" || !j.FinishTime.Equal(*b.FinishTime)) {
			t.Errorf("job %s completed before the kill, after the restart it is %s (finish %v, was %v)", j.Name, j.Status, j.FinishTime, b.FinishTime)
		}
		if j.Progress < b.Progress || j.AttainedService < b.AttainedService-1e-6 {
			t.Errorf("job %s went back across the restart: progress %.3f -> %.3f, attained service %.1f -> %.1f GPU-s", j.Name, b.Progress, j.Progress, b.AttainedService, j.AttainedService)
		}
		if j.Priority != b.Priority || j.MinWorkers != b.MinWorkers || j.MaxWorkers != b.MaxWorkers {
			t.Errorf("job %s changed spec across the restart: %+v -> %+v", j.Name, b, j)
		}
	}

	waitFor(t, "every job finished", 90*time.Second, func() (bool, error) {
		list, err := c.ListJobs(ctx, clientListAll)
		if err != nil {
			return false, err
		}
		return count(list, "Completed") == jobs-1 && count(list, "Canceled") == 1, nil
	})
	final, err := c.ListJobs(ctx, clientListAll)
	if err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, final, submitted)
	for _, j := range final {
		if j.Name == canceled {
			if j.Status != "Canceled" {
				t.Errorf("deleted job %s is %s", j.Name, j.Status)
			}
			continue
		}
		if j.Progress != 1 || j.Workers != 0 || j.FinishTime == nil {
			t.Errorf("completed job %s: progress %v, workers %d, finish %v", j.Name, j.Progress, j.Workers, j.FinishTime)
		}
		if minWork := work[j.Name]; j.AttainedService < minWork*0.999 {
			t.Errorf("job %s completed with %.1f GPU-s, less than the %v its work needs", j.Name, j.AttainedService, minWork)
		}
		if j.TotalSeconds < j.RunningSeconds || j.WaitingSeconds < 0 {
			t.Errorf("job %s: times do not add up: waiting %v running %v total %v", j.Name, j.WaitingSeconds, j.RunningSeconds, j.TotalSeconds)
		}
	}
	metrics := get(t, "http://"+srv.Addr+api.RouteMetrics)
	for _, want := range []string{`voda_jobs_completed_total{gpu_type="v100"}`, `voda_reschedules_total{gpu_type="v100"}`, `voda_gpus{gpu_type="v100"} 8`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func checkExactlyOnce(t *testing.T, list []api.Job, submitted map[string]bool) {
	t.Helper()
	seen := map[string]int{}
	for _, j := range list {
		seen[j.Name]++
	}
	var problems []string
	for name := range submitted {
		if seen[name] != 1 {
			problems = append(problems, fmt.Sprintf("%s listed %d times", name, seen[name]))
		}
	}
	for name := range seen {
		if !submitted[name] {
			problems = append(problems, fmt.Sprintf("%s was never submitted", name))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		t.Errorf("jobs not present exactly once: %s", strings.Join(problems, "; "))
	}
}

func byName(list []api.Job) map[string]api.Job {
	m := make(map[string]api.Job, len(list))
	for _, j := range list {
		m[j.Name] = j
	}
	return m
}

func count(list []api.Job, status string) int {
	n := 0
	for _, j := range list {
		if string(j.Status) == status {
			n++
		}
	}
	return n
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

// checkQueue says what is wrong with the waiting jobs' queue positions
// and expected starts, if anything: every waiting job needs a position,
// and some an expected start. Positions are written job by job, so a list
// taken while the scheduler writes may mix two cycles' positions: only
// their range is checked here (TestForecasts checks the order itself).
func checkQueue(jobs map[string]api.Job) error {
	waiting, withStart := 0, 0
	for _, j := range jobs {
		if j.Status != "Waiting" {
			continue
		}
		waiting++
		if j.QueuePosition < 1 || j.QueuePosition > len(jobs) {
			return fmt.Errorf("waiting job %s has queue position %d", j.Name, j.QueuePosition)
		}
		if j.EstimatedStart != nil {
			withStart++
		}
	}
	if waiting > 0 && withStart == 0 {
		return fmt.Errorf("none of %d waiting jobs has an estimated start", waiting)
	}
	return nil
}
