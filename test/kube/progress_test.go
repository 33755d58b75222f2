package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/internal/progress"
	"github.com/vodascheduler/voda/test/vodatest"
)

// podToken is a token the control plane issues for pod's ServiceAccount,
// of audience, bound to pod (as the kubelet's projected volume holds);
// with bound false, bound to nothing.
func podToken(t *testing.T, pod corev1.Pod, audience string, bound bool) string {
	t.Helper()
	expiry := int64(600)
	spec := authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &expiry}
	if bound {
		spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	sa := pod.Spec.ServiceAccountName
	tr, err := env.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(t.Context(), sa, &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// postReport sends a progress report with a token and returns the status
// and the reply.
func postReport(t *testing.T, srv *vodatest.Server, job, token string, r map[string]any) (int, progress.Reply, string) {
	t.Helper()
	body, _ := json.Marshal(r)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+"/api/v1/jobs/"+job+"/progress", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var reply progress.Reply
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &reply); err != nil {
			t.Fatalf("reply %s: %v", b, err)
		}
	}
	return resp.StatusCode, reply, string(b)
}

// TestProgressFromPods runs the binary with --authentication kubernetes
// and --progress-url on the control plane: the job objects Voda creates
// give every container the report URL, the job's name and a projected
// token of Voda's audience; a worker pod's token (issued by the control
// plane for that pod, as the kubelet's projected volume holds it; kwok runs
// no containers, so the test sends the reports the pod's trainer would)
// reports its job's progress, which the scheduler turns into the job's
// progress and estimate. Another job's pod, a person's token, a token
// bound to no pod and one of the API server's audience are refused.
func TestProgressFromPods(t *testing.T) {
	const gpuType = "progress-gpu"
	ctx := t.Context()
	c := newCluster(t, gpuType, 1, 4)
	const progressURL = "http://voda.voda-system.svc:55587"
	srv := c.start("--authentication", "kubernetes", "--progress-url", progressURL, "--authentication-cache-ttl", "1s")
	vc := srv.Client(client.WithBearerToken(mustToken(t, "admin")))
	a := submit(t, vc, mpiJob.manifest("a", gpuType, 2, 2, time.Hour))
	b := submit(t, vc, mpiJob.manifest("b", gpuType, 2, 2, time.Hour))
	c.waitPlaced(t, vc, mpiJob, a, 2)
	c.waitPlaced(t, vc, mpiJob, b, 2)

	obj, err := env.Dynamic.Resource(mpiJob.resource).Namespace(c.ns).Get(ctx, a, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "mpiReplicaSpecs", "Worker", "template", "spec", "containers")
	envs, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
	if want := fmt.Sprintf(`map[name:%s value:%s/api/v1/jobs/%s/progress]`, kube.EnvProgressURL, progressURL, a); !strings.Contains(fmt.Sprint(envs), want) {
		t.Errorf("worker env %v lacks %s", envs, want)
	}
	volumes, _, _ := unstructured.NestedSlice(obj.Object, "spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "volumes")
	if !strings.Contains(fmt.Sprint(volumes), "audience:"+kube.DefaultProgressAudience) {
		t.Errorf("launcher volumes %v lack the projected token of audience %s", volumes, kube.DefaultProgressAudience)
	}

	podsA, err := workerPods(ctx, c.ns, a)
	if err != nil || len(podsA) == 0 {
		t.Fatalf("worker pods of %s: %v %v", a, podsA, err)
	}
	podsB, err := workerPods(ctx, c.ns, b)
	if err != nil || len(podsB) == 0 {
		t.Fatalf("worker pods of %s: %v %v", b, podsB, err)
	}
	tokA := podToken(t, podsA[0], kube.DefaultProgressAudience, true)
	report := func(steps int, epoch float64) map[string]any {
		return map[string]any{"generation": "g1", "workers": 2, "nodes": 1, "steps": steps, "epoch": epoch, "totalEpochs": 10}
	}
	for _, c := range []struct {
		name, token string
		code        int
	}{
		{"another job's pod", podToken(t, podsB[0], kube.DefaultProgressAudience, true), 403},
		{"a person", mustToken(t, "admin"), 401},
		{"a token bound to no pod", podToken(t, podsA[0], kube.DefaultProgressAudience, false), 403},
		{"a pod's token for kube-apiserver", podToken(t, podsA[0], "https://kubernetes.default.svc.cluster.local", true), 401},
	} {
		code, _, body := postReport(t, srv, a, c.token, report(0, 0))
		if code != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.code)
		} else {
			t.Logf("%s: %d %s", c.name, code, strings.TrimSpace(body))
		}
	}
	// The job's own pod: the first report and the warm-up are kept, the
	// next is measured.
	for i, want := range []struct {
		used   bool
		reason string
	}{{false, progress.ReasonFirst}, {false, progress.ReasonWarmUp}, {true, ""}} {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		code, reply, body := postReport(t, srv, a, tokA, report(100*(i+1), 2*float64(i+1)))
		if code != 200 || reply.Used != want.used || reply.Reason != want.reason || reply.Allocation.Workers != 2 {
			t.Fatalf("report %d from the job's pod: %d %s, want used %v reason %q on 2 workers", i, code, body, want.used, want.reason)
		}
	}
	// The scheduler reads the reports at its next resync: 6 of 10 epochs
	// done, and a remaining time from the measured rate.
	vodatest.WaitFor(t, "the job's progress and estimate from its reports", 30*time.Second, func() (bool, error) {
		j, err := vc.GetJob(ctx, a)
		if err != nil {
			return false, err
		}
		if j.Progress != 0.6 || j.RemainingSeconds == nil || *j.RemainingSeconds <= 0 {
			return false, fmt.Errorf("progress %v, remaining %v", j.Progress, j.RemainingSeconds)
		}
		return true, nil
	})
}

// TestReportsReorderJobs: with an estimate-driven algorithm, what jobs
// report decides who gets the GPUs. On 3 GPUs, ElasticSRJF gives each of
// two jobs (1 to 2 workers) its minimum and the spare GPU to the one with
// the shortest remaining time; with nothing measured that is the first
// submitted. Then the first reports it has 99 of 100 epochs to go and the
// second that it is nearly done, at the same speed: the spare GPU moves
// to the second.
func TestReportsReorderJobs(t *testing.T) {
	const gpuType = "srjf-gpu"
	ctx := t.Context()
	c := newCluster(t, gpuType, 1, 3)
	srv := c.start("--authentication", "kubernetes", "--progress-url", "http://voda.voda-system.svc:55587", "--algorithm", "ElasticSRJF")
	vc := srv.Client(client.WithBearerToken(mustToken(t, "admin")))
	long := submit(t, vc, mpiJob.manifest("long", gpuType, 1, 2, time.Hour))
	short := submit(t, vc, mpiJob.manifest("short", gpuType, 1, 2, time.Hour))
	c.waitPlaced(t, vc, mpiJob, long, 2)
	c.waitPlaced(t, vc, mpiJob, short, 1)

	send := func(job string, workers, i int, epoch float64) {
		t.Helper()
		pods, err := workerPods(ctx, c.ns, job)
		if err != nil || len(pods) == 0 {
			t.Fatalf("worker pods of %s: %v %v", job, pods, err)
		}
		r := map[string]any{"generation": "g1", "workers": workers, "nodes": 1, "steps": 100 * i, "epoch": epoch, "totalEpochs": 100}
		if code, _, body := postReport(t, srv, job, podToken(t, pods[0], kube.DefaultProgressAudience, true), r); code != 200 {
			t.Fatalf("report of %s: %d %s", job, code, body)
		}
	}
	// Three reports each (the first and the warm-up are not measured), a
	// tenth of an epoch per half second on the job's workers.
	for i := range 3 {
		if i > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		send(long, 2, i, 1+0.1*float64(i))
		send(short, 1, i, 99+0.05*float64(i))
	}
	c.waitPlaced(t, vc, mpiJob, short, 2)
	c.waitPlaced(t, vc, mpiJob, long, 1)
	for _, name := range []string{long, short} {
		j, err := vc.GetJob(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if j.RemainingSeconds == nil {
			t.Errorf("%s has no remaining time", name)
			continue
		}
		t.Logf("%s: %d workers, remaining %.0f s on one GPU", name, j.Workers, *j.RemainingSeconds)
	}
}

// TestProgressFromLogs: a job whose code cannot report names a pattern
// (vodascheduler/progress-log) and Voda reads its launcher's log through
// the pods/log API, as the leader's ServiceAccount (deploy/rbac.yaml), at
// the interval asked (1 s here; a minute by default). kwok plays the
// kubelet that serves the log: every pod's log is the stack's pod.log,
// which the test writes as the trainer would, one epoch every few seconds.
// The epochs read become the job's progress, its measured throughput on
// its placement and its remaining time; a line that does not match, or
// says nothing new, changes nothing. The log read is the MPIJob's
// launcher's, the PyTorchJob's worker 0's.
func TestProgressFromLogs(t *testing.T) {
	for _, k := range []kind{mpiJob, pyTorchJob} {
		t.Run(k.name, func(t *testing.T) { progressFromLogs(t, k) })
	}
}

func progressFromLogs(t *testing.T, k kind) {
	gpuType := "logs-" + strings.ToLower(k.name)
	ctx := t.Context()
	c := newCluster(t, gpuType, 1, 4)
	srv := c.start("--progress-log-interval", "1s")
	vc := srv.Client()
	const pattern = `Epoch (?P<epoch>[0-9.]+)/(?P<total>[0-9]+)`
	manifest := strings.Replace(string(k.manifest("logs", gpuType, 2, 2, time.Hour)),
		"    vodascheduler/gpu-type: "+gpuType+"\n",
		"    vodascheduler/gpu-type: "+gpuType+"\n    vodascheduler/progress-log: '"+pattern+"'\n", 1)
	// Every pod's log is the one file: a new job's log starts empty, and
	// the job is deleted at the end, so that it does not read the next's.
	if err := os.Truncate(env.PodLogFile(), 0); err != nil {
		t.Fatal(err)
	}
	job := submit(t, vc, []byte(manifest))
	defer func() {
		if _, err := vc.DeleteJob(context.Background(), job); err != nil {
			t.Errorf("delete %s: %v", job, err)
		}
	}()
	c.waitPlaced(t, vc, k, job, 2)

	logFile, err := os.OpenFile(env.PodLogFile(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logLine := func(text string) {
		t.Helper()
		// The CRI log format kwok reads: time, stream, tag (F: full line).
		if _, err := fmt.Fprintf(logFile, "%s stdout F %s\n", time.Now().UTC().Format(time.RFC3339Nano), text); err != nil {
			t.Fatal(err)
		}
	}
	logLine("loading data")
	// One epoch every 3 s: the first reading opens the generation, the
	// next is its warm-up, the rest are measured.
	const perEpoch = 3 * time.Second
	for epoch := 1; epoch <= 6; epoch++ {
		logLine(fmt.Sprintf("Epoch %d/20 loss %.2f", epoch, 3.0/float64(epoch)))
		logLine("validating")
		time.Sleep(perEpoch)
	}
	var got api.Job
	vodatest.WaitFor(t, "the job's progress, throughput and estimate from its log", 30*time.Second, func() (bool, error) {
		j, err := vc.GetJob(ctx, job)
		if err != nil {
			return false, err
		}
		got = j
		if j.ProgressLog != pattern || j.Measured == nil || j.Measured.Epoch != 6 || j.Measured.TotalEpochs != 20 ||
			len(j.Measured.Throughput) == 0 || j.Progress != 0.3 || j.RemainingSeconds == nil || *j.RemainingSeconds <= 0 {
			return false, fmt.Errorf("progress log %q, measured %+v, progress %v, remaining %v", j.ProgressLog, j.Measured, j.Progress, j.RemainingSeconds)
		}
		return true, nil
	})
	tp := got.Measured.Throughput[0]
	want := float64(time.Hour / perEpoch)
	t.Logf("read from the log: epoch %v of %v, %d workers on %d node(s): %.0f epochs/h over %.1f s (written at %.0f/h); remaining %.0f s at one GPU",
		got.Measured.Epoch, got.Measured.TotalEpochs, tp.Workers, tp.Nodes, tp.EpochsPerHour, tp.Seconds, want, *got.RemainingSeconds)
	if tp.Workers != 2 || tp.Nodes != 1 {
		t.Errorf("throughput measured on %d workers, %d nodes; the job runs on 2 workers on 1 node", tp.Workers, tp.Nodes)
	}
	// Readings land on the 1 s reading ticks, so an interval measures 3 s
	// of writing as 2 to 4 s; over several the rate is near the truth.
	if tp.EpochsPerHour < want/2 || tp.EpochsPerHour > want*2 {
		t.Errorf("measured %.0f epochs/h; the log was written at %.0f", tp.EpochsPerHour, want)
	}
}
