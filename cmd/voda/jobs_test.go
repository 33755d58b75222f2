package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/api"
)

// testNow is the time the client commands see in tests.
var testNow = time.Date(2025, 6, 1, 10, 10, 0, 0, time.UTC)

func at(hh, mm, ss int) *time.Time {
	t := time.Date(2025, 6, 1, hh, mm, ss, 0, time.UTC)
	return &t
}

func seconds(s float64) *float64 { return &s }

// testJobs are the fake's jobs, in submission order: one finished, one
// running on two nodes, two waiting (with and without an estimate).
func testJobs() []api.Job {
	return []api.Job{
		{
			Name: "resnet-20250601-060000", Namespace: "default", Kind: "MPIJob", GPUType: "v100", Status: "Completed",
			MinWorkers: 1, MaxWorkers: 8, RequestedWorkers: 4, Epochs: 90, Scheduler: "ElasticFIFO",
			SubmitTime: *at(6, 0, 0), FirstStart: at(6, 0, 28), FinishTime: at(9, 12, 28),
			WaitingSeconds: 28, RunningSeconds: 11520, TotalSeconds: 11548,
			AttainedService: 46080, Progress: 1,
		},
		{
			Name: "mnist-20250601-100000", Namespace: "default", Kind: "MPIJob", GPUType: "v100", Status: "Running",
			Workers: 2, MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, Epochs: 150, Scheduler: "ElasticFIFO",
			Placement:  map[string]int{"node-b": 1, "node-a": 1},
			SubmitTime: *at(10, 0, 0), FirstStart: at(10, 0, 5),
			WaitingSeconds: 5, RunningSeconds: 595, TotalSeconds: 600,
			AttainedService: 1190, Restarts: 1, Progress: 0.42, RemainingSeconds: seconds(3720),
			Allocations: []api.Allocation{
				{Time: *at(10, 0, 5), Workers: 1, Placement: map[string]int{"node-a": 1}},
				{Time: *at(10, 3, 0), Workers: 2, Placement: map[string]int{"node-b": 1, "node-a": 1}},
			},
		},
		{
			Name: "bert-20250601-100500", Namespace: "team-a", Kind: "PyTorchJob", GPUType: "v100", Status: "Waiting",
			MinWorkers: 2, MaxWorkers: 8, RequestedWorkers: 4, Priority: 1, Epochs: 3, Scheduler: "ElasticFIFO",
			SubmitTime: *at(10, 5, 0), WaitingSeconds: 300, TotalSeconds: 300,
			QueuePosition: 1, EstimatedStart: at(10, 13, 0),
		},
		{
			Name: "ncf-20250601-100600", Namespace: "default", Kind: "MPIJob", GPUType: "a100", Status: "Waiting",
			MinWorkers: 1, MaxWorkers: 2, RequestedWorkers: 1, Epochs: 10, Scheduler: "Tiresias",
			SubmitTime: *at(10, 6, 0), WaitingSeconds: 240, TotalSeconds: 240,
			QueuePosition: 2, PriorityQueue: 1,
		},
	}
}

func testSchedulers() []api.Scheduler {
	return []api.Scheduler{
		{
			GPUType: "a100", Algorithm: "Tiresias", Params: map[string]string{"threshold": "3600", "starvation": "8"},
			RateLimitSeconds: 2.5, Now: at(10, 9, 0), LastCycle: at(10, 8, 48), Cycles: 12,
			Nodes: 1, GPUs: 4, Waiting: 1,
		},
		{
			GPUType: "v100", Algorithm: "ElasticFIFO", RateLimitSeconds: 30, Cycles: 0,
			Nodes: 2, GPUs: 8, GPUsInUse: 2, Waiting: 1, Running: 1,
		},
	}
}

// runVoda runs the voda command with args and stdin, under the test clock.
func runVoda(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(withClock(t.Context(), testNow, time.UTC))
	return out.String(), errOut.String(), err
}

// mustVoda is runVoda for commands that must succeed.
func mustVoda(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := runVoda(t, "", args...)
	if err != nil {
		t.Fatalf("voda %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// wantError runs a command that must fail with an error containing each
// of wants.
func wantError(t *testing.T, args []string, wants ...string) (stdout string) {
	t.Helper()
	stdout, _, err := runVoda(t, "", args...)
	if err == nil {
		t.Fatalf("voda %s succeeded, want an error\nstdout:\n%s", strings.Join(args, " "), stdout)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("voda %s: error %q does not contain %q", strings.Join(args, " "), err, w)
		}
	}
	return stdout
}

func TestGetJobsTable(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, testJobs(), testSchedulers())
	tests := []cliCase{
		{
			name: "all",
			args: []string{"get", "jobs"},
			want: `NAME                     STATUS      WORKERS   SCHEDULER     WAITING   RUNNING   TOTAL
resnet-20250601-060000   Completed   0         ElasticFIFO   28s       3h12m     3h12m
mnist-20250601-100000    Running     2         ElasticFIFO   5s        9m55s     10m
bert-20250601-100500     Waiting     0         ElasticFIFO   5m        0s        5m
ncf-20250601-100600      Waiting     0         Tiresias      4m        0s        4m
`,
		},
		{
			name: "wide",
			args: []string{"get", "jobs", "-o", "wide"},
			want: `NAME                     STATUS      WORKERS   SCHEDULER     WAITING   RUNNING   TOTAL   GPU-TYPE   GPUS   GPUS/WORKER   PRIORITY   MIN   MAX   QUEUE   EST-START   PROGRESS   REASON   NAMESPACE
resnet-20250601-060000   Completed   0         ElasticFIFO   28s       3h12m     3h12m   v100       0      1             0          1     8     -       -           100%       -        default
mnist-20250601-100000    Running     2         ElasticFIFO   5s        9m55s     10m     v100       2      1             0          1     4     -       -           42%        -        default
bert-20250601-100500     Waiting     0         ElasticFIFO   5m        0s        5m      v100       0      1             1          2     8     1       in 3m       0%         -        team-a
ncf-20250601-100600      Waiting     0         Tiresias      4m        0s        4m      a100       0      1             0          1     2     2       unknown     0%         -        default
`,
		},
		{
			name: "by name, alias job",
			args: []string{"get", "job", "ncf-20250601-100600", "mnist-20250601-100000"},
			want: `NAME                    STATUS    WORKERS   SCHEDULER     WAITING   RUNNING   TOTAL
ncf-20250601-100600     Waiting   0         Tiresias      4m        0s        4m
mnist-20250601-100000   Running   2         ElasticFIFO   5s        9m55s     10m
`,
		},
		{
			name: "names",
			args: []string{"get", "jobs", "--live", "-o", "name"},
			want: "mnist-20250601-100000\nbert-20250601-100500\nncf-20250601-100600\n",
		},
		{
			name: "status in any case",
			args: []string{"get", "jobs", "--status", "waiting", "--gpu-type", "v100", "-o", "NAME"},
			want: "bert-20250601-100500\n",
		},
	}
	checkCLI(t, f.URL, tests)
}

func TestGetJobsFilters(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, testJobs(), nil)
	mustVoda(t, "get", "jobs", "--server", f.URL, "--gpu-type", "a100", "--status", "RUNNING", "--live")
	reqs := f.Requests()
	want := fakeRequest{Method: "GET", Path: "/api/v1/jobs", Query: "gpuType=a100&live=true&status=Running"}
	if diff := cmp.Diff([]fakeRequest{want}, reqs); diff != "" {
		t.Errorf("requests (-want,+got):\n%s", diff)
	}
}

func TestGetJobsEmpty(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, testJobs(), nil)
	stdout, stderr, err := runVoda(t, "", "get", "jobs", "--server", f.URL, "--status", "Failed")
	if err != nil || stdout != "" || stderr != "No jobs found.\n" {
		t.Errorf("get jobs with no match: stdout %q, stderr %q, err %v; want only \"No jobs found.\" on stderr", stdout, stderr, err)
	}
	stdout = mustVoda(t, "get", "jobs", "--server", f.URL, "--status", "Failed", "-o", "json")
	if stdout != "{\n  \"items\": []\n}\n" {
		t.Errorf("-o json of no jobs = %q, want an empty items list", stdout)
	}
}

func TestGetJobsJSONAndYAMLRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, testJobs(), nil)
	decoders := map[string]func([]byte, any) error{
		"json": json.Unmarshal,
		"yaml": func(b []byte, v any) error { return yaml.Unmarshal(b, v) },
	}
	for format, decode := range decoders {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			var list api.JobList
			out := mustVoda(t, "get", "jobs", "--server", f.URL, "-o", format)
			if err := decode([]byte(out), &list); err != nil {
				t.Fatalf("decode -o %s: %v\n%s", format, err, out)
			}
			if diff := cmp.Diff(testJobs(), list.Items); diff != "" {
				t.Errorf("jobs after -o %s (-want,+got):\n%s", format, diff)
			}
			// One job by name is the job itself, not a list.
			var job api.Job
			out = mustVoda(t, "get", "job", "mnist-20250601-100000", "--server", f.URL, "-o", format)
			if err := decode([]byte(out), &job); err != nil {
				t.Fatalf("decode -o %s: %v\n%s", format, err, out)
			}
			if diff := cmp.Diff(testJobs()[1], job); diff != "" {
				t.Errorf("job after -o %s (-want,+got):\n%s", format, diff)
			}
		})
	}
	if out := mustVoda(t, "get", "jobs", "--server", f.URL, "-o", "json"); !strings.HasPrefix(out, "{\n  \"items\": [\n    {\n      \"name\": \"resnet-20250601-060000\",") {
		t.Errorf("-o json is not indented JSON of an api.JobList:\n%s", out)
	}
}

func TestGetJobsErrors(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, testJobs(), nil)
	// A missing job does not hide the others.
	stdout := wantError(t, []string{"get", "jobs", "gone", "bert-20250601-100500", "--server", f.URL}, "job gone: job gone not found")
	if !strings.Contains(stdout, "bert-20250601-100500") {
		t.Errorf("the job found is not shown:\n%s", stdout)
	}
	if stdout := wantError(t, []string{"get", "job", "gone", "-o", "json", "--server", f.URL}, "job gone: "); stdout != "" {
		t.Errorf("-o json of a missing job printed %q, want nothing", stdout)
	}
	wantError(t, []string{"get", "jobs", "--server", f.URL, "-o", "xml"}, `unknown output format "xml" (-o): use wide, json, yaml or name`)
	wantError(t, []string{"get", "jobs", "--server", f.URL, "--status", "Sleeping"},
		`unknown job status "Sleeping" (--status): use Submitted, Waiting, Running, Completed, Failed or Canceled`)
	wantError(t, []string{"get", "jobs", "x", "--live", "--server", f.URL}, "cannot be combined with job names")
	wantError(t, []string{"get", "pods", "--server", f.URL}, `unknown resource "pods" for voda get: use algorithms, jobs, schedulers or teams`)
	wantError(t, []string{"get"}, "voda get needs a resource: algorithms, jobs, schedulers or teams")
	if n := len(f.Requests()); n != 3 {
		t.Errorf("%d requests, want 3: invalid flags must fail before any request", n)
	}
}

func TestCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mnist := writeTestFile(t, dir, "mnist.yaml", "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata:\n  name: mnist\n")
	torch := writeTestFile(t, dir, "torch.json", `{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "torch"}}`)
	multi := writeTestFile(t, dir, "multi.yaml", "# two jobs\n---\nkind: MPIJob\nmetadata:\n  name: a\n--- # the second\nkind: MPIJob\nmetadata:\n  name: b\n---\n# nothing\n")
	noName := writeTestFile(t, dir, "noname.yaml", "kind: MPIJob\nmetadata: {}\n")
	empty := writeTestFile(t, dir, "empty.yaml", "# nothing here\n---\n")

	t.Run("one file", func(t *testing.T) {
		t.Parallel()
		f := newFakeAPI(t, nil, nil)
		got := mustVoda(t, "create", "-f", mnist, "--server", f.URL)
		if want := "Training job created: mnist-20250601-101000\n"; got != want {
			t.Errorf("stdout = %q, want %q", got, want)
		}
		body := "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata:\n  name: mnist\n"
		want := []fakeRequest{
			{Method: "POST", Path: "/api/v1/jobs", Query: "dryRun=All", ContentType: "application/yaml", Body: body},
			{Method: "POST", Path: "/api/v1/jobs", ContentType: "application/yaml", Body: body},
		}
		if diff := cmp.Diff(want, f.Requests()); diff != "" {
			t.Errorf("requests (-want,+got):\n%s", diff)
		}
	})
	t.Run("several files, JSON, stdin, documents", func(t *testing.T) {
		t.Parallel()
		f := newFakeAPI(t, nil, nil)
		stdout, stderr, err := runVoda(t, "kind: MPIJob\nmetadata:\n  name: mnist\n",
			"create", "-f", mnist, "-f", torch, "-f", multi, "-f", "-", "--server", f.URL)
		if err != nil {
			t.Fatalf("create: %v\n%s", err, stderr)
		}
		want := `Training job created: mnist-20250601-101000
Training job created: torch-20250601-101000
Training job created: a-20250601-101000
Training job created: b-20250601-101000
Training job created: mnist-20250601-101000-2
`
		if diff := cmp.Diff(want, stdout); diff != "" {
			t.Errorf("stdout (-want,+got):\n%s", diff)
		}
		var types []string
		for _, r := range f.Creates() {
			types = append(types, r.ContentType)
		}
		wantTypes := []string{"application/yaml", "application/json", "application/yaml", "application/yaml", "application/yaml"}
		if diff := cmp.Diff(wantTypes, types); diff != "" {
			t.Errorf("content types (-want,+got):\n%s", diff)
		}
	})
	t.Run("output", func(t *testing.T) {
		t.Parallel()
		f := newFakeAPI(t, nil, nil)
		if got := mustVoda(t, "create", "-f", mnist, "-o", "name", "--server", f.URL); got != "mnist-20250601-101000\n" {
			t.Errorf("-o name = %q", got)
		}
		var job api.Job
		if err := json.Unmarshal([]byte(mustVoda(t, "create", "-f", torch, "-o", "json", "--server", f.URL)), &job); err != nil || job.Name != "torch-20250601-101000" || job.Kind != "PyTorchJob" {
			t.Errorf("-o json of one job: %+v, %v", job, err)
		}
		var list api.JobList
		if err := yaml.Unmarshal([]byte(mustVoda(t, "create", "-f", multi, "-o", "yaml", "--server", f.URL)), &list); err != nil || len(list.Items) != 2 {
			t.Errorf("-o yaml of two jobs: %+v, %v", list, err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		f := newFakeAPI(t, nil, nil)
		wantError(t, []string{"create", "-f", noName, "-f", mnist, "--server", f.URL},
			"1 of 2 manifests are invalid; no job was created", noName+": a job needs a name (field metadata.name)")
		if n := len(f.Creates()); n != 0 {
			t.Errorf("%d jobs created with an invalid manifest among them, want none", n)
		}
		before := len(f.Requests())
		wantError(t, []string{"create", "-f", mnist, "-f", filepath.Join(dir, "missing.yaml"), "--server", f.URL}, "missing.yaml: no such file")
		wantError(t, []string{"create", "-f", empty, "--server", f.URL}, "empty.yaml: no job manifest in it")
		wantError(t, []string{"create", "-f", "-", "-f", "-", "--server", f.URL}, "standard input can be read only once")
		wantError(t, []string{"create", "--server", f.URL}, "missing the manifests: voda create -f FILE")
		wantError(t, []string{"create", "-f", mnist, "-o", "wide", "--server", f.URL}, "use json, yaml or name")
		if n := len(f.Requests()) - before; n != 0 {
			t.Errorf("%d requests after invalid input, want none", n)
		}
	})
}

func TestDelete(t *testing.T) {
	t.Parallel()
	canceled := api.Job{Name: "vgg-20250601-090000", Namespace: "default", Kind: "MPIJob", GPUType: "v100", Status: "Canceled", DeleteRequested: true}
	f := newFakeAPI(t, append(testJobs(), canceled), nil)
	got := mustVoda(t, "delete", "mnist-20250601-100000", "--server", f.URL)
	if want := "Training job deleted: mnist-20250601-100000\n"; got != want {
		t.Errorf("delete = %q, want %q", got, want)
	}
	got = mustVoda(t, "delete", "job", "bert-20250601-100500", "ncf-20250601-100600", "--server", f.URL)
	if want := "Training job deleted: bert-20250601-100500\nTraining job deleted: ncf-20250601-100600\n"; got != want {
		t.Errorf("delete job = %q, want %q", got, want)
	}
	// Jobs being halted are marked in the table.
	table := mustVoda(t, "get", "jobs", "--server", f.URL, "--live")
	want := `NAME                    STATUS             WORKERS   SCHEDULER     WAITING   RUNNING   TOTAL
mnist-20250601-100000   Running,Deleting   2         ElasticFIFO   5s        9m55s     10m
bert-20250601-100500    Waiting,Deleting   0         ElasticFIFO   5m        0s        5m
ncf-20250601-100600     Waiting,Deleting   0         Tiresias      4m        0s        4m
`
	if diff := cmp.Diff(want, table); diff != "" {
		t.Errorf("table after delete (-want,+got):\n%s", diff)
	}
	// A finished job's record is removed, whether it finished by itself
	// or was deleted before; a missing job does not stop the others.
	stdout := wantError(t, []string{"delete", "resnet-20250601-060000", "gone", "mnist-20250601-100000", canceled.Name, "--server", f.URL},
		"delete gone: job gone not found")
	if want := "Training job deleted: resnet-20250601-060000 (was Completed; record removed)\n" +
		"Training job deleted: mnist-20250601-100000\n" +
		"Training job deleted: vgg-20250601-090000 (was Canceled; record removed)\n"; stdout != want {
		t.Errorf("delete = %q, want %q", stdout, want)
	}
	wantError(t, []string{"delete", "resnet-20250601-060000", "--server", f.URL}, "delete resnet-20250601-060000: job resnet-20250601-060000 not found")
	wantError(t, []string{"delete", "job", "--server", f.URL}, "missing the job's name: voda delete NAME (voda get jobs lists them)")
}

// The commands read every page of a list: a table, -o name for delete's
// arguments, and -o json as one list.
func TestListPages(t *testing.T) {
	t.Parallel()
	var jobs []api.Job
	var names []string
	for i := range 7 {
		status := []api.Status{"Completed", "Running", "Waiting"}[i%3]
		j := api.Job{Name: fmt.Sprintf("job%d-20250601-1000%02d", i, i), Namespace: "default", Kind: "MPIJob", GPUType: "v100", Status: status,
			SubmitTime: *at(10, 0, i)}
		jobs = append(jobs, j)
		names = append(names, j.Name)
	}
	f := newFakeAPI(t, jobs, nil)
	out := mustVoda(t, "get", "jobs", "-o", "name", "--server", f.URL)
	if diff := cmp.Diff(strings.Join(names, "\n")+"\n", out); diff != "" {
		t.Errorf("get jobs -o name (-want,+got):\n%s", diff)
	}
	var conts []string
	for _, r := range f.Requests() {
		conts = append(conts, r.Query)
	}
	if diff := cmp.Diff([]string{"", "continue=from-3", "continue=from-6"}, conts); diff != "" {
		t.Errorf("the pages' queries (-want,+got):\n%s", diff)
	}
	// --chunk-size asks for pages of that size.
	if out := mustVoda(t, "get", "jobs", "-o", "name", "--chunk-size", "4", "--server", f.URL); out != strings.Join(names, "\n")+"\n" {
		t.Errorf("--chunk-size 4: %q", out)
	}
	reqs := f.Requests()
	conts = nil
	for _, r := range reqs[len(reqs)-2:] {
		conts = append(conts, r.Query)
	}
	if diff := cmp.Diff([]string{"limit=4", "continue=from-4&limit=4"}, conts); diff != "" {
		t.Errorf("the pages' queries with --chunk-size 4 (-want,+got):\n%s", diff)
	}
	wantError(t, []string{"get", "jobs", "--chunk-size", "5001", "--server", f.URL}, "--chunk-size: 5001 is not from 1 to 5000")
	var list api.JobList
	if err := json.Unmarshal([]byte(mustVoda(t, "get", "jobs", "-o", "json", "--server", f.URL)), &list); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(jobs, list.Items); diff != "" || list.Metadata.Continue != "" {
		t.Errorf("-o json: continue %q, items (-want,+got):\n%s", list.Metadata.Continue, diff)
	}
	// voda delete $(voda get jobs --status Completed -o name)
	done := strings.Fields(mustVoda(t, "get", "jobs", "--status", "Completed", "-o", "name", "--server", f.URL))
	if want := []string{names[0], names[3], names[6]}; !slices.Equal(done, want) {
		t.Fatalf("completed jobs %v, want %v", done, want)
	}
	mustVoda(t, append(append([]string{"delete"}, done...), "--server", f.URL)...)
	left := strings.Fields(mustVoda(t, "get", "jobs", "-o", "name", "--server", f.URL))
	if want := []string{names[1], names[2], names[4], names[5]}; !slices.Equal(left, want) {
		t.Errorf("jobs left %v, want %v", left, want)
	}
}

func TestDescribeJob(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, testJobs(), nil)
	tests := []struct {
		name, job, want string
	}{
		{
			name: "running", job: "mnist-20250601-100000",
			want: `Name:              mnist-20250601-100000
Namespace:         default
Kind:              MPIJob
GPU type:          v100
Status:            Running
Workers:           2 (min 1, max 4, requested 2)
GPUs per worker:   1
GPUs:              2 (2 workers × 1)
Priority:          0
Priority queue:    0
Epochs:            150
Scheduler:         ElasticFIFO
Submitted:         2025-06-01T10:00:00Z (10m ago)
First started:     2025-06-01T10:00:05Z (9m55s ago)
Finished:          -
Waiting:           5s
Running:           9m55s
Total:             10m
Attained service:  1190 GPU-seconds
Restarts:          1
Progress:          42.0%
Remaining:         about 1h2m on one GPU
Placement:
  node-a:  1 worker
  node-b:  1 worker
Allocations:
  2025-06-01T10:00:05Z:  1 worker on node-a×1
  2025-06-01T10:03:00Z:  2 workers on node-a×1, node-b×1
`,
		},
		{
			name: "waiting with an estimate", job: "bert-20250601-100500",
			want: `Name:              bert-20250601-100500
Namespace:         team-a
Kind:              PyTorchJob
GPU type:          v100
Status:            Waiting
Workers:           0 (min 2, max 8, requested 4)
GPUs per worker:   1
GPUs:              0 (0 workers × 1)
Priority:          1
Priority queue:    0
Epochs:            3
Scheduler:         ElasticFIFO
Submitted:         2025-06-01T10:05:00Z (5m ago)
First started:     -
Finished:          -
Waiting:           5m
Running:           0s
Total:             5m
Attained service:  0 GPU-seconds
Restarts:          0
Progress:          0.0%
Remaining:         unknown
Queue position:    1
Estimated start:   2025-06-01T10:13:00Z (in 3m)
Placement:         none
`,
		},
		{
			name: "waiting without an estimate", job: "ncf-20250601-100600",
			want: `Name:              ncf-20250601-100600
Namespace:         default
Kind:              MPIJob
GPU type:          a100
Status:            Waiting
Workers:           0 (min 1, max 2, requested 1)
GPUs per worker:   1
GPUs:              0 (0 workers × 1)
Priority:          0
Priority queue:    1
Epochs:            10
Scheduler:         Tiresias
Submitted:         2025-06-01T10:06:00Z (4m ago)
First started:     -
Finished:          -
Waiting:           4m
Running:           0s
Total:             4m
Attained service:  0 GPU-seconds
Restarts:          0
Progress:          0.0%
Remaining:         unknown
Queue position:    2
Estimated start:   unknown
Placement:         none
`,
		},
		{
			name: "finished", job: "resnet-20250601-060000",
			want: `Name:              resnet-20250601-060000
Namespace:         default
Kind:              MPIJob
GPU type:          v100
Status:            Completed
Workers:           0 (min 1, max 8, requested 4)
GPUs per worker:   1
GPUs:              0 (0 workers × 1)
Priority:          0
Priority queue:    0
Epochs:            90
Scheduler:         ElasticFIFO
Submitted:         2025-06-01T06:00:00Z (4h10m ago)
First started:     2025-06-01T06:00:28Z (4h9m ago)
Finished:          2025-06-01T09:12:28Z (57m ago)
Waiting:           28s
Running:           3h12m
Total:             3h12m
Attained service:  46080 GPU-seconds
Restarts:          0
Progress:          100.0%
Placement:         none
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := mustVoda(t, "describe", "job", tc.job, "--server", f.URL)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("describe job %s (-want,+got):\n%s", tc.job, diff)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		var job api.Job
		if err := json.Unmarshal([]byte(mustVoda(t, "describe", "job", "bert-20250601-100500", "-o", "json", "--server", f.URL)), &job); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(testJobs()[2], job); diff != "" {
			t.Errorf("describe -o json (-want,+got):\n%s", diff)
		}
	})
	t.Run("not found", func(t *testing.T) {
		t.Parallel()
		wantError(t, []string{"describe", "job", "gone", "--server", f.URL}, "job gone: job gone not found")
		wantError(t, []string{"describe", "pod", "x", "--server", f.URL}, `unknown resource "pod" for voda describe: use job`)
	})
}

func TestSetPriority(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, testJobs(), nil)
	got := mustVoda(t, "set", "priority", "bert-20250601-100500", "0", "--server", f.URL)
	if want := "Priority of bert-20250601-100500 set to 0\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	want := []fakeRequest{{Method: "PUT", Path: "/api/v1/jobs/bert-20250601-100500/priority", ContentType: "application/json", Body: `{"priority":0}`}}
	if diff := cmp.Diff(want, f.Requests()); diff != "" {
		t.Errorf("requests (-want,+got):\n%s", diff)
	}
	wantError(t, []string{"set", "priority", "bert-20250601-100500", "high", "--server", f.URL}, `priority "high" is not an integer`)
	wantError(t, []string{"set", "priority", "--server", f.URL, "--", "bert-20250601-100500", "-1"}, "priority must be a non-negative integer (field priority)")
	wantError(t, []string{"set", "priority", "gone", "1", "--server", f.URL}, "job gone not found")
}

// A negative PRIORITY is an argument, not a flag: it reaches the server,
// which rejects it with its own message; flags still work before and
// after the arguments.
func TestSetPriorityNegativeAndFlags(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, testJobs(), nil)
	const job = "bert-20250601-100500"
	wantError(t, []string{"set", "priority", job, "-1", "--server", f.URL}, "priority must be a non-negative integer (field priority)")
	wantError(t, []string{"set", "priority", "--server", f.URL, job, "-5"}, "priority must be a non-negative integer (field priority)")
	wantError(t, []string{"set", "priority", "--server", f.URL, job, "--", "-1"}, "priority must be a non-negative integer (field priority)")
	want := []fakeRequest{
		{Method: "PUT", Path: "/api/v1/jobs/" + job + "/priority", ContentType: "application/json", Body: `{"priority":-1}`},
		{Method: "PUT", Path: "/api/v1/jobs/" + job + "/priority", ContentType: "application/json", Body: `{"priority":-5}`},
		{Method: "PUT", Path: "/api/v1/jobs/" + job + "/priority", ContentType: "application/json", Body: `{"priority":-1}`},
	}
	if diff := cmp.Diff(want, f.Requests()); diff != "" {
		t.Errorf("requests (-want,+got):\n%s", diff)
	}

	for _, args := range [][]string{
		{"set", "priority", job, "2", "-o", "json", "--server", f.URL},
		{"set", "priority", "-o", "json", "--server", f.URL, job, "2"},
	} {
		var got api.Job
		if err := json.Unmarshal([]byte(mustVoda(t, args...)), &got); err != nil || got.Priority != 2 {
			t.Errorf("voda %s: %+v, %v", strings.Join(args, " "), got.Priority, err)
		}
	}
	if out := mustVoda(t, "set", "priority", job, "1", "--help"); !strings.Contains(out, "Usage:\n  voda set priority JOB PRIORITY") {
		t.Errorf("--help after the arguments:\n%s", out)
	}
	before := len(f.Requests())
	wantError(t, []string{"set", "priority", job, "--server", f.URL}, "missing the priority: voda set priority JOB PRIORITY")
	wantError(t, []string{"set", "priority", job, "1", "extra", "--server", f.URL}, `too many arguments ("extra"): voda set priority JOB PRIORITY`)
	wantError(t, []string{"set", "priority", job, "1", "--bogus"}, "unknown flag: --bogus")
	if n := len(f.Requests()) - before; n != 0 {
		t.Errorf("%d requests after bad arguments, want none", n)
	}
}

// TestCreateValidatesAllFirst: with an invalid document among several,
// nothing is created (before, the valid ones were, and a rerun duplicated
// them), and every invalid document is reported by file and index.
func TestCreateValidatesAllFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeTestFile(t, dir, "good.yaml", "kind: MPIJob\nmetadata:\n  name: good\n")
	mixed := writeTestFile(t, dir, "mixed.yaml", "kind: MPIJob\nmetadata:\n  name: first\n---\nkind: Deployment\nmetadata:\n  name: second\n---\nkind: MPIJob\nmetadata: {}\n")
	f := newFakeAPI(t, nil, nil)
	stdout := wantError(t, []string{"create", "-f", good, "-f", mixed, "--server", f.URL},
		"2 of 4 manifests are invalid; no job was created",
		mixed+` (document 2): kind "Deployment" is not MPIJob or PyTorchJob (field kind)`,
		mixed+" (document 3): a job needs a name (field metadata.name)")
	if stdout != "" || len(f.Creates()) != 0 || len(f.Jobs()) != 0 {
		t.Fatalf("jobs created despite invalid documents: stdout %q, %d creates", stdout, len(f.Creates()))
	}
	// Fixed, the rerun creates each job once.
	writeTestFile(t, dir, "mixed.yaml", "kind: MPIJob\nmetadata:\n  name: first\n---\nkind: PyTorchJob\nmetadata:\n  name: second\n")
	got := mustVoda(t, "create", "-f", good, "-f", mixed, "--server", f.URL)
	want := "Training job created: good-20250601-101000\nTraining job created: first-20250601-101000\nTraining job created: second-20250601-101000\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rerun (-want,+got):\n%s", diff)
	}
	if n := len(f.Jobs()); n != 3 {
		t.Errorf("%d jobs, want 3", n)
	}
}

func TestDescribeJobReasonAndUnknownEpochs(t *testing.T) {
	t.Parallel()
	job := api.Job{
		Name: "huge-20250601-100000", Kind: "MPIJob", GPUType: "v100", Status: "Waiting",
		Reason: "Unschedulable", Message: "needs at least 1000 GPUs; the v100 nodes have 8 in all",
		MinWorkers: 1000, MaxWorkers: 1000, RequestedWorkers: 1000, Scheduler: "ElasticFIFO",
		SubmitTime: *at(10, 0, 0), WaitingSeconds: 600, TotalSeconds: 600,
	}
	f := newFakeAPI(t, []api.Job{job}, nil)
	want := `Name:              huge-20250601-100000
Namespace:         -
Kind:              MPIJob
GPU type:          v100
Status:            Waiting
Reason:            Unschedulable
Message:           needs at least 1000 GPUs; the v100 nodes have 8 in all
Workers:           0 (min 1000, max 1000, requested 1000)
GPUs per worker:   1
GPUs:              0 (0 workers × 1)
Priority:          0
Priority queue:    0
Epochs:            unknown
Scheduler:         ElasticFIFO
Submitted:         2025-06-01T10:00:00Z (10m ago)
First started:     -
Finished:          -
Waiting:           10m
Running:           0s
Total:             10m
Attained service:  0 GPU-seconds
Restarts:          0
Progress:          0.0%
Remaining:         unknown
Queue position:    unknown
Estimated start:   unknown
Placement:         none
`
	if diff := cmp.Diff(want, mustVoda(t, "describe", "job", job.Name, "--server", f.URL)); diff != "" {
		t.Errorf("describe (-want,+got):\n%s", diff)
	}
	wide := mustVoda(t, "get", "jobs", "-o", "wide", "--server", f.URL)
	if lines := strings.Split(wide, "\n"); !strings.HasSuffix(lines[0], "PROGRESS   REASON          NAMESPACE") || !strings.HasSuffix(lines[1], "0%         Unschedulable   -") {
		t.Errorf("-o wide does not show the reason:\n%s", wide)
	}
}

// TestServerClock checks that ages are measured on the server's clock,
// which runs ahead of the wall clock on a simulated cluster with --speed.
func TestServerClock(t *testing.T) {
	t.Parallel()
	// The server's clock reads 12:10 while the client's reads 10:10.
	jobs := []api.Job{
		{
			Name: "late-20250601-120000", GPUType: "v100", Status: "Waiting",
			SubmitTime: *at(12, 0, 0), WaitingSeconds: 600, TotalSeconds: 600,
			QueuePosition: 1, EstimatedStart: at(12, 13, 0),
		},
		{
			Name: "done-20250601-110000", GPUType: "v100", Status: "Failed",
			SubmitTime: *at(11, 0, 0), FirstStart: at(11, 0, 0), FinishTime: at(11, 30, 0),
			RunningSeconds: 1800, TotalSeconds: 1800,
		},
	}
	scheds := []api.Scheduler{{GPUType: "v100", Algorithm: "ElasticFIFO", Now: at(12, 10, 0)}}
	f := newFakeAPI(t, jobs, scheds)
	wide := mustVoda(t, "get", "job", "late-20250601-120000", "-o", "wide", "--server", f.URL)
	if !strings.Contains(wide, "   in 3m   ") {
		t.Errorf("EST-START is not measured on the server's clock:\n%s", wide)
	}
	desc := mustVoda(t, "describe", "job", "late-20250601-120000", "--server", f.URL)
	for _, want := range []string{"Submitted:         2025-06-01T12:00:00Z (10m ago)\n", "Estimated start:   2025-06-01T12:13:00Z (in 3m)\n"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe of a live job lacks %q:\n%s", want, desc)
		}
	}
	desc = mustVoda(t, "describe", "job", "done-20250601-110000", "--server", f.URL)
	if want := "Finished:          2025-06-01T11:30:00Z (40m ago)\n"; !strings.Contains(desc, want) {
		t.Errorf("describe of a finished job lacks %q (the scheduler's clock):\n%s", want, desc)
	}
}

// A job that reported its progress shows what was measured, the speedup
// curve and when it should finish.
func TestDescribeJobMeasured(t *testing.T) {
	t.Parallel()
	rem := 7200.0
	job := api.Job{
		Name: "bert-20250601-100000", Namespace: "team-a", Kind: "PyTorchJob", GPUType: "v100", Status: "Running",
		Workers: 2, MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, Epochs: 10, Scheduler: "ElasticSRJF",
		SubmitTime: *at(10, 0, 0), FirstStart: at(10, 0, 0), RunningSeconds: 600, TotalSeconds: 600, Progress: 0.6,
		Placement: map[string]int{"node-a": 2}, RemainingSeconds: &rem, Speedup: []float64{0, 1, 1.9, 2.7, 3.4},
		EstimatedFinish: at(10, 47, 22), EstimatedFinishErrorSeconds: 180,
		Measured: &api.Measured{Generation: "r1-0-2", LastReport: *at(10, 9, 30), Epoch: 6, TotalEpochs: 10, Steps: 600,
			Throughput: []api.Throughput{
				{Workers: 1, Nodes: 1, EpochsPerHour: 19.5, Seconds: 120},
				{Workers: 2, Nodes: 1, EpochsPerHour: 37.05, RelativeError: 0.04, Seconds: 420},
			},
			RestartSeconds: 21},
	}
	f := newFakeAPI(t, []api.Job{job}, nil)
	got := mustVoda(t, "describe", "job", job.Name, "--server", f.URL)
	for _, want := range []string{
		"Last report:       30s ago: epoch 6.00 of 10, 600 steps, generation r1-0-2\n",
		"Throughput:\n  1 worker, 1 node:   19.50 epochs/h, measured over 2m\n  2 workers, 1 node:  37.05 epochs/h ±4%, measured over 7m\n",
		"Speedup:           1:1.00 2:1.90 3:2.70 4:3.40\n",
		"Restart cost:      21s (measured)\n",
		"Remaining:         about 2h on one GPU\nEstimated finish:  2025-06-01T10:47:22Z (in 37m) ± 3m\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("describe lacks %q:\n%s", want, got)
		}
	}
}

// describe shows the newest allocation changes, saying how many it left
// out, and a change to no GPUs as such.
func TestDescribeAllocations(t *testing.T) {
	t.Parallel()
	var h []api.Allocation
	for i := range describedAllocations + 2 {
		a := api.Allocation{Time: at(10, i, 0).UTC(), Workers: i % 2, Placement: map[string]int{"node-a": i % 2}}
		if a.Workers == 0 {
			a.Placement = nil
		}
		h = append(h, a)
	}
	var d describer
	describeAllocations(&d, h, 1, time.UTC)
	var b bytes.Buffer
	d.write(&b)
	got := b.String()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != describedAllocations+1 || !strings.Contains(lines[0], "the newest 10 of 12") {
		t.Fatalf("describe:\n%s\nwant a title saying the newest %d of %d, then %d lines", got, describedAllocations, len(h), describedAllocations)
	}
	if !strings.Contains(lines[1], "10:02:00Z:  no GPUs") || !strings.Contains(lines[len(lines)-1], "10:11:00Z:  1 worker on node-a×1") {
		t.Errorf("describe:\n%s\nwant 10:02 (no GPUs) first and 10:11 (1 worker on node-a) last", got)
	}
}
