package jobspec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseOneGPUWorkersOnly covers the GPU rules beyond badInputs while
// workers of several GPUs are not accepted (Options.MultiGPUWorkers
// false): before the rules, every one of these was accepted and counted
// as one GPU per worker.
func TestParseOneGPUWorkersOnly(t *testing.T) {
	cases := map[string]struct {
		input  string
		field  string
		reason string
	}{
		"runLauncherAsWorker":            {input: edit(baseMPIJob, "slotsPerWorker: 1", "slotsPerWorker: 1\n  runLauncherAsWorker: true"), field: "spec.runLauncherAsWorker", reason: "the launcher gets no GPU in Voda"},
		"runLauncherAsWorker false":      {input: edit(baseMPIJob, "slotsPerWorker: 1", "slotsPerWorker: 1\n  runLauncherAsWorker: false")},
		"nprocPerNode 4":                 {input: edit(basePyTorchJob, "  elasticPolicy:", "  nprocPerNode: \"4\"\n  elasticPolicy:"), field: "spec.nprocPerNode", reason: `"4" is not accepted: a worker pod runs one training process per GPU, so it must be 1`},
		"nprocPerNode 1":                 {input: edit(basePyTorchJob, "  elasticPolicy:", "  nprocPerNode: \"1\"\n  elasticPolicy:")},
		"elasticPolicy.nProcPerNode 2":   {input: edit(basePyTorchJob, "  elasticPolicy:", "  elasticPolicy:\n    nProcPerNode: 2"), field: "spec.elasticPolicy.nProcPerNode", reason: "2 is not accepted"},
		"slotsPerWorker 0":               {input: edit(baseMPIJob, "slotsPerWorker: 1", "slotsPerWorker: 0"), field: "spec.slotsPerWorker", reason: "0 is not accepted"},
		"slotsPerWorker a string":        {input: edit(baseMPIJob, "slotsPerWorker: 1", `slotsPerWorker: "1"`), field: "spec.slotsPerWorker", reason: `"1" is not accepted: a worker runs one process per GPU, so it must be the integer 1, its GPUs (no container asks for nvidia.com/gpu, so one); or leave it out and Voda sets it`},
		"two GPUs before slotsPerWorker": {input: edit(workerResources("{limits: {nvidia.com/gpu: 2}}", ""), "slotsPerWorker: 1", "slotsPerWorker: 3"), field: workerGPU, reason: "2 is not accepted yet"},
		"nvidia.com/gpu \"2\"":           {input: workerResources(`{limits: {nvidia.com/gpu: "2"}}`, ""), field: workerGPU, reason: `2 is not accepted yet: this Voda schedules workers of one GPU`},
		"nvidia.com/gpu 500m":            {input: workerResources("{limits: {nvidia.com/gpu: 500m}}", ""), field: workerGPU, reason: `"500m" is not accepted`},
		"nvidia.com/gpu 1000m":           {input: workerResources("{limits: {nvidia.com/gpu: 1000m}}", ""), field: workerGPU, reason: `"1000m" is not accepted: a worker's GPUs are a whole number from 1 to 64, written as such (4, not 4000m)`},
		"nvidia.com/gpu null":            {input: workerResources("{limits: {nvidia.com/gpu: null}}", ""), field: workerGPU, reason: "null is not accepted"},
		"nvidia.com/gpu a list":          {input: workerResources("{limits: {nvidia.com/gpu: [1]}}", ""), field: workerGPU, reason: "a list is not accepted"},
		"limits 1, requests 2": {
			input: workerResources("{limits: {nvidia.com/gpu: 1}, requests: {nvidia.com/gpu: 2}}", ""),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.requests[nvidia.com/gpu]", reason: "2 is not accepted",
		},
		"MIG profile": {
			input: workerResources("{limits: {nvidia.com/mig-1g.5gb: 1}}", ""),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limits[nvidia.com/mig-1g.5gb]", reason: "Voda schedules whole GPUs as nvidia.com/gpu",
		},
		"MIG profile besides nvidia.com/gpu": {
			input: workerResources("{limits: {nvidia.com/gpu: 1, nvidia.com/mig-1g.5gb: 1}}", ""),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limits[nvidia.com/mig-1g.5gb]", reason: "is not accepted",
		},
		"Intel GPU in requests": {
			input: workerResources("{requests: {gpu.intel.com/i915: 1}}", ""),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.requests[gpu.intel.com/i915]", reason: "is not accepted",
		},
		"any resource named GPU": {
			input: workerResources("{limits: {example.com/Shared-GPU: 1}}", ""),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limits[example.com/Shared-GPU]", reason: "is not accepted",
		},
		"GPU asked in requests by one container, limits by another": {
			input: workerResources("{requests: {nvidia.com/gpu: 1}}", "          - {name: sidecar, resources: {limits: {nvidia.com/gpu: 1}}}\n"),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[1].resources.limits[nvidia.com/gpu]", reason: "containers[0] already asks",
		},
		"sidecar with amd.com/gpu": {
			input: workerResources("{limits: {nvidia.com/gpu: 1}}", "          - {name: sidecar, resources: {limits: {amd.com/gpu: 1}}}\n"),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[1].resources.limits[amd.com/gpu]", reason: "is not accepted",
		},
		"three containers, no GPU named": {
			input: edit(baseMPIJob, mpiWorkerContainer, mpiWorkerContainer+"          - name: a\n          - name: b\n"),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers", reason: "with 3 containers and none asking for a GPU",
		},
		"second worker container a string": {
			input: workerResources("{limits: {nvidia.com/gpu: 1}}", "          - sidecar\n"),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[1]", reason: "must be an object, not a string",
		},
		"resources a list": {
			input: workerResources("[nvidia.com/gpu]", ""),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources", reason: "must be an object, not a list",
		},
		"limits a string": {
			input: workerResources("{limits: nvidia.com/gpu}", ""),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limits", reason: "must be an object, not a string",
		},
		"worker initContainers an object": {
			input: edit(baseMPIJob, "          containers:\n          - name: worker\n", "          initContainers: {name: warmup}\n          containers:\n          - name: worker\n"),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.initContainers", reason: "must be a list, not an object",
		},
		"launcher init container with amd.com/gpu": {
			input: edit(baseMPIJob, "          containers:\n          - name: launcher\n", "          initContainers:\n          - {name: a}\n          - {name: b, resources: {requests: {amd.com/gpu: 1}}}\n          containers:\n          - name: launcher\n"),
			field: "spec.mpiReplicaSpecs.Launcher.template.spec.initContainers[1].resources.requests[amd.com/gpu]", reason: "the launcher gets no GPU",
		},
		"launcher second container with nvidia.com/gpu": {
			input: edit(baseMPIJob, "\n    Worker:\n", "\n          - {name: sidecar, resources: {limits: {nvidia.com/gpu: 1}}}\n    Worker:\n"),
			field: "spec.mpiReplicaSpecs.Launcher.template.spec.containers[1].resources.limits[nvidia.com/gpu]", reason: "the launcher gets no GPU",
		},
		"GPUs before settings": {
			input: env(workerResources("{limits: {nvidia.com/gpu: 2}}", ""), "MIN_NUM_PROC", `"x"`), field: workerGPU, reason: "2 is not accepted",
		},
		"PyTorchJob nvidia.com/gpu 2": {
			input: edit(basePyTorchJob, "          - name: pytorch\n", "          - name: pytorch\n            resources: {limits: {nvidia.com/gpu: 2}}\n"),
			field: "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources.limits[nvidia.com/gpu]", reason: "2 is not accepted",
		},
		"PyTorchJob sidecar, no GPU named": {
			input: basePyTorchJob + "          - name: sidecar\n",
			field: "spec.pytorchReplicaSpecs.Worker.template.spec.containers", reason: "name the container that trains",
		},
		"PyTorchJob init container with a GPU": {
			input: edit(basePyTorchJob, "          containers:\n", "          initContainers: [{name: warmup, resources: {requests: {nvidia.com/gpu: 1}}}]\n          containers:\n"),
			field: "spec.pytorchReplicaSpecs.Worker.template.spec.initContainers[0].resources.requests[nvidia.com/gpu]", reason: "an init container gets no GPU",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.field == "" { // accepted
				if _, err := Parse([]byte(tc.input), Options{}); err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			checkFieldError(t, []byte(tc.input), Options{}, tc.field, tc.reason)
		})
	}
}

// TestWorkerGPUContainer checks that the exported helper finds, in a
// stored manifest decoded by any JSON decoder, the container Parse chose.
func TestWorkerGPUContainer(t *testing.T) {
	inputs := map[string]struct {
		input string
		want  int
	}{
		"single container, no GPU named": {baseMPIJob, 0},
		"GPU in limits":                  {workerResources("{limits: {nvidia.com/gpu: 1}}", "          - {name: sidecar}\n"), 0},
		"GPU on the second container":    {edit(baseMPIJob, mpiWorkerContainer, "          - {name: proxy}\n"+mpiWorkerContainer+"            resources: {requests: {nvidia.com/gpu: 1}}\n"), 1},
		"PyTorchJob, GPU on the third":   {basePyTorchJob + "          - {name: a}\n          - {name: b, resources: {limits: {nvidia.com/gpu: 1}}}\n", 2},
		"PyTorchJob, no GPU named":       {basePyTorchJob, 0},
	}
	for name, tc := range inputs {
		t.Run(name, func(t *testing.T) {
			spec, err := Parse([]byte(tc.input), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if spec.WorkerGPUContainer != tc.want {
				t.Errorf("Spec.WorkerGPUContainer = %d, want %d", spec.WorkerGPUContainer, tc.want)
			}
			if got := WorkerGPUContainer(spec.Kind, spec.Manifest); got != tc.want {
				t.Errorf("WorkerGPUContainer(Manifest) = %d, want %d", got, tc.want)
			}
			stored, err := spec.JSON()
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(stored, &m); err != nil {
				t.Fatal(err)
			}
			if got := WorkerGPUContainer(spec.Kind, m); got != tc.want {
				t.Errorf("WorkerGPUContainer(stored JSON) = %d, want %d", got, tc.want)
			}
		})
	}
	for name, m := range map[string]map[string]any{
		"nil":                nil,
		"containers a map":   mustYAMLMap(t, "spec: {mpiReplicaSpecs: {Worker: {template: {spec: {containers: {a: 1}}}}}}"),
		"container a string": mustYAMLMap(t, "spec: {mpiReplicaSpecs: {Worker: {template: {spec: {containers: [x]}}}}}"),
		"resources a list":   mustYAMLMap(t, "spec: {mpiReplicaSpecs: {Worker: {template: {spec: {containers: [{resources: [1]}]}}}}}"),
	} {
		if got := WorkerGPUContainer(KindMPIJob, m); got != 0 {
			t.Errorf("%s: WorkerGPUContainer = %d, want 0", name, got)
		}
	}
}

// TestParseMultiGPUWorkers covers workers of G GPUs (Options.MultiGPUWorkers):
// G comes from the worker container's nvidia.com/gpu, the processes per
// pod must agree with it, and anything else is refused naming its field.
func TestParseMultiGPUWorkers(t *testing.T) {
	multi := Options{MultiGPUWorkers: true}
	noSlots := func(s string) string { return edit(s, "  slotsPerWorker: 1\n", "") }
	pyGPUs := func(g, more string) string {
		return edit(basePyTorchJob, "          - name: pytorch\n", "          - name: pytorch\n            resources: {limits: {nvidia.com/gpu: "+g+"}}\n"+more)
	}
	nproc := func(s, v string) string {
		return edit(s, "  elasticPolicy:", "  nprocPerNode: "+v+"\n  elasticPolicy:")
	}
	pyGPU := "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources.limits[nvidia.com/gpu]"
	cases := map[string]struct {
		input         string
		field, reason string
		wantG         int    // accepted: JobSpec.GPUsPerWorker
		wantSlots     string // accepted MPIJob: spec.slotsPerWorker as stored
		// Accepted PyTorchJob: spec.nprocPerNode and
		// spec.elasticPolicy.nProcPerNode as stored, in JSON.
		wantProcs, wantPolicyProcs string
	}{
		"MPIJob G=4, slotsPerWorker 4":     {input: edit(workerResources("{limits: {nvidia.com/gpu: 4}}", ""), "slotsPerWorker: 1", "slotsPerWorker: 4"), wantG: 4, wantSlots: "4"},
		"MPIJob G=4, slotsPerWorker unset": {input: noSlots(workerResources("{limits: {nvidia.com/gpu: 4}}", "")), wantG: 4, wantSlots: "4"},
		"MPIJob G=1, slotsPerWorker unset": {input: noSlots(baseMPIJob), wantG: 0},
		"MPIJob G=64 in requests and limits": {input: edit(workerResources(`{limits: {nvidia.com/gpu: 64}, requests: {nvidia.com/gpu: "64"}}`, ""), "slotsPerWorker: 1", "slotsPerWorker: 64"),
			wantG: 64, wantSlots: "64"},
		"PyTorchJob G=2, nprocPerNode \"2\"":         {input: nproc(pyGPUs("2", ""), `"2"`), wantG: 2},
		"PyTorchJob G=2, elasticPolicy.nProcPerNode": {input: edit(pyGPUs("2", ""), "  elasticPolicy:", "  elasticPolicy:\n    nProcPerNode: 2"), wantG: 2},
		// The CRD types spec.nprocPerNode a string and the elastic
		// policy's an integer: the other spelling is stored as the CRD's.
		"PyTorchJob G=2, nprocPerNode 2 (a number)": {input: nproc(pyGPUs("2", ""), "2"), wantG: 2, wantProcs: `"2"`},
		"PyTorchJob G=2, elasticPolicy.nProcPerNode \"2\"": {input: edit(pyGPUs("2", ""), "  elasticPolicy:", "  elasticPolicy:\n    nProcPerNode: \"2\""),
			wantG: 2, wantPolicyProcs: "2"},

		"G=0":      {input: workerResources("{limits: {nvidia.com/gpu: 0}}", ""), field: workerGPU, reason: "0 is not accepted: a worker's GPUs are a whole number from 1 to 64"},
		"G=-1":     {input: workerResources("{limits: {nvidia.com/gpu: -1}}", ""), field: workerGPU, reason: "-1 is not accepted"},
		"G=2.5":    {input: workerResources("{limits: {nvidia.com/gpu: 2.5}}", ""), field: workerGPU, reason: "2.5 is not accepted"},
		`G="four"`: {input: workerResources(`{limits: {nvidia.com/gpu: "four"}}`, ""), field: workerGPU, reason: `"four" is not accepted`},
		"G=1000":   {input: workerResources("{limits: {nvidia.com/gpu: 1000}}", ""), field: workerGPU, reason: "1000 is not accepted: a worker's GPUs are a whole number from 1 to 64"},
		"G=65":     {input: workerResources("{limits: {nvidia.com/gpu: 65}}", ""), field: workerGPU, reason: "65 is not accepted"},
		"G=4000m":  {input: workerResources("{limits: {nvidia.com/gpu: 4000m}}", ""), field: workerGPU, reason: `"4000m" is not accepted`},
		"G=4, requests 2": {input: workerResources("{limits: {nvidia.com/gpu: 4}, requests: {nvidia.com/gpu: 2}}", ""),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.requests[nvidia.com/gpu]", reason: "2 is not accepted: it must equal " + workerGPU + " (4)"},
		"slotsPerWorker 1 with G=4": {input: workerResources("{limits: {nvidia.com/gpu: 4}}", ""), field: "spec.slotsPerWorker",
			reason: "1 is not accepted: a worker runs one process per GPU, so it must be the integer 4, its GPUs (" + workerGPU + ")"},
		"slotsPerWorker \"4\" with G=4": {input: edit(workerResources("{limits: {nvidia.com/gpu: 4}}", ""), "slotsPerWorker: 1", `slotsPerWorker: "4"`), field: "spec.slotsPerWorker", reason: `"4" is not accepted`},
		"slotsPerWorker 2 with G=1":     {input: edit(baseMPIJob, "slotsPerWorker: 1", "slotsPerWorker: 2"), field: "spec.slotsPerWorker", reason: "so it must be the integer 1"},
		"nprocPerNode 1 with G=2":       {input: nproc(pyGPUs("2", ""), `"1"`), field: "spec.nprocPerNode", reason: `"1" is not accepted: a worker pod runs one training process per GPU, so it must be 2, its GPUs (` + pyGPU + ")"},
		"nprocPerNode and elasticPolicy.nProcPerNode both": {input: edit(nproc(pyGPUs("2", ""), "2"), "  elasticPolicy:", "  elasticPolicy:\n    nProcPerNode: 2"),
			field: "spec.elasticPolicy.nProcPerNode", reason: "is not accepted beside spec.nprocPerNode"},
		"nprocPerNode auto with G=2":  {input: nproc(pyGPUs("2", ""), "auto"), field: "spec.nprocPerNode", reason: `"auto" is not accepted`},
		"nprocPerNode unset with G=2": {input: pyGPUs("2", ""), field: "spec.nprocPerNode", reason: "must be set to 2: each worker pod holds 2 GPUs"},
		"GPUs on the launcher": {input: edit(workerResources("{limits: {nvidia.com/gpu: 4}}", ""), "\n    Worker:\n", "\n          - {name: sidecar, resources: {limits: {nvidia.com/gpu: 4}}}\n    Worker:\n"),
			field: "spec.mpiReplicaSpecs.Launcher.template.spec.containers[1].resources.limits[nvidia.com/gpu]", reason: "the launcher gets no GPU"},
		"GPUs on a worker init container": {input: edit(workerResources("{limits: {nvidia.com/gpu: 4}}", ""), "          containers:\n          - name: worker\n", "          initContainers: [{name: warmup, resources: {limits: {nvidia.com/gpu: 1}}}]\n          containers:\n          - name: worker\n"),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.initContainers[0].resources.limits[nvidia.com/gpu]", reason: "an init container gets no GPU"},
		"GPUs on a sidecar": {input: workerResources("{limits: {nvidia.com/gpu: 4}}", "          - {name: sidecar, resources: {limits: {nvidia.com/gpu: 4}}}\n"),
			field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[1].resources.limits[nvidia.com/gpu]", reason: "containers[0] already asks for nvidia.com/gpu"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.field != "" {
				checkFieldError(t, []byte(tc.input), multi, tc.field, tc.reason)
				return
			}
			spec, err := Parse([]byte(tc.input), multi)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := spec.JobSpec.GPUsPerWorker; got != tc.wantG {
				t.Errorf("GPUsPerWorker = %d, want %d", got, tc.wantG)
			}
			if spec.Kind == KindPyTorchJob {
				for _, f := range []struct {
					path []string
					want string
				}{
					{[]string{"spec", "nprocPerNode"}, tc.wantProcs},
					{[]string{"spec", "elasticPolicy", "nProcPerNode"}, tc.wantPolicyProcs},
				} {
					v, _ := dig(spec.Manifest, f.path...)
					if got, _ := json.Marshal(v); f.want != "" && string(got) != f.want {
						t.Errorf("stored %s = %s, want %s", strings.Join(f.path, "."), got, f.want)
					}
				}
			}
			if spec.Kind != KindMPIJob {
				return
			}
			slots, _ := dig(spec.Manifest, "spec", "slotsPerWorker")
			if got := scalarText(slots); tc.wantSlots != "" && got != tc.wantSlots {
				t.Errorf("stored spec.slotsPerWorker = %q, want %q", got, tc.wantSlots)
			}
			// The stored manifest parses again to the same job.
			stored, err := spec.JSON()
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse(stored, multi)
			if err != nil {
				t.Fatalf("Parse(stored): %v", err)
			}
			if again.JobSpec.GPUsPerWorker != spec.JobSpec.GPUsPerWorker {
				t.Errorf("stored manifest parses to G=%d, want %d", again.JobSpec.GPUsPerWorker, spec.JobSpec.GPUsPerWorker)
			}
		})
	}
}

// TestGPUsPerWorker reads G back from a stored manifest, however a JSON
// decoder spelt the number.
func TestGPUsPerWorker(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml string
		want int
	}{
		"no GPU named":       {"spec: {mpiReplicaSpecs: {Worker: {template: {spec: {containers: [{name: w}]}}}}}", 1},
		"limits 4":           {"spec: {mpiReplicaSpecs: {Worker: {template: {spec: {containers: [{resources: {limits: {nvidia.com/gpu: 4}}}]}}}}}", 4},
		"requests \"2\"":     {`spec: {mpiReplicaSpecs: {Worker: {template: {spec: {containers: [{}, {resources: {requests: {nvidia.com/gpu: "2"}}}]}}}}}`, 2},
		"not a whole number": {"spec: {mpiReplicaSpecs: {Worker: {template: {spec: {containers: [{resources: {limits: {nvidia.com/gpu: 2.5}}}]}}}}}", 1},
	} {
		m := mustYAMLMap(t, tc.yaml)
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var decoded map[string]any // float64 numbers, as encoding/json gives
		if err := json.Unmarshal(raw, &decoded); err != nil {
			t.Fatal(err)
		}
		for _, in := range []map[string]any{m, decoded} {
			if got := GPUsPerWorker(KindMPIJob, in); got != tc.want {
				t.Errorf("%s: GPUsPerWorker = %d, want %d", name, got, tc.want)
			}
		}
	}
}

// TestMultiGPUExamples parses the examples of workers of several GPUs
// (examples/multi-gpu): each is accepted with MultiGPUWorkers, refused
// without it, and keeps its G.
func TestMultiGPUExamples(t *testing.T) {
	want := map[string]int{"mpijob-horovod-4-gpus-per-worker.yaml": 4, "pytorchjob-2-gpus-per-worker.yaml": 2}
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "multi-gpu", "*.yaml"))
	if err != nil || len(files) != len(want) {
		t.Fatalf("examples/multi-gpu: %v, %d files, want %d", err, len(files), len(want))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := Parse(data, Options{MultiGPUWorkers: true})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if g := spec.JobSpec.PerWorker(); g != want[filepath.Base(f)] {
			t.Errorf("%s: G = %d, want %d", f, g, want[filepath.Base(f)])
		}
		if _, err := Parse(data, Options{}); err == nil || !strings.Contains(err.Error(), "not accepted yet") {
			t.Errorf("%s without MultiGPUWorkers: %v, want refused", f, err)
		}
	}
}

// --max-workers bounds a job's GPUs, which its reports count as
// processes: with a limit of 8, a job of workers of 4 GPUs may have at
// most 2 workers (its max of 4 is refused), and the same job of one GPU
// each is accepted.
func TestMaxWorkersCountsGPUs(t *testing.T) {
	opts := Options{MultiGPUWorkers: true, MaxWorkers: 8}
	g4 := edit(workerResources("{limits: {nvidia.com/gpu: 4}}", ""), "slotsPerWorker: 1", "slotsPerWorker: 4")
	checkFieldError(t, []byte(g4), opts, "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].env[MAX_NUM_PROC]",
		"4 workers of 4 GPUs is above the limit of 8 GPUs per job that this server accepts (voda server --max-workers): at most 2 such workers")
	if _, err := Parse([]byte(edit(g4, `{name: MAX_NUM_PROC, value: "4"}`, `{name: MAX_NUM_PROC, value: "2"}`)), opts); err != nil {
		t.Errorf("2 workers of 4 GPUs under a limit of 8: %v", err)
	}
	if _, err := Parse([]byte(baseMPIJob), opts); err != nil {
		t.Errorf("4 workers of one GPU under a limit of 8: %v", err)
	}
}
