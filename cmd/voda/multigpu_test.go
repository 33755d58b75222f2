package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/api"
)

// multiGPUJobs are jobs whose workers hold several GPUs: one running on
// two workers of 4 GPUs, one waiting for workers of 2.
func multiGPUJobs() []api.Job {
	return []api.Job{
		{
			Name: "llm-20250601-100000", Namespace: "default", Kind: "PyTorchJob", GPUType: "a100", Status: "Running",
			Workers: 2, GPUsPerWorker: 4, GPUs: 8, MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, Epochs: 3, Scheduler: "ElasticFIFO",
			Placement:  map[string]int{"node-b": 1, "node-a": 1},
			SubmitTime: *at(10, 0, 0), FirstStart: at(10, 0, 5),
			WaitingSeconds: 5, RunningSeconds: 595, TotalSeconds: 600, AttainedService: 3560, Progress: 0.1,
			Allocations: []api.Allocation{
				{Time: *at(10, 0, 5), Workers: 1, GPUs: 4, Placement: map[string]int{"node-a": 1}},
				{Time: *at(10, 3, 0), Workers: 2, GPUs: 8, Placement: map[string]int{"node-b": 1, "node-a": 1}},
			},
		},
		{
			Name: "vit-20250601-100500", Namespace: "default", Kind: "MPIJob", GPUType: "a100", Status: "Waiting",
			GPUsPerWorker: 2, MinWorkers: 2, MaxWorkers: 4, RequestedWorkers: 2, Epochs: 5, Scheduler: "ElasticFIFO",
			SubmitTime: *at(10, 5, 0), WaitingSeconds: 300, TotalSeconds: 300, QueuePosition: 1,
		},
	}
}

// TestMultiGPUWorkersShown: get jobs counts workers (pods), -o wide adds
// the GPUs held and the GPUs per worker, and describe says G, the GPUs as
// workers x G, and the GPUs of each placement and allocation.
func TestMultiGPUWorkersShown(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, multiGPUJobs(), nil)
	checkCLI(t, f.URL, []cliCase{
		{
			name: "plain",
			args: []string{"get", "jobs"},
			want: `NAME                  STATUS    WORKERS   SCHEDULER     WAITING   RUNNING   TOTAL
llm-20250601-100000   Running   2         ElasticFIFO   5s        9m55s     10m
vit-20250601-100500   Waiting   0         ElasticFIFO   5m        0s        5m
`,
		},
		{
			name: "wide",
			args: []string{"get", "jobs", "-o", "wide"},
			want: `NAME                  STATUS    WORKERS   SCHEDULER     WAITING   RUNNING   TOTAL   GPU-TYPE   GPUS   GPUS/WORKER   PRIORITY   MIN   MAX   QUEUE   EST-START   PROGRESS   REASON   NAMESPACE
llm-20250601-100000   Running   2         ElasticFIFO   5s        9m55s     10m     a100       8      4             0          1     4     -       -           10%        -        default
vit-20250601-100500   Waiting   0         ElasticFIFO   5m        0s        5m      a100       0      2             0          2     4     1       unknown     0%         -        default
`,
		},
		{
			name: "describe running",
			args: []string{"describe", "job", "llm-20250601-100000"},
			want: `Name:              llm-20250601-100000
Namespace:         default
Kind:              PyTorchJob
GPU type:          a100
Status:            Running
Workers:           2 (min 1, max 4, requested 2)
GPUs per worker:   4
GPUs:              8 (2 workers × 4)
Priority:          0
Priority queue:    0
Epochs:            3
Scheduler:         ElasticFIFO
Submitted:         2025-06-01T10:00:00Z (10m ago)
First started:     2025-06-01T10:00:05Z (9m55s ago)
Finished:          -
Waiting:           5s
Running:           9m55s
Total:             10m
Attained service:  3560 GPU-seconds
Restarts:          0
Progress:          10.0%
Remaining:         unknown
Placement:
  node-a:  1 worker (4 GPUs)
  node-b:  1 worker (4 GPUs)
Allocations:
  2025-06-01T10:00:05Z:  1 worker (4 GPUs) on node-a×1
  2025-06-01T10:03:00Z:  2 workers (8 GPUs) on node-a×1, node-b×1
`,
		},
	})
}

// TestOlderServerWithoutG: a server older than workers of several GPUs
// says neither gpusPerWorker nor gpus; its workers held one GPU each.
func TestOlderServerWithoutG(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		j        api.Job
		wantG    int
		wantGPUs int
	}{
		{"older server, 3 workers", api.Job{Workers: 3}, 1, 3},
		{"G=1, 3 workers", api.Job{Workers: 3, GPUsPerWorker: 1, GPUs: 3}, 1, 3},
		{"G=4, 3 workers", api.Job{Workers: 3, GPUsPerWorker: 4, GPUs: 12}, 4, 12},
		{"G=4, none", api.Job{GPUsPerWorker: 4}, 4, 0},
	} {
		if g, n := perWorker(c.j), gpusHeld(c.j); g != c.wantG || n != c.wantGPUs {
			t.Errorf("%s: G %d, GPUs %d; want %d, %d", c.name, g, n, c.wantG, c.wantGPUs)
		}
	}
}

// TestPluginShowsMultiGPUWorkers: kubectl voda runs the same commands, so
// it shows the same GPUs.
func TestPluginShowsMultiGPUWorkers(t *testing.T) {
	kc := pluginKubeconfig(t)
	f := newFakeAPI(t, multiGPUJobs(), nil)
	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"get", "jobs", "-A", "-o", "wide"}, []string{"GPUS   GPUS/WORKER", "a100       8      4 ", "a100       0      2 "}},
		{[]string{"describe", "job", "llm-20250601-100000"}, []string{"GPUs per worker:   4\n", "GPUs:              8 (2 workers × 4)\n", "  node-a:  1 worker (4 GPUs)\n"}},
	} {
		out, err := runPlugin(t, kc, "", append(c.args, "--server", f.URL)...)
		if err != nil {
			t.Fatalf("kubectl voda %s: %v", strings.Join(c.args, " "), err)
		}
		for _, want := range c.wants {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl voda %s lacks %q:\n%s", strings.Join(c.args, " "), want, out)
			}
		}
		// The same table as voda's, but for the times measured from now.
		if c.args[0] == "get" {
			voda := mustVoda(t, append(c.args, "--server", f.URL)...)
			if diff := cmp.Diff(strings.Split(voda, "\n")[0], strings.Split(out, "\n")[0]); diff != "" {
				t.Errorf("kubectl voda's header differs from voda's (-voda,+kubectl voda):\n%s", diff)
			}
		}
	}
}
