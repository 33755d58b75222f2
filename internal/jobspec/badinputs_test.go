package jobspec

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the bad-inputs tables in docs/job-spec.md and testdata/hostile-manifests.json")

const (
	docPath     = "../../docs/job-spec.md"
	updateHint  = "go test ./internal/jobspec -run TestBadInputsDoc -update"
	launcherEnv = "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].env"
	workerSel   = "spec.mpiReplicaSpecs.Worker.template.spec.nodeSelector[vodascheduler/accelerator]"
	workerGPU   = "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limits[nvidia.com/gpu]"
)

// badInputOptions is the cluster the table is parsed against, with
// workers of several GPUs accepted, as voda server does by default.
var badInputOptions = Options{GPUTypes: testGPUTypes, Models: testModels, MultiGPUWorkers: true}

// badInputs is one case per rule, in the order Parse checks them. It is
// both a test (TestBadInputs) and the table in docs/job-spec.md
// (TestBadInputsDoc); the doc shows what and field, and the reason Parse
// actually gives.
var badInputs = []struct {
	what   string // the doc's "input" column
	input  string
	field  string
	reason string // a substring of the reason
}{
	{"empty body", "", "body", "is empty"},
	{"only comments", "# nothing here\n", "body", "is empty"},
	{"body over 1 MiB", baseMPIJob + "# " + strings.Repeat("x", 1<<20) + "\n", "body", "at most 1048576 are accepted"},
	{"malformed YAML (bad indentation)", edit(baseMPIJob, "  name: mnist\n", "  name: mnist\n kind: x\n"), "body", "is not valid YAML or JSON"},
	{"two YAML documents", baseMPIJob + "---\n" + basePyTorchJob, "body", "more than one YAML document"},
	{"YAML alias bomb: a 100 KB value used 1,000 times", aliasBomb(100<<10, 1000), "body", "through YAML aliases (*a); at most 1048576 are accepted"},
	{"duplicate key", edit(baseMPIJob, "  name: mnist\n", "  name: mnist\n  name: other\n"), "body", `key "name" already set in map`},
	{`JSON over 1 MiB: 200,000 "\0" (6 bytes each in JSON)`, baseMPIJob + `            args: ["` + strings.Repeat(`\0`, 200_000) + "\"]\n", "body", "bytes as JSON, which is how the job is stored; at most 1048576 are accepted"},
	{"JSON array", `[{"kind": "MPIJob"}]`, "body", "must be an object (a Kubernetes manifest), not a list"},
	{"kind Deployment", edit(baseMPIJob, "kind: MPIJob", "kind: Deployment"), "kind", `"Deployment" is not accepted; accepted: MPIJob (kubeflow.org/v2beta1, kubeflow.org/v1), PyTorchJob (kubeflow.org/v1)`},
	{"no kind", dropLine(baseMPIJob, "kind: MPIJob"), "kind", "required"},
	{"MPIJob kubeflow.org/v1alpha2", edit(baseMPIJob, "kubeflow.org/v2beta1", "kubeflow.org/v1alpha2"), "apiVersion", "is not accepted for MPIJob"},
	{"PyTorchJob kubeflow.org/v2beta1", edit(basePyTorchJob, "kubeflow.org/v1", "kubeflow.org/v2beta1"), "apiVersion", "accepted: kubeflow.org/v1"},
	{"no metadata.name", edit(baseMPIJob, "  name: mnist\n", "  labels: {app: mnist}\n"), "metadata.name", "required"},
	{"metadata.generateName instead of name", edit(baseMPIJob, "name: mnist", "generateName: mnist-"), "metadata.name", "generateName is not supported"},
	{"uppercase name MNIST", edit(baseMPIJob, "name: mnist", "name: MNIST"), "metadata.name", "must be a DNS-1123 label"},
	{"name ending in '-'", edit(baseMPIJob, "name: mnist", "name: mnist-"), "metadata.name", "must be a DNS-1123 label"},
	{"41-character name", edit(baseMPIJob, "name: mnist", "name: "+strings.Repeat("a", 41)), "metadata.name", "is 41 characters; at most 40"},
	{"misspelt annotation vodascheduler/min-worker", annotate(baseMPIJob, "vodascheduler/min-worker", `"1"`), "metadata.annotations[vodascheduler/min-worker]", "unknown Voda annotation"},
	{"unquoted annotation value 2", annotate(baseMPIJob, AnnotationMinWorkers, "2"), "metadata.annotations[vodascheduler/min-workers]", `must be a string, not a number (quote it: "2")`},
	{"MPIJob without Worker", edit(baseMPIJob, "    Worker:\n", "    Other:\n"), "spec.mpiReplicaSpecs.Worker", "required"},
	{"MPIJob without Launcher", edit(baseMPIJob, "    Launcher:\n", "    Other:\n"), "spec.mpiReplicaSpecs.Launcher", "required"},
	{"launcher without containers", edit(baseMPIJob, "          containers:\n          - name: launcher\n", "          containers: []\n          sidecars:\n          - name: launcher\n"), "spec.mpiReplicaSpecs.Launcher.template.spec.containers", "at least one container"},
	{"PyTorchJob without elasticPolicy", dropLine(dropLine(dropLine(dropLine(basePyTorchJob, "elasticPolicy:"), "rdzvBackend"), "minReplicas"), "maxReplicas"), "spec.elasticPolicy", "elastic PyTorchJobs only"},
	{"PyTorchJob with a Master", edit(basePyTorchJob, "    Worker:\n", "    Master:\n      replicas: 1\n    Worker:\n"), "spec.pytorchReplicaSpecs.Master", "not supported"},
	{"slotsPerWorker: 4", edit(baseMPIJob, "slotsPerWorker: 1", "slotsPerWorker: 4"), "spec.slotsPerWorker", "4 is not accepted: a worker runs one process per GPU, so it must be the integer 1"},
	{"worker nvidia.com/gpu: 4 with slotsPerWorker: 1", workerResources("{limits: {nvidia.com/gpu: 4}}", ""), "spec.slotsPerWorker", "1 is not accepted: a worker runs one process per GPU, so it must be the integer 4"},
	{"worker nvidia.com/gpu: 0", workerResources("{limits: {nvidia.com/gpu: 0}}", ""), workerGPU, "0 is not accepted"},
	{"worker amd.com/gpu: 1", workerResources("{limits: {amd.com/gpu: 1}}", ""), "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limits[amd.com/gpu]", "Voda schedules whole GPUs as nvidia.com/gpu"},
	{"sidecar with nvidia.com/gpu: 8", workerResources("{limits: {nvidia.com/gpu: 1}}", "          - name: sidecar\n            resources: {limits: {nvidia.com/gpu: 8}}\n"), "spec.mpiReplicaSpecs.Worker.template.spec.containers[1].resources.limits[nvidia.com/gpu]", "containers[0] already asks for nvidia.com/gpu"},
	{"two worker containers, no GPU named", edit(baseMPIJob, mpiWorkerContainer, mpiWorkerContainer+"          - name: sidecar\n"), "spec.mpiReplicaSpecs.Worker.template.spec.containers", "name the container that trains: give it resources.limits nvidia.com/gpu: G"},
	{"worker init container with nvidia.com/gpu: 8", edit(baseMPIJob, "          containers:\n          - name: worker\n", "          initContainers:\n          - {name: warmup, resources: {limits: {nvidia.com/gpu: 8}}}\n          containers:\n          - name: worker\n"), "spec.mpiReplicaSpecs.Worker.template.spec.initContainers[0].resources.limits[nvidia.com/gpu]", "an init container gets no GPU"},
	{"launcher with nvidia.com/gpu: 1", edit(baseMPIJob, mpiLauncherImage, "            image: horovod/horovod:0.28.1\n            resources: {limits: {nvidia.com/gpu: 1}}\n            env:\n"), "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].resources.limits[nvidia.com/gpu]", "the launcher gets no GPU"},
	{"MIN_NUM_PROC from valueFrom", edit(baseMPIJob, `{name: MIN_NUM_PROC, value: "1"}`, `{name: MIN_NUM_PROC, valueFrom: {configMapKeyRef: {name: voda, key: min}}}`), launcherEnv + "[MIN_NUM_PROC]", "must be a literal value, not valueFrom"},
	{"MIN_NUM_PROC set twice", edit(baseMPIJob, `{name: NUM_PROC, value: "2"}`, `{name: NUM_PROC, value: "2"}`+"\n            - {name: MIN_NUM_PROC, value: \"2\"}"), launcherEnv + "[MIN_NUM_PROC]", "is set twice (env[0] and env[3])"},
	{"unquoted env value 1", env(baseMPIJob, "MIN_NUM_PROC", "1"), launcherEnv + "[MIN_NUM_PROC]", "must be a string, not a number"},
	{`MIN_NUM_PROC "one"`, env(baseMPIJob, "MIN_NUM_PROC", `"one"`), launcherEnv + "[MIN_NUM_PROC]", `"one" is not a base-10 integer`},
	{`MIN_NUM_PROC "2 "`, env(baseMPIJob, "MIN_NUM_PROC", `"2 "`), launcherEnv + "[MIN_NUM_PROC]", `"2 " is not a base-10 integer`},
	{`MIN_NUM_PROC "4294967296"`, env(baseMPIJob, "MIN_NUM_PROC", `"4294967296"`), launcherEnv + "[MIN_NUM_PROC]", "out of range for a 32-bit integer"},
	{"no MIN_NUM_PROC", dropLine(baseMPIJob, "MIN_NUM_PROC"), launcherEnv + "[MIN_NUM_PROC]", "required; set env MIN_NUM_PROC (or MIN_NP)"},
	{`MIN_NUM_PROC "0"`, env(baseMPIJob, "MIN_NUM_PROC", `"0"`), launcherEnv + "[MIN_NUM_PROC]", "0 must be at least 1"},
	{`MIN_NUM_PROC "2000"`, env(baseMPIJob, "MIN_NUM_PROC", `"2000"`), launcherEnv + "[MIN_NUM_PROC]", "2000 is above the limit of 1024 workers (one GPU each) per job that this server accepts"},
	{"MIN_NUM_PROC and MIN_NP differ", edit(baseMPIJob, `{name: NUM_PROC, value: "2"}`, `{name: NUM_PROC, value: "2"}`+"\n            - {name: MIN_NP, value: \"2\"}"), launcherEnv + "[MIN_NUM_PROC]", "conflicts with " + launcherEnv + `[MIN_NP] = "2"`},
	{"annotation min-workers 2, MIN_NUM_PROC 1", annotate(baseMPIJob, AnnotationMinWorkers, `"2"`), "metadata.annotations[vodascheduler/min-workers]", `"2" conflicts with ` + launcherEnv + `[MIN_NUM_PROC] = "1"`},
	{"no MAX_NUM_PROC", dropLine(baseMPIJob, "MAX_NUM_PROC"), launcherEnv + "[MAX_NUM_PROC]", "required"},
	{`MAX_NUM_PROC "0"`, env(baseMPIJob, "MAX_NUM_PROC", `"0"`), launcherEnv + "[MAX_NUM_PROC]", "0 must be at least 1"},
	{`MAX_NUM_PROC "2147483647"`, env(baseMPIJob, "MAX_NUM_PROC", `"2147483647"`), launcherEnv + "[MAX_NUM_PROC]", "2147483647 is above the limit of 1024 workers"},
	{`annotation max-workers "5000"`, annotate(dropLine(baseMPIJob, "MAX_NUM_PROC"), AnnotationMaxWorkers, `"5000"`), "metadata.annotations[vodascheduler/max-workers]", "5000 is above the limit of 1024 workers"},
	{"MIN_NUM_PROC 4 > MAX_NUM_PROC 2", env(env(baseMPIJob, "MIN_NUM_PROC", `"4"`), "MAX_NUM_PROC", `"2"`), launcherEnv + "[MIN_NUM_PROC]", "4 is above max workers 2"},
	{"NP 9 with MIN_NP 1, MAX_NP 8", env(baseMPIJobV1Short, "NP", `"9"`), launcherEnv + "[NP]", "9 is outside [min, max] = [1, 8]"},
	{"PyTorchJob minReplicas \"1\" (a string)", edit(basePyTorchJob, "minReplicas: 1", `minReplicas: "1"`), "spec.elasticPolicy.minReplicas", "must be an integer, not a string"},
	{"PyTorchJob minReplicas 1.5", edit(basePyTorchJob, "minReplicas: 1", "minReplicas: 1.5"), "spec.elasticPolicy.minReplicas", "1.5 is not an integer"},
	{"PyTorchJob maxReplicas 100000", edit(basePyTorchJob, "maxReplicas: 4", "maxReplicas: 100000"), "spec.elasticPolicy.maxReplicas", "100000 is above the limit of 1024 workers"},
	{"PyTorchJob Worker replicas 5, maxReplicas 4", edit(basePyTorchJob, "replicas: 2", "replicas: 5"), "spec.pytorchReplicaSpecs.Worker.replicas", "5 is outside [min, max] = [1, 4]"},
	{`EPOCHS "ten"`, env(baseMPIJob, "EPOCHS", `"ten"`), launcherEnv + "[EPOCHS]", `"ten" is not a base-10 integer`},
	{`EPOCHS "0"`, env(baseMPIJob, "EPOCHS", `"0"`), launcherEnv + "[EPOCHS]", "0 must be at least 1; leave it out when unknown"},
	{`JOB_PRIORITY "-1"`, env(baseMPIJob, "JOB_PRIORITY", `"-1"`), launcherEnv + "[JOB_PRIORITY]", "-1 is outside [0, 100]"},
	{`JOB_PRIORITY "101"`, env(baseMPIJob, "JOB_PRIORITY", `"101"`), launcherEnv + "[JOB_PRIORITY]", "101 is outside [0, 100]"},
	{"no GPU type", dropLine(baseMPIJob, "vodascheduler/accelerator"), workerSel, "required; set the Worker's nodeSelector"},
	{"GPU type nvidia-a100 (not in the cluster)", edit(baseMPIJob, "accelerator: nvidia-tesla-v100", "accelerator: nvidia-a100"), workerSel, `unknown GPU type "nvidia-a100"; this cluster has nvidia-gtx-1080ti, nvidia-tesla-v100`},
	{`GPU type "Tesla V100"`, edit(baseMPIJob, "accelerator: nvidia-tesla-v100", "accelerator: Tesla V100"), workerSel, "must be a Kubernetes label value"},
	{"annotation gpu-type differs from nodeSelector", annotate(baseMPIJob, AnnotationGPUType, "nvidia-gtx-1080ti"), "metadata.annotations[vodascheduler/gpu-type]", "conflicts with " + workerSel},
	{"sim-model resnet (not known)", annotate(baseMPIJob, AnnotationSimModel, "resnet"), "metadata.annotations[vodascheduler/sim-model]", `unknown performance model "resnet"; known: amdahl, linear`},
}

func TestBadInputs(t *testing.T) {
	if len(badInputs) < 20 {
		t.Fatalf("only %d bad inputs", len(badInputs))
	}
	seen := map[string]bool{}
	for _, tc := range badInputs {
		if seen[tc.what] {
			t.Fatalf("duplicate case %q", tc.what)
		}
		seen[tc.what] = true
		t.Run(tc.what, func(t *testing.T) {
			checkFieldError(t, []byte(tc.input), badInputOptions, tc.field, tc.reason)
		})
	}
}

// checkFieldError asserts that Parse rejects input at field with a reason
// containing reason.
func checkFieldError(t *testing.T, input []byte, opts Options, field, reason string) {
	t.Helper()
	spec, err := Parse(input, opts)
	if err == nil {
		t.Fatalf("Parse accepted the input: %+v", spec.JobSpec)
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is %T, not *FieldError", err, err)
	}
	if fe.Field != field {
		t.Errorf("field = %q, want %q (error: %v)", fe.Field, field, err)
	}
	if !strings.Contains(fe.Reason, reason) {
		t.Errorf("reason = %q, want it to contain %q", fe.Reason, reason)
	}
	if got, want := err.Error(), fe.Field+": "+fe.Reason; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// renderBadInputs is the doc's table.
func renderBadInputs(t *testing.T) string {
	rows := make([]docRow, len(badInputs))
	for i, tc := range badInputs {
		rows[i] = docRow{cells: []string{tc.what}, input: tc.input, opts: badInputOptions}
	}
	return renderTable(t, []string{"input"}, rows)
}

// docRow is one rejected input in a doc table: its first cells, then the
// field and reason Parse gives.
type docRow struct {
	cells []string
	input string
	opts  Options
}

// renderTable renders rows under the headers of their first cells, then
// field and reason.
func renderTable(t *testing.T, headers []string, rows []docRow) string {
	t.Helper()
	var b strings.Builder
	headers = append(headers, "field", "reason")
	b.WriteString("| " + strings.Join(headers, " | ") + " |\n|")
	for _, h := range headers {
		b.WriteString(strings.Repeat("-", len(h)+2) + "|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		fe := fieldErrorOf(t, r.input, r.opts)
		for _, c := range r.cells {
			b.WriteString("| " + mdCell(c) + " ")
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", fe.Field, mdCell(fe.Reason))
	}
	return b.String()
}

// fieldErrorOf is Parse's rejection of input.
func fieldErrorOf(t *testing.T, input string, opts Options) *FieldError {
	t.Helper()
	_, err := Parse([]byte(input), opts)
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is not a *FieldError (input %q)", err, input)
	}
	return fe
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "\n", " ").Replace(s)
}

func TestBadInputsDoc(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	changed := false
	for _, table := range []struct {
		name   string
		render func(*testing.T) string
	}{
		{"bad-inputs", renderBadInputs},
		{"hostile-inputs", renderHostileInputs},
	} {
		begin, end := "<!-- "+table.name+":begin -->", "<!-- "+table.name+":end -->"
		i, j := strings.Index(text, begin), strings.Index(text, end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks the %s ... %s markers", docPath, begin, end)
		}
		want := "\n" + table.render(t)
		if text[i+len(begin):j] == want {
			continue
		}
		if !*update {
			t.Fatalf("%s's %s table is out of date; run\n\t%s", docPath, table.name, updateHint)
		}
		text = text[:i+len(begin)] + want + text[j:]
		changed = true
	}
	if !changed {
		return
	}
	if err := os.WriteFile(docPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated %s", docPath)
}
