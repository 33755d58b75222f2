package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api/client"
)

// appManifest is an elastic job of namespace ns, application app, of 1
// to maxWorkers workers of one GPU, epochs to train.
func appManifest(name, ns, app string, epochs, maxWorkers int) []byte {
	return []byte(`apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: ` + name + `
  namespace: ` + ns + `
  annotations:
    vodascheduler/application: ` + app + `
    vodascheduler/epochs: "` + strconv.Itoa(epochs) + `"
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - name: launcher
            image: horovod/horovod:0.28.1
            env:
            - {name: MIN_NUM_PROC, value: "1"}
            - {name: MAX_NUM_PROC, value: "` + strconv.Itoa(maxWorkers) + `"}
    Worker:
      replicas: 1
      template:
        spec:
          nodeSelector:
            vodascheduler/accelerator: v100
          containers:
          - name: worker
            image: horovod/horovod:0.28.1
`)
}

// liarJob is one job of a liar run: where it runs, what it claims and
// what it has reported so far.
type liarJob struct {
	ns, app string
	// rate is the epochs a second per GPU its reports claim; total the
	// epochs they say the job has (0: the spec's).
	rate, total float64
	name        string
	// What its reports said: the generation (one per placement), its
	// workers then and the epochs done.
	gen     int
	workers int
	epoch   float64
	steps   int64
	last    time.Time // the scheduler's time of the last report
}

// liarRun is the outcome of one run: the GPUs of the honest jobs (all
// but the last) and of the last as last seen, and over the watch the
// fewest that an honest job held and the most the last held.
type liarRun struct {
	honest, liar int
	leastHonest  int
	mostLiar     int
}

// runLiars submits jobs to a server of 32 simulated GPUs under Goodput
// and reports for them as the scheduler's clock moves: each running job
// claims its rate times its workers. Once every job has been measured,
// it lets settle seconds of the scheduler's clock pass (the restarts of
// the first decisions, Goodput's settling), then watches settle more.
func runLiars(t *testing.T, jobs []*liarJob, settle time.Duration) liarRun {
	t.Helper()
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=4x8", "--no-sim-reports",
		"--algorithm", "Goodput", "--speed", "10", "--rate-limit", "1s", "--resync", "500ms", "--log-level", "warn")
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	for i, j := range jobs {
		code, body, _, _ := post(t, srv, appManifest(fmt.Sprintf("job%d", i), j.ns, j.app, 10000, 32))
		if code != http.StatusCreated {
			t.Fatalf("job %d: %d %s", i, code, body)
		}
		j.name, _ = jsonField([]byte(body), "name")
	}
	report := func(j *liarJob, now time.Time, workers int) {
		t.Helper()
		if workers != j.workers {
			j.gen++
			j.workers = workers
		} else if !j.last.IsZero() {
			j.epoch += j.rate * float64(workers) * now.Sub(j.last).Seconds()
		}
		j.last = now
		j.steps++
		w := map[string]any{"generation": fmt.Sprintf("g%d", j.gen), "workers": workers, "steps": j.steps, "epoch": j.epoch}
		if j.total > 0 {
			w["totalEpochs"] = j.total
		}
		body, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(srv.URL()+"/api/v1/jobs/"+j.name+"/progress", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("report of %s: %d %s", j.name, resp.StatusCode, out)
		}
	}
	// tick reports for every running job at the scheduler's time and
	// returns each job's GPUs and how long it has waited.
	var start time.Time
	tick := func() (now time.Time, gpus []int, waited []time.Duration, measured bool) {
		t.Helper()
		s, err := c.GetScheduler(ctx, "v100")
		if err != nil || s.Now == nil {
			t.Fatalf("the scheduler's clock: %v", err)
		}
		now = *s.Now
		if start.IsZero() {
			start = now
		}
		list, err := c.ListJobs(ctx, client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]int{}
		for _, got := range list {
			byName[got.Name] = got.Workers
		}
		measured = true
		for _, j := range jobs {
			k := byName[j.name]
			gpus = append(gpus, k)
			if k > 0 {
				report(j, now, k)
			} else {
				j.workers = 0
			}
			got, err := c.GetJob(ctx, j.name)
			if err != nil {
				t.Fatal(err)
			}
			measured = measured && got.Measured != nil && len(got.Measured.Throughput) > 0
			waited = append(waited, time.Duration(got.WaitingSeconds*float64(time.Second)))
		}
		return now, gpus, waited, measured
	}
	var measuredAt time.Time
	var run liarRun
	waitFor(t, "every job measured, then settle seconds more", 3*time.Minute, func() (bool, error) {
		now, gpus, _, measured := tick()
		if measuredAt.IsZero() {
			if measured {
				measuredAt = now
			}
			return false, fmt.Errorf("GPUs %v, not every job measured yet", gpus)
		}
		return now.Sub(measuredAt) >= settle, fmt.Errorf("GPUs %v", gpus)
	})
	run.leastHonest = 32
	var seen string
	waitFor(t, "the allocation watched", 3*time.Minute, func() (bool, error) {
		now, gpus, waited, _ := tick()
		run.honest, run.liar = 0, 0
		var parts []string
		for i, j := range jobs {
			if i == len(jobs)-1 {
				run.liar += gpus[i]
				run.mostLiar = max(run.mostLiar, gpus[i])
			} else {
				run.honest += gpus[i]
				run.leastHonest = min(run.leastHonest, gpus[i])
			}
			parts = append(parts, fmt.Sprintf("%s/%s %d (waited %s)", j.ns, j.name, gpus[i], waited[i].Round(time.Second)))
		}
		if line := strings.Join(parts, ", "); line != seen {
			t.Logf("%s: %s", now.Sub(start).Round(time.Second), line)
			seen = line
		}
		return now.Sub(measuredAt) >= 2*settle, nil
	})
	return run
}

// TestLiarAgainstBinary is issue 30's liar against the running binary: 32
// GPUs under Goodput, four jobs of 1 to 32 workers; three report 0.01
// epochs a second per GPU and have 10,000 epochs (10^6 s on one GPU),
// the fourth claims 10 and 10^6 epochs to go (10^5 s), which makes it
// look ten times shorter. Before, it held 32 GPUs and the honest jobs
// none from its first measurements on. Now, in one namespace, its claim
// is an outlier of the application's history until confirmed (an hour of
// reports, longer than the test), and the honest jobs hold within 10%
// of their GPUs without the lie; in a namespace of its own, where it
// alone sets its application's history, it holds at most its team's
// entitlement, 16 of 32 against one other team.
func TestLiarAgainstBinary(t *testing.T) {
	honest := func(ns string) *liarJob { return &liarJob{ns: ns, app: "train", rate: 0.01} }
	liar := func(ns string) *liarJob { return &liarJob{ns: ns, app: "train", rate: 10, total: 1e6} }
	const settle = 300 * time.Second
	base := runLiars(t, []*liarJob{honest("team-a"), honest("team-a"), honest("team-a"), honest("team-a")}, settle)
	t.Logf("no lie: the first three hold %d GPUs, the fourth %d", base.honest, base.liar)
	t.Run("one namespace", func(t *testing.T) {
		got := runLiars(t, []*liarJob{honest("team-a"), honest("team-a"), honest("team-a"), liar("team-a")}, settle)
		t.Logf("lie: the honest jobs hold %d GPUs, the liar %d", got.honest, got.liar)
		if got.leastHonest < 1 {
			t.Errorf("an honest job held no GPU while the liar was watched")
		}
		if float64(got.honest) < 0.9*float64(base.honest) {
			t.Errorf("the honest jobs hold %d GPUs, want at least 90%% of the %d they hold without the lie", got.honest, base.honest)
		}
	})
	t.Run("own namespace", func(t *testing.T) {
		got := runLiars(t, []*liarJob{honest("team-a"), honest("team-a"), honest("team-a"), liar("team-b")}, settle)
		t.Logf("lie: the honest jobs hold %d GPUs, the liar %d (at most %d)", got.honest, got.liar, got.mostLiar)
		if got.leastHonest < 1 {
			t.Errorf("an honest job held no GPU while the liar was watched")
		}
		if got.mostLiar > 16 {
			t.Errorf("the liar held %d GPUs, more than its team's entitlement of 16", got.mostLiar)
		}
	})
}
