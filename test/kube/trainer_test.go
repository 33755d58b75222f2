package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/test/vodatest"
)

// trainerRun is what testdata/trainer.py's rank 0 writes when it is done.
type trainerRun struct {
	Generation string `json:"generation"`
	Workers    int    `json:"workers"`
	// EpochEnds are the wall times of its epochs' ends; SteadySeconds the
	// time from the first to the last, WarmupSeconds the first epoch's
	// (from the first step, whose report opened the generation).
	EpochEnds     []float64 `json:"epochEnds"`
	SteadySeconds float64   `json:"steadySeconds"`
	WarmupSeconds float64   `json:"warmupSeconds"`
	// EpochsPerSecond is the trainer's own rate over SteadySeconds.
	EpochsPerSecond float64        `json:"epochsPerSecond"`
	Steps           int64          `json:"steps"`
	Samples         int64          `json:"samples"`
	Epoch           float64        `json:"epoch"`
	Loss            float64        `json:"loss"`
	LastReply       progress.Reply `json:"lastReply"`
}

// How the trainer runs: its interpreter, each run's epochs (the first is
// warm-up) and the job's epochs in all, over both runs.
const (
	// debianPython is the interpreter python3-torch installs into
	// (hack/test-deps.sh), which need not be the python3 first on PATH.
	debianPython = "/usr/bin/python3"

	trainerEpochs      = 8
	trainerTotalEpochs = 2 * trainerEpochs
	// estimateAfter is how many reports at a steady size (after the
	// warm-up's) Voda has when the test takes its remaining-time estimate.
	estimateAfter = 3
)

// TestRealTrainer runs a real PyTorch elastic training job (Debian's
// python3-torch, CPU, gloo; testdata/trainer.py: a 2-layer MLP on
// generated data under torch's elastic launcher, nnodes 1:1) that reports
// through the job-side library (sdk/python, voda_progress.torch.track) to
// a running Voda over HTTP, as a job's rank 0 does on a real cluster.
//
// kwok runs no containers: the job's pods exist, bound and Running, but
// nothing runs in them. So the trainer runs on the host with the pod's
// environment: VODA_PROGRESS_URL (the real server's route, not the
// in-cluster --progress-url), VODA_JOB_NAME, and VODA_TOKEN_FILE holding
// a token the control plane issued (TokenRequest) for one of the job's
// worker pods, of Voda's audience and bound to that pod, as the kubelet's
// projected volume would. Its worker count is the job's allocation.
//
// The job runs on two GPUs, then a second job arrives and ElasticFIFO
// shrinks it to one; the trainer restarts with one worker (a new run id:
// a new generation) from its counters, as from a checkpoint. For each
// worker count, Voda's measured throughput must be within 10% of the
// trainer's own steady rate; the trainer's first epoch (after the report
// that opens the generation) holds a deliberate start-up pause that would
// pull the rate more than 10% down if Voda counted it, and Voda's measured
// seconds must exclude it; and after three reports at a steady size the
// remaining time Voda estimates on the job's workers must be within 20% of
// the truth: the epochs left over the trainer's own rate.
func TestRealTrainer(t *testing.T) {
	if out, err := exec.Command(debianPython, "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import torch (run hack/test-deps.sh, which installs python3-torch): %v\n%s", debianPython, err, out)
	}
	sdk, err := filepath.Abs(filepath.Join("..", "..", "sdk", "python", "src"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "trainer.py"))
	if err != nil {
		t.Fatal(err)
	}

	const gpuType = "trainer-gpu"
	ctx := t.Context()
	c := newCluster(t, gpuType, 1, 2)
	srv := c.start("--authentication", "kubernetes", "--progress-url", "http://voda.voda-system.svc:55587")
	vc := srv.Client(client.WithBearerToken(mustToken(t, "admin")))
	job := submit(t, vc, pyTorchJob.manifest("trainer", gpuType, 1, 2, time.Hour))
	c.waitPlaced(t, vc, pyTorchJob, job, 2)

	dir := t.TempDir()
	var last trainerRun
	run := func(phase, workers int) trainerRun {
		t.Helper()
		pod := runningPod(t, c.ns, job)
		tokenFile := filepath.Join(dir, fmt.Sprintf("token-%d", phase))
		if err := os.WriteFile(tokenFile, []byte(podToken(t, pod, kube.DefaultProgressAudience, true)), 0o600); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, fmt.Sprintf("run-%d.json", phase))
		runID := fmt.Sprintf("%s-%d", job, phase)
		startEpoch := int(math.Round(last.Epoch))
		cmdCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cmdCtx, debianPython, script,
			"--workers", fmt.Sprint(workers), "--run-id", runID, "--out", out,
			"--epochs", fmt.Sprint(trainerEpochs), "--total-epochs", fmt.Sprint(trainerTotalEpochs),
			"--steps-per-epoch", "30", "--global-batch", "512", "--sleep", "0.05", "--warmup", "5",
			"--start-epoch", fmt.Sprint(startEpoch), "--start-steps", fmt.Sprint(last.Steps), "--start-samples", fmt.Sprint(last.Samples))
		cmd.Env = append(trainerEnv(),
			"PYTHONPATH="+sdk, "PYTHONUNBUFFERED=1",
			kube.EnvProgressURL+"="+srv.URL()+"/api/v1/jobs/"+job+"/progress",
			kube.EnvJobName+"="+job,
			kube.EnvTokenFile+"="+tokenFile)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		t.Logf("phase %d: the trainer on %d workers as pod %s (run id %s, from epoch %d)", phase, workers, pod.Name, runID, startEpoch)
		began := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()

		// While it trains: Voda's estimate of the time left on these
		// workers, once the scheduler has read the third report after
		// the warm-up's (epochs are whole at each report, which the
		// trainer sends at every epoch's end).
		steadyFrom := float64(startEpoch + 1 + estimateAfter)
		var est, estEpoch float64
		var waitErr error
	poll:
		for {
			select {
			case waitErr = <-done:
				break poll
			case <-time.After(200 * time.Millisecond):
			}
			if est > 0 {
				continue
			}
			j, err := vc.GetJob(ctx, job)
			if err != nil {
				continue
			}
			epoch := j.Progress * trainerTotalEpochs
			if epoch+1e-6 >= steadyFrom && j.RemainingSeconds != nil && workers < len(j.Speedup) && j.Speedup[workers] > 0 {
				est, estEpoch = *j.RemainingSeconds/j.Speedup[workers], epoch
				t.Logf("phase %d: at epoch %.2f Voda estimates %.1f s left on %d workers (one GPU: %.1f s, speedup %v; measured so far %v)",
					phase, epoch, est, workers, *j.RemainingSeconds, j.Speedup, throughputs(j))
			}
		}
		t.Logf("phase %d: the trainer ran %v; its output:\n%s", phase, time.Since(began).Round(time.Millisecond), lastLines(logs.String(), 15))
		if waitErr != nil {
			t.Fatalf("phase %d: the trainer failed: %v", phase, waitErr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var r trainerRun
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if wantGen := fmt.Sprintf("%s-0-%d", runID, workers); r.Workers != workers || r.Generation != wantGen {
			t.Fatalf("phase %d: the trainer ran generation %q on %d workers, want %q on %d", phase, r.Generation, r.Workers, wantGen, workers)
		}
		if r.LastReply.Allocation.Workers != workers || r.LastReply.Job != job {
			t.Errorf("phase %d: Voda's last reply %+v, want job %s allocated %d workers", phase, r.LastReply, job, workers)
		}

		// The test must be able to tell the warm-up apart: counted in,
		// the rate would be more than 10% off.
		withWarmup := float64(len(r.EpochEnds)) / (r.SteadySeconds + r.WarmupSeconds)
		if withWarmup > 0.9*r.EpochsPerSecond {
			t.Fatalf("phase %d: the trainer's warm-up (%.1f s) is too short to tell apart: %.4f epochs/s with it, %.4f without", phase, r.WarmupSeconds, withWarmup, r.EpochsPerSecond)
		}
		j, err := vc.GetJob(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		if j.Measured == nil {
			t.Fatalf("phase %d: job %s has no measurements", phase, job)
		}
		var th *api.Throughput
		for i := range j.Measured.Throughput {
			if j.Measured.Throughput[i].Workers == workers {
				th = &j.Measured.Throughput[i]
			}
		}
		if th == nil {
			t.Fatalf("phase %d: no throughput measured on %d workers: %+v", phase, workers, j.Measured)
		}
		voda := th.EpochsPerHour / 3600
		t.Logf("phase %d: the trainer's epochs took %v s", phase, epochTimes(r))
		t.Logf("phase %d, %d workers: Voda measured %.4f epochs/s over %.1f s; the trainer %.4f epochs/s over %.1f s (%.4f counting its %.1f s warm-up); loss %.3f",
			phase, workers, voda, th.Seconds, r.EpochsPerSecond, r.SteadySeconds, withWarmup, r.WarmupSeconds, r.Loss)
		if d := math.Abs(voda/r.EpochsPerSecond - 1); d > 0.10 {
			t.Errorf("phase %d: Voda's throughput on %d workers %.4f epochs/s is %.0f%% off the trainer's %.4f", phase, workers, voda, 100*d, r.EpochsPerSecond)
		}
		if th.Seconds > r.SteadySeconds+r.WarmupSeconds/2 || th.Seconds < 0.9*r.SteadySeconds {
			t.Errorf("phase %d: Voda measured %.1f s on %d workers; the trainer's steady part was %.1f s after a %.1f s warm-up", phase, th.Seconds, workers, r.SteadySeconds, r.WarmupSeconds)
		}

		if est <= 0 {
			t.Fatalf("phase %d: Voda gave no remaining-time estimate on %d workers after epoch %.0f", phase, workers, steadyFrom)
		}
		truth := (trainerTotalEpochs - estEpoch) / r.EpochsPerSecond
		t.Logf("phase %d: estimate %.1f s left at epoch %.2f, truth %.1f s (%.2f epochs left at the trainer's rate)", phase, est, estEpoch, truth, trainerTotalEpochs-estEpoch)
		if d := math.Abs(est/truth - 1); d > 0.20 {
			t.Errorf("phase %d: Voda estimates %.1f s left on %d workers, %.0f%% off the truth %.1f s", phase, est, workers, 100*d, truth)
		}
		if m := j.Measured; m.RestartSeconds > 0 {
			t.Logf("phase %d: Voda's mean restart cost %.1f s", phase, m.RestartSeconds)
		}
		last = r
		return r
	}

	run(1, 2)

	// Resize: a second job arrives, and ElasticFIFO gives each one GPU.
	other := submit(t, vc, pyTorchJob.manifest("other", gpuType, 1, 2, time.Hour))
	c.waitPlaced(t, vc, pyTorchJob, job, 1)
	c.waitPlaced(t, vc, pyTorchJob, other, 1)
	run(2, 1)

	// The scheduler reads the last reports at its next resync.
	var j api.Job
	vodatest.WaitFor(t, "the scheduler to see all the trainer's epochs", 30*time.Second, func() (bool, error) {
		var err error
		if j, err = vc.GetJob(ctx, job); err != nil {
			return false, err
		}
		if j.Measured == nil || j.Measured.Epoch != trainerTotalEpochs || j.Progress != 1 {
			return false, fmt.Errorf("progress %v, measured %+v", j.Progress, j.Measured)
		}
		return true, nil
	})
	if got := len(j.Measured.Throughput); got != 2 {
		t.Errorf("throughput measured on %d placements, want 2 (two and one workers): %v", got, throughputs(j))
	}
}

// throughputs is a job's measured throughput, for people.
func throughputs(j api.Job) string {
	if j.Measured == nil {
		return "none"
	}
	var parts []string
	for _, th := range j.Measured.Throughput {
		parts = append(parts, fmt.Sprintf("%d workers: %.4f epochs/s over %.1f s", th.Workers, th.EpochsPerHour/3600, th.Seconds))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// epochTimes is how long each of a trainer's epochs took after the first.
func epochTimes(r trainerRun) []float64 {
	var out []float64
	for i := 1; i < len(r.EpochEnds); i++ {
		out = append(out, math.Round(100*(r.EpochEnds[i]-r.EpochEnds[i-1]))/100)
	}
	return out
}

// runningPod is one of job's worker pods, Running and not being deleted
// (the first by name), whose token the trainer reports with.
func runningPod(t *testing.T, ns, job string) corev1.Pod {
	t.Helper()
	pods, err := workerPods(t.Context(), ns, job)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(pods, func(i, k int) bool { return pods[i].Name < pods[k].Name })
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return p
		}
	}
	t.Fatalf("job %s has no running worker pod: %d pods", job, len(pods))
	return corev1.Pod{}
}

// trainerEnv is the test's environment without what would confuse the
// trainer: Voda's variables, Python's paths and torch's distributed
// settings are the test's to give.
func trainerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "VODA_"), strings.HasPrefix(name, "PYTHON"), strings.HasPrefix(name, "TORCH"),
			name == "RANK", name == "WORLD_SIZE", name == "LOCAL_RANK", name == "LOCAL_WORLD_SIZE",
			name == "MASTER_ADDR", name == "MASTER_PORT":
			continue
		}
		env = append(env, kv)
	}
	return env
}
