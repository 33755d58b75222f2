package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
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
	EpochsPerSecond float64 `json:"epochsPerSecond"`
	// Processes is every training process: its ranks, the pod its
	// launcher stood for, and whether its reporter sends.
	Processes []struct {
		Rank      int    `json:"rank"`
		LocalRank int    `json:"localRank"`
		GroupRank int    `json:"groupRank"`
		Pod       string `json:"pod"`
		Reports   bool   `json:"reports"`
	} `json:"processes"`
	Steps     int64          `json:"steps"`
	Samples   int64          `json:"samples"`
	Epoch     float64        `json:"epoch"`
	Loss      float64        `json:"loss"`
	LastReply progress.Reply `json:"lastReply"`
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
	tj := startTrainerJob(t, "trainer-gpu", 1, 2, 1)
	tj.run(1, 1, 2)

	// Resize: a second job arrives, and ElasticFIFO gives each one GPU.
	tj.shrinkBeside(pyTorchJob.manifest("other", tj.c.gpuType, 1, 2, time.Hour))
	tj.run(2, 1, 1)
	tj.waitAllEpochs(2)
}

// TestRealTrainerMultiGPU is TestRealTrainer with worker pods of 2 GPUs
// (--multi-gpu-workers, nprocPerNode 2) on two kwok nodes of 2 GPUs: one
// torch elastic launcher per pod, each starting 2 processes, in one c10d
// rendezvous of as many launchers as the job has pods, each with its own
// pod's token. On 2 pods (4 processes on 2 nodes), then, shrunk by a
// second job, on 1 (2 processes), Voda's measured throughput, keyed by
// processes (pods x 2) and nodes, must be within 10% of the trainer's
// own, with the warm-up left out; its estimate of the time left within
// 20%; and the reports must come from global rank 0 alone: of the
// processes, only rank 0's reporter sends, and only its pod's token
// reaches Voda.
//
// It fails if the library reports from each pod's local rank 0 (a second
// pod's token reaches Voda, and reports with the same counters arrive
// twice), if Voda compares a report's processes with the job's pods (no
// interval on 4 processes is measured: the allocation is 2 pods), if it
// keys throughput by pods (no measurement on 4 workers), or if it reads
// the pods' worker count as GPUs and so halves the rate per GPU.
func TestRealTrainerMultiGPU(t *testing.T) {
	tj := startTrainerJob(t, "trainer2-gpu", 2, 2, 2, "--multi-gpu-workers")
	// The machine's cores are fewer than 4 processes: without simulated
	// GPU work, 4 would train slower than 2, a curve no GPU job has. Its
	// epochs are longer than TestRealTrainer's, so the warm-up is too, to
	// stay well apart from the steady rate.
	tj.sleep, tj.sleepPerSample, tj.warmup = 0.02, 0.0003, 8
	tj.run(1, 2, 2)

	// A second job of one pod of 2 GPUs: the trainer shrinks to one pod.
	tj.shrinkBeside(pyTorchJobManifest("other", tj.c.gpuType, 2, 1, 1, time.Hour))
	tj.run(2, 1, 2)
	tj.waitAllEpochs(2)
}

// trainerJob is a PyTorchJob that testdata/trainer.py plays on the host,
// reporting to a running Voda through a proxy that records which pod's
// token each report carried.
type trainerJob struct {
	t   *testing.T
	c   *cluster
	vc  *client.Client
	job string
	// sleep, sleepPerSample and warmup are the trainer's --sleep,
	// --sleep-per-sample and --warmup: seconds slept after each step, of
	// simulated GPU work per sample of a process's share of the batch,
	// and after the first step.
	sleep, sleepPerSample, warmup float64

	sdk, script, dir string
	proxy            *reportProxy
	last             trainerRun
}

// startTrainerJob starts Voda with Kubernetes authentication on nodes
// kwok nodes of gpus GPUs and submits an elastic PyTorchJob of 1 to 2
// worker pods of perPod GPUs, which it waits to run on 2.
func startTrainerJob(t *testing.T, gpuType string, nodes, gpus, perPod int, args ...string) *trainerJob {
	t.Helper()
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
	c := newCluster(t, gpuType, nodes, gpus)
	srv := c.start(append([]string{"--authentication", "kubernetes", "--progress-url", "http://voda.voda-system.svc:55587"}, args...)...)
	vc := srv.Client(client.WithBearerToken(mustToken(t, "admin")))
	job := submit(t, vc, pyTorchJobManifest("trainer", gpuType, perPod, 1, 2, time.Hour))
	c.waitPlaced(t, vc, pyTorchJob, job, 2)
	return &trainerJob{t: t, c: c, vc: vc, job: job, sleep: 0.05, warmup: 5,
		sdk: sdk, script: script, dir: t.TempDir(), proxy: newReportProxy(t, srv.URL())}
}

// shrinkBeside submits a second job, for which the scheduler shrinks the
// trainer's job to one pod.
func (tj *trainerJob) shrinkBeside(manifest []byte) {
	tj.t.Helper()
	other := submit(tj.t, tj.vc, manifest)
	tj.c.waitPlaced(tj.t, tj.vc, pyTorchJob, tj.job, 1)
	tj.c.waitPlaced(tj.t, tj.vc, pyTorchJob, other, 1)
}

// run plays the job for one generation: launchers torch elastic
// launchers (each standing for one of the job's running pods, with that
// pod's token) of procs processes each, from where the last run stopped,
// and checks what Voda measured against what the trainer did.
func (tj *trainerJob) run(phase, launchers, procs int) trainerRun {
	t, c, vc, job := tj.t, tj.c, tj.vc, tj.job
	t.Helper()
	ctx := t.Context()
	workers := launchers * procs
	pods := runningPods(t, c.ns, job)
	if len(pods) < launchers {
		t.Fatalf("phase %d: job %s has %d running pods, want %d", phase, job, len(pods), launchers)
	}
	pods = pods[:launchers]
	out := filepath.Join(tj.dir, fmt.Sprintf("run-%d.json", phase))
	runID := fmt.Sprintf("%s-%d", job, phase)
	startEpoch := int(math.Round(tj.last.Epoch))
	args := []string{tj.script,
		"--workers", fmt.Sprint(procs), "--run-id", runID, "--out", out,
		"--epochs", fmt.Sprint(trainerEpochs), "--total-epochs", fmt.Sprint(trainerTotalEpochs),
		"--steps-per-epoch", "30", "--global-batch", "512", "--sleep", fmt.Sprint(tj.sleep), "--warmup", fmt.Sprint(tj.warmup), "--sleep-per-sample", fmt.Sprint(tj.sleepPerSample),
		"--start-epoch", fmt.Sprint(startEpoch), "--start-steps", fmt.Sprint(tj.last.Steps), "--start-samples", fmt.Sprint(tj.last.Samples)}
	if launchers > 1 {
		args = append(args, "--nnodes", fmt.Sprint(launchers), "--rdzv-endpoint", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	}
	cmdCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	began := time.Now()
	done := make(chan error, launchers)
	logs := make([]bytes.Buffer, launchers)
	tj.proxy.reset()
	for i, pod := range pods {
		tokenFile := filepath.Join(tj.dir, fmt.Sprintf("token-%d-%d", phase, i))
		token := podToken(t, pod, kube.DefaultProgressAudience, true)
		if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
			t.Fatal(err)
		}
		tj.proxy.name(token, pod.Name)
		a := args
		if launchers > 1 && i == 0 {
			a = append(append([]string{}, args...), "--rdzv-host")
		}
		cmd := exec.CommandContext(cmdCtx, debianPython, a...)
		cmd.Env = append(trainerEnv(),
			"PYTHONPATH="+tj.sdk, "PYTHONUNBUFFERED=1", "TRAINER_POD="+pod.Name,
			kube.EnvProgressURL+"="+tj.proxy.URL+"/api/v1/jobs/"+job+"/progress",
			kube.EnvJobName+"="+job,
			kube.EnvTokenFile+"="+tokenFile)
		cmd.Stdout, cmd.Stderr = &logs[i], &logs[i]
		t.Logf("phase %d: a launcher of %d processes as pod %s (run id %s, from epoch %d)", phase, procs, pod.Name, runID, startEpoch)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
	}

	// While it trains: Voda's estimate of the time left on these
	// workers, once the scheduler has read the third report after the
	// warm-up's (epochs are whole at each report, which the trainer sends
	// at every epoch's end).
	steadyFrom := float64(startEpoch + 1 + estimateAfter)
	var est, estEpoch float64
	var waitErr error
	for running := launchers; running > 0; {
		select {
		case err := <-done:
			running--
			waitErr = errors.Join(waitErr, err)
			continue
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
	for i := range logs {
		t.Logf("phase %d: launcher %d ran %v; its output:\n%s", phase, i, time.Since(began).Round(time.Millisecond), lastLines(logs[i].String(), 15))
	}
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
	tj.checkReporters(phase, r, pods, procs)

	// The test must be able to tell the warm-up apart: counted in, the
	// rate would be more than 10% off.
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
	if th.Nodes != launchers {
		t.Errorf("phase %d: throughput on %d workers keyed by %d nodes, want %d (one a pod)", phase, workers, th.Nodes, launchers)
	}
	voda := th.EpochsPerHour / 3600
	t.Logf("phase %d: the trainer's epochs took %v s", phase, epochTimes(r))
	t.Logf("phase %d, %d workers on %d pods: Voda measured %.4f epochs/s over %.1f s; the trainer %.4f epochs/s over %.1f s (%.4f counting its %.1f s warm-up); loss %.3f",
		phase, workers, launchers, voda, th.Seconds, r.EpochsPerSecond, r.SteadySeconds, withWarmup, r.WarmupSeconds, r.Loss)
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
	tj.last = r
	return r
}

// checkReporters fails the test unless, of the run's processes (procs on
// each pod), global rank 0 alone had a reporter that sends, and only its
// pod's token reached Voda.
func (tj *trainerJob) checkReporters(phase int, r trainerRun, pods []corev1.Pod, procs int) {
	t := tj.t
	t.Helper()
	perPod := map[string]int{}
	var reporters []int
	rank0Pod := ""
	for _, p := range r.Processes {
		perPod[p.Pod]++
		if p.Reports {
			reporters = append(reporters, p.Rank)
		}
		if p.Rank == 0 {
			rank0Pod = p.Pod
		}
	}
	if len(r.Processes) != len(pods)*procs || len(perPod) != len(pods) {
		t.Errorf("phase %d: the trainer's processes %+v, want %d on each of %d pods", phase, r.Processes, procs, len(pods))
	}
	for _, p := range pods {
		if perPod[p.Name] != procs {
			t.Errorf("phase %d: pod %s ran %d processes, want %d", phase, p.Name, perPod[p.Name], procs)
		}
	}
	if len(reporters) != 1 || reporters[0] != 0 {
		t.Errorf("phase %d: the processes of global ranks %v report, want 0 alone: %+v", phase, reporters, r.Processes)
	}
	if got := tj.proxy.senders(); len(got) != 1 || got[rank0Pod] == 0 {
		t.Errorf("phase %d: reports came with the tokens of pods %v, want pod %s's alone (global rank 0's)", phase, got, rank0Pod)
	}
}

// waitAllEpochs waits for the scheduler to see every epoch the trainer
// ran (it reads the last reports at its next resync), then checks that
// throughput was measured on placements placements.
func (tj *trainerJob) waitAllEpochs(placements int) {
	t := tj.t
	t.Helper()
	var j api.Job
	vodatest.WaitFor(t, "the scheduler to see all the trainer's epochs", 30*time.Second, func() (bool, error) {
		var err error
		if j, err = tj.vc.GetJob(t.Context(), tj.job); err != nil {
			return false, err
		}
		if j.Measured == nil || j.Measured.Epoch != trainerTotalEpochs || j.Progress != 1 {
			return false, fmt.Errorf("progress %v, measured %+v", j.Progress, j.Measured)
		}
		return true, nil
	})
	if got := len(j.Measured.Throughput); got != placements {
		t.Errorf("throughput measured on %d placements, want %d: %v", got, placements, throughputs(j))
	}
}

// reportProxy stands between the trainer and Voda, as the network between
// a job's pods and Voda's Service does, and counts the reports each pod's
// token carried.
type reportProxy struct {
	*httptest.Server
	mu     sync.Mutex
	pods   map[string]string // token: pod name
	counts map[string]int    // pod name: reports since reset
}

func newReportProxy(t *testing.T, target string) *reportProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &reportProxy{pods: map[string]string{}, counts: map[string]int{}}
	forward := httputil.NewSingleHostReverseProxy(u)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		p.mu.Lock()
		name, ok := p.pods[token]
		if !ok {
			name = "(an unknown token)"
		}
		p.counts[name]++
		p.mu.Unlock()
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// name records whose token is token.
func (p *reportProxy) name(token, pod string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods[token] = pod
}

// reset forgets the counts, for the next run.
func (p *reportProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.counts)
}

// senders is the reports per pod since the last reset.
func (p *reportProxy) senders() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// freePort is a TCP port on 127.0.0.1 nobody listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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

// runningPods is job's worker pods that are Running and not being deleted,
// by name, whose tokens the trainer's launchers report with.
func runningPods(t *testing.T, ns, job string) []corev1.Pod {
	t.Helper()
	pods, err := workerPods(t.Context(), ns, job)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(pods, func(i, k int) bool { return pods[i].Name < pods[k].Name })
	var out []corev1.Pod
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
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
