package jobspec

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A manifest's fields that Kubernetes does not know for its kind are
// warned of as kube-apiserver words them, whether Parse accepts the
// manifest or not; known fields, the insides of values that decode
// themselves and the status are not.
func TestUnknownFields(t *testing.T) {
	t.Parallel()
	const workerSpec = "          nodeSelector:\n            vodascheduler/accelerator: nvidia-tesla-v100\n"
	cases := []struct {
		name  string
		input string
		want  []string
		// rejected: Parse rejects the manifest, with the warnings on the
		// error.
		rejected bool
	}{
		{name: "MPIJob v2beta1, clean", input: baseMPIJob},
		{name: "MPIJob v1, clean", input: baseMPIJobV1Short},
		{name: "PyTorchJob, clean", input: basePyTorchJob},
		{name: "annotations only, clean", input: annotationsOnly},
		{
			name:  "misspelt spec field",
			input: edit(baseMPIJob, "slotsPerWorker: 1", "slotsPerWorkr: 1"),
			want:  []string{`unknown field "spec.slotsPerWorkr"`},
		},
		{
			name:  "metadata, top level, replica spec",
			input: edit(edit(edit(baseMPIJob, "  name: mnist\n", "  name: mnist\n  lables: {a: b}\n"), "kind: MPIJob\n", "kind: MPIJob\nstatuss: {}\n"), "      replicas: 2\n", "      replica: 2\n"),
			want:  []string{`unknown field "metadata.lables"`, `unknown field "spec.mpiReplicaSpecs.Worker.replica"`, `unknown field "statuss"`},
		},
		{
			name:  "pod template: Kubernetes' types decide, case-sensitively",
			input: edit(baseMPIJob, workerSpec, workerSpec+"          nodeselector: {a: b}\n          terminationGracePeriod: 5\n"),
			want: []string{
				`unknown field "spec.mpiReplicaSpecs.Worker.template.spec.nodeselector"`,
				`unknown field "spec.mpiReplicaSpecs.Worker.template.spec.terminationGracePeriod"`,
			},
		},
		{
			name:  "list items: containers, env entries",
			input: edit(edit(baseMPIJob, `{name: EPOCHS, value: "10"}`, `{name: EPOCHS, value: "10"}`+"\n            - {name: FOO, valu: x}"), mpiWorkerContainer, mpiWorkerContainer+"            imagePullPolicyy: Always\n"),
			want: []string{
				`unknown field "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].env[4].valu"`,
				`unknown field "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].imagePullPolicyy"`,
			},
		},
		{
			name: "values that decode themselves, the status, the kinds' own fields",
			input: edit(edit(edit(baseMPIJob, "slotsPerWorker: 1\n",
				"slotsPerWorker: 1\n  runLauncherAsWorker: false\n  sshAuthMountPath: /root/.ssh\n  launcherCreationPolicy: AtStartup\n  mpiImplementation: OpenMPI\n"+
					"  runPolicy: {cleanPodPolicy: Running, backoffLimit: 3, suspend: false, managedBy: kubeflow.org/mpi-operator, schedulingPolicy: {minAvailable: 1, minResources: {cpu: 1}}}\n"),
				"kind: MPIJob\n", "kind: MPIJob\nstatus: {anything: [1, {x: y}]}\n"),
				mpiWorkerContainer, mpiWorkerContainer+
					"            resources: {limits: {nvidia.com/gpu: 1, memory: 1Gi}}\n"+
					"            livenessProbe: {httpGet: {port: http, path: /}}\n"),
		},
		{
			name:  "MPIJob v1 has mainContainer, not runLauncherAsWorker",
			input: edit(baseMPIJobV1Short, "slotsPerWorker: 1\n", "slotsPerWorker: 1\n  mainContainer: launcher\n  runLauncherAsWorker: false\n"),
			want:  []string{`unknown field "spec.runLauncherAsWorker"`},
		},
		{
			name:  "PyTorchJob elastic policy",
			input: edit(basePyTorchJob, "    rdzvBackend: c10d\n", "    rdzvBackend: c10d\n    rdzvConf: [{key: timeout, value: \"60\"}]\n    maxRestart: 3\n    metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization}}}]\n"),
			want:  []string{`unknown field "spec.elasticPolicy.maxRestart"`},
		},
		{
			name:     "a misspelt field is told with the error it causes",
			input:    edit(baseMPIJob, "  mpiReplicaSpecs:\n", "  mpiReplicaSpec:\n"),
			want:     []string{`unknown field "spec.mpiReplicaSpec"`},
			rejected: true,
		},
		{
			name:     "an unknown kind has no known fields to compare with",
			input:    edit(baseMPIJob, "kind: MPIJob", "kind: TFJob\nfoo: 1"),
			rejected: true,
		},
		{
			name:  "JSON",
			input: `{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "t", "annotations": {"vodascheduler/min-workers": "1", "vodascheduler/max-workers": "2", "vodascheduler/gpu-type": "v100"}}, "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [{"name": "w", "Image": "x"}]}}}}, "elasticPolicy": {}}}`,
			want:  []string{`unknown field "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].Image"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := Parse([]byte(tc.input), Options{})
			var got []string
			switch fe, _ := err.(*FieldError); {
			case tc.rejected && fe == nil:
				t.Fatalf("accepted, want rejected")
			case tc.rejected:
				got = fe.Warnings
			case err != nil:
				t.Fatalf("Parse: %v", err)
			default:
				got = spec.Warnings
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("warnings (-want,+got):\n%s", diff)
			}
		})
	}
}

// The example manifests use no field Kubernetes does not know.
func TestExamplesHaveNoUnknownFields(t *testing.T) {
	t.Parallel()
	for _, path := range exampleFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := Parse(data, Options{})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(spec.Warnings) > 0 {
			t.Errorf("%s: %q", path, spec.Warnings)
		}
	}
}

// However many unknown fields a manifest has, and however long their
// keys, the warnings stay few and short: 20 fields and a count of the
// rest, each path cut at 160 runes.
func TestUnknownFieldsBounded(t *testing.T) {
	t.Parallel()
	many := make([]string, 0, 5000)
	for i := range 5000 {
		many = append(many, fmt.Sprintf("x%04d: 1", i))
	}
	input := edit(baseMPIJob, "  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  "+strings.Join(many, "\n  ")+"\n")
	spec, err := Parse([]byte(input), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{}
	for i := range 20 {
		want = append(want, fmt.Sprintf(`unknown field "spec.x%04d"`, i))
	}
	want = append(want, "4980 more unknown fields not listed")
	if diff := cmp.Diff(want, spec.Warnings); diff != "" {
		t.Errorf("warnings (-want,+got):\n%s", diff)
	}

	// A YAML key of over 1024 characters must be explicit ("? key").
	long := strings.Repeat("k", 100_000)
	input = edit(baseMPIJob, "    Worker:\n", "    ? "+long+"\n    : template: {spec: {containers: [{name: c, imagee: x}]}}\n    Worker:\n")
	spec, err = Parse([]byte(input), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Warnings) != 1 {
		t.Fatalf("warnings %.300q, want one", spec.Warnings)
	}
	path := "spec.mpiReplicaSpecs." + long
	if want := "unknown field " + quoteCut(path, maxWarningPath); spec.Warnings[0] != want || len(want) > 200 {
		t.Errorf("warning %.300q, want the path cut: %q", spec.Warnings[0], want)
	}
}

// The work is linear in the manifest: a path is written out for the 20
// fields reported only. sigs.k8s.io/json's strict decoding writes out
// every unknown field's path, which for this 1 MiB manifest (a 500 KB map
// key above 80,000 unknown fields) allocated tens of GB. Not parallel, so
// that the allocation count is this test's alone.
func TestUnknownFieldsCostIsLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"spec": {"mpiReplicaSpecs": {"` + strings.Repeat("k", 500_000) + `": {"template": {"spec": {`)
	for i := range 80_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":0`, i)
	}
	b.WriteString(`}}}}}}`)
	var root map[string]any
	if err := json.Unmarshal([]byte(b.String()), &root); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	warnings := unknownFields(KindMPIJob, APIVersionV2Beta1, root)
	runtime.ReadMemStats(&after)
	if len(warnings) != maxUnknownFields+1 || warnings[maxUnknownFields] != fmt.Sprintf("%d more unknown fields not listed", 80_000-maxUnknownFields) {
		t.Fatalf("%d warnings, the last %q", len(warnings), warnings[len(warnings)-1])
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("unknownFields allocated %d MB for a %d KB manifest, want at most 64 MB", alloc>>20, b.Len()>>10)
	}
}
