package jobspec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vodascheduler/voda/internal/model"
)

var ignoreManifest = cmpopts.IgnoreFields(Spec{}, "Manifest")

func TestParseAccepts(t *testing.T) {
	v100 := "nvidia-tesla-v100"
	mnist := model.JobSpec{Name: "mnist", GPUType: v100, MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, Priority: 3, Epochs: 10}
	mpi := func(js model.JobSpec) *Spec {
		return &Spec{Kind: KindMPIJob, APIVersion: APIVersionV2Beta1, Name: js.Name, Namespace: "default", JobSpec: js}
	}
	with := func(js model.JobSpec, f func(*model.JobSpec)) model.JobSpec {
		f(&js)
		return js
	}
	resnet := model.JobSpec{Name: "resnet", GPUType: v100, MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, Epochs: 8}
	torch := func(js model.JobSpec) *Spec {
		return &Spec{Kind: KindPyTorchJob, APIVersion: APIVersionV1, Name: js.Name, Namespace: "default", JobSpec: js}
	}
	mnistJSON, err := json.Marshal(mustYAMLMap(t, baseMPIJob))
	if err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		input string
		opts  Options
		want  *Spec
	}{
		"MPIJob v2beta1, long env names": {input: baseMPIJob, want: mpi(mnist)},
		"MPIJob v1, short env names": {
			input: baseMPIJobV1Short,
			want: func() *Spec {
				s := mpi(with(mnist, func(js *model.JobSpec) { js.MaxWorkers = 8 }))
				s.APIVersion = APIVersionV1
				return s
			}(),
		},
		"JSON body":                        {input: string(mnistJSON), want: mpi(mnist)},
		"GPU type known to the cluster":    {input: baseMPIJob, opts: Options{GPUTypes: testGPUTypes}, want: mpi(mnist)},
		"leading and trailing ---":         {input: "# job\n---\n" + baseMPIJob + "---\n", want: mpi(mnist)},
		"trailing document end marker":     {input: baseMPIJob + "...\n", want: mpi(mnist)},
		"MPIJob Worker replicas ignored":   {input: edit(baseMPIJob, "      replicas: 2\n", "      replicas: 100\n"), want: mpi(mnist)},
		"NUM_PROC absent: requested = min": {input: dropLine(baseMPIJob, "{name: NUM_PROC,"), want: mpi(with(mnist, func(js *model.JobSpec) { js.RequestedWorkers = 1 }))},
		"EPOCHS absent: 0, unknown":        {input: dropLine(baseMPIJob, "EPOCHS"), want: mpi(with(mnist, func(js *model.JobSpec) { js.Epochs = 0 }))},
		"JOB_PRIORITY absent: 0":           {input: dropLine(baseMPIJob, "JOB_PRIORITY"), want: mpi(with(mnist, func(js *model.JobSpec) { js.Priority = 0 }))},
		"priority at MaxPriority":          {input: env(baseMPIJob, "JOB_PRIORITY", `"7"`), opts: Options{MaxPriority: 7}, want: mpi(with(mnist, func(js *model.JobSpec) { js.Priority = 7 }))},
		"sign and leading zeros":           {input: env(env(baseMPIJob, "MIN_NUM_PROC", `"+01"`), "MAX_NUM_PROC", `"004"`), want: mpi(mnist)},
		"long and short names agree":       {input: edit(baseMPIJob, `{name: NUM_PROC, value: "2"}`, `{name: NUM_PROC, value: "2"}`+"\n            - {name: MIN_NP, value: \"01\"}"), want: mpi(mnist)},
		"annotation agrees with env": {
			input: annotate(baseMPIJob, AnnotationMinWorkers, `"1"`, AnnotationGPUType, v100, AnnotationPriority, `"03"`),
			want:  mpi(mnist),
		},
		"other env entries, JOB_NAME from valueFrom": {
			input: edit(baseMPIJob, `{name: NUM_PROC, value: "2"}`, `{name: NUM_PROC, value: "2"}`+"\n            - {name: JOB_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n            - {name: OTHER, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n            - {name: EMPTY}"),
			want:  mpi(mnist),
		},
		"other annotations and labels": {
			input: annotate(edit(baseMPIJob, "  name: mnist\n", "  name: mnist\n  labels: {team: a}\n"), "example.com/owner", "alice"),
			want:  mpi(mnist),
		},
		"annotations only, with namespace and model": {
			input: annotationsOnly,
			opts:  Options{Models: testModels, GPUTypes: testGPUTypes, RequireEpochs: true},
			want: &Spec{Kind: KindMPIJob, APIVersion: APIVersionV2Beta1, Name: "bert", Namespace: "team-a", Model: "amdahl",
				JobSpec: model.JobSpec{Name: "bert", GPUType: v100, MinWorkers: 2, MaxWorkers: 8, RequestedWorkers: 4, Priority: 10, Epochs: 6}},
		},
		"application and progress log": {
			input: annotate(baseMPIJob, AnnotationApplication, "bert-large", AnnotationProgressLog, `'Epoch (?P<epoch>[0-9.]+)/(?P<total>[0-9]+)'`),
			want: func() *Spec {
				s := mpi(mnist)
				s.Application, s.ProgressLog = "bert-large", "Epoch (?P<epoch>[0-9.]+)/(?P<total>[0-9]+)"
				return s
			}(),
		},
		"name of MaxNameLength": {
			input: edit(baseMPIJob, "name: mnist", "name: "+strings.Repeat("a", 40)),
			want:  mpi(with(mnist, func(js *model.JobSpec) { js.Name = strings.Repeat("a", 40) })),
		},
		"name of 63 when allowed": {
			input: edit(baseMPIJob, "name: mnist", "name: "+strings.Repeat("a", 63)),
			opts:  Options{MaxNameLength: 100},
			want:  mpi(with(mnist, func(js *model.JobSpec) { js.Name = strings.Repeat("a", 63) })),
		},
		"PyTorchJob": {input: basePyTorchJob, want: torch(resnet)},
		"PyTorchJob without replicas: requested = min": {
			input: dropLine(basePyTorchJob, "replicas: 2"),
			want:  torch(with(resnet, func(js *model.JobSpec) { js.RequestedWorkers = 1 })),
		},
		"PyTorchJob with JOB_PRIORITY": {
			input: edit(basePyTorchJob, `{name: EPOCHS, value: "8"}`, `{name: EPOCHS, value: "8"}`+"\n            - {name: JOB_PRIORITY, value: \"5\"}"),
			want:  torch(with(resnet, func(js *model.JobSpec) { js.Priority = 5 })),
		},
		"PyTorchJob ignores MPI env names": {
			input: edit(basePyTorchJob, `{name: EPOCHS, value: "8"}`, `{name: EPOCHS, value: "8"}`+"\n            - {name: MIN_NUM_PROC, value: \"x\"}"),
			want:  torch(resnet),
		},
		"PyTorchJob with annotations only": {
			input: annotate(dropLine(dropLine(dropLine(dropLine(basePyTorchJob, "minReplicas"), "maxReplicas"), "replicas: 2"), "vodascheduler/accelerator"),
				AnnotationMinWorkers, `"2"`, AnnotationMaxWorkers, `"3"`, AnnotationWorkers, `"3"`, AnnotationGPUType, "nvidia-gtx-1080ti"),
			want: torch(with(resnet, func(js *model.JobSpec) {
				js.MinWorkers, js.MaxWorkers, js.RequestedWorkers, js.GPUType = 2, 3, 3, "nvidia-gtx-1080ti"
			})),
		},
		"worker nvidia.com/gpu 1 in limits": {input: workerResources("{limits: {nvidia.com/gpu: 1, cpu: 4}}", ""), want: mpi(mnist)},
		"worker nvidia.com/gpu \"1\" in limits and requests": {
			input: workerResources(`{limits: {nvidia.com/gpu: "1", memory: 8Gi}, requests: {nvidia.com/gpu: "1"}}`, ""), want: mpi(mnist),
		},
		"worker nvidia.com/gpu 1 in requests only": {input: workerResources("{requests: {nvidia.com/gpu: 1}}", ""), want: mpi(mnist)},
		"GPU on the second worker container": {
			input: edit(baseMPIJob, mpiWorkerContainer, "          - {name: proxy, image: envoy, resources: {limits: {cpu: 1, example.com/fpga: 1}}}\n"+mpiWorkerContainer+"            resources: {limits: {nvidia.com/gpu: 1}}\n"),
			want:  func() *Spec { s := mpi(mnist); s.WorkerGPUContainer = 1; return s }(),
		},
		"init containers and launcher without GPUs": {
			input: edit(edit(baseMPIJob, "          containers:\n          - name: worker\n", "          initContainers: [{name: fetch, resources: {limits: {cpu: 1}}}]\n          containers:\n          - name: worker\n"),
				mpiLauncherImage, "            image: horovod/horovod:0.28.1\n            resources: {limits: {cpu: 1, memory: 1Gi}}\n            env:\n"),
			want: mpi(mnist),
		},
		"slotsPerWorker absent":     {input: dropLine(baseMPIJob, "slotsPerWorker"), want: mpi(mnist)},
		"max workers at MaxWorkers": {input: baseMPIJob, opts: Options{MaxWorkers: 4}, want: mpi(mnist)},
		"max workers at the default limit": {
			input: env(baseMPIJob, "MAX_NUM_PROC", `"1024"`), want: mpi(with(mnist, func(js *model.JobSpec) { js.MaxWorkers = 1024 })),
		},
		"PyTorchJob GPU on the second container": {
			input: edit(basePyTorchJob, "          - name: pytorch\n", "          - name: sidecar\n          - name: pytorch\n            resources: {limits: {nvidia.com/gpu: 1}}\n"),
			// EPOCHS is read from the first container, which has none.
			want: func() *Spec {
				s := torch(with(resnet, func(js *model.JobSpec) { js.Epochs = 0 }))
				s.WorkerGPUContainer = 1
				return s
			}(),
		},
		"PyTorchJob min = max": {
			input: edit(edit(basePyTorchJob, "maxReplicas: 4", "maxReplicas: 1"), "replicas: 2", "replicas: 1"),
			want:  torch(with(resnet, func(js *model.JobSpec) { js.MaxWorkers, js.RequestedWorkers = 1, 1 })),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Parse([]byte(tc.input), tc.opts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, ignoreManifest); diff != "" {
				t.Errorf("Parse (-want,+got):\n%s", diff)
			}
			if got.Manifest == nil {
				t.Error("no manifest")
			}
		})
	}
}

// TestParseRejectsMore covers rules and shapes beyond the documented
// table in badinputs_test.go.
func TestParseRejectsMore(t *testing.T) {
	lenv := launcherEnv
	cases := map[string]struct {
		input  string
		opts   Options
		field  string
		reason string
	}{
		"body over MaxBytes":            {input: baseMPIJob, opts: Options{MaxBytes: 100}, field: "body", reason: "at most 100 are accepted"},
		"whitespace body":               {input: " \n\t\n", field: "body", reason: "is empty"},
		"empty documents only":          {input: "---\n---\n", field: "body", reason: "is empty"},
		"null":                          {input: "null", field: "body", reason: "is empty"},
		"scalar root":                   {input: "MPIJob", field: "body", reason: "not a string"},
		"two JSON objects":              {input: `{"kind": "MPIJob"}` + "\n" + `{"kind": "MPIJob"}`, field: "body", reason: "is not valid YAML or JSON"},
		"empty first document":          {input: "---\n---\n" + baseMPIJob, field: "body", reason: "document 2 is not empty"},
		"infinite number":               {input: edit(baseMPIJob, "slotsPerWorker: 1", "slotsPerWorker: .inf"), field: "body", reason: "is not valid YAML or JSON"},
		"kind not a string":             {input: edit(baseMPIJob, "kind: MPIJob", "kind: [MPIJob]"), field: "kind", reason: "must be a string, not a list; accepted:"},
		"no apiVersion":                 {input: dropLine(baseMPIJob, "apiVersion"), field: "apiVersion", reason: "required; accepted for MPIJob: kubeflow.org/v2beta1, kubeflow.org/v1"},
		"metadata a list":               {input: edit(baseMPIJob, "metadata:\n  name: mnist\n", "metadata: [mnist]\n"), field: "metadata", reason: "must be an object, not a list"},
		"no metadata":                   {input: edit(baseMPIJob, "metadata:\n  name: mnist\n", ""), field: "metadata", reason: "required"},
		"name a number":                 {input: edit(baseMPIJob, "name: mnist", "name: 42"), field: "metadata.name", reason: `must be a string, not a number (quote it: "42")`},
		"empty name":                    {input: edit(baseMPIJob, "name: mnist", `name: ""`), field: "metadata.name", reason: "must not be empty"},
		"name with a dot":               {input: edit(baseMPIJob, "name: mnist", "name: mnist.v2"), field: "metadata.name", reason: "DNS-1123 label"},
		"name over MaxNameLength":       {input: baseMPIJob, opts: Options{MaxNameLength: 4}, field: "metadata.name", reason: "is 5 characters; at most 4"},
		"name over 63 whatever opts":    {input: edit(baseMPIJob, "name: mnist", "name: "+strings.Repeat("a", 64)), opts: Options{MaxNameLength: 100}, field: "metadata.name", reason: "at most 63"},
		"bad namespace":                 {input: edit(baseMPIJob, "  name: mnist\n", "  name: mnist\n  namespace: Team_A\n"), field: "metadata.namespace", reason: "DNS-1123 label"},
		"annotations a list":            {input: edit(baseMPIJob, "  name: mnist\n", "  name: mnist\n  annotations: [a]\n"), field: "metadata.annotations", reason: "must be an object"},
		"other annotation not string":   {input: annotate(baseMPIJob, "example.com/n", "1"), field: "metadata.annotations[example.com/n]", reason: "must be a string"},
		"no spec":                       {input: baseMPIJob[:strings.Index(baseMPIJob, "spec:\n")], field: "spec", reason: "required"},
		"no mpiReplicaSpecs":            {input: edit(baseMPIJob, "mpiReplicaSpecs:", "replicaSpecs:"), field: "spec.mpiReplicaSpecs", reason: "required; an MPIJob needs a Launcher and a Worker"},
		"Worker not an object":          {input: baseMPIJob[:strings.Index(baseMPIJob, "    Worker:")] + "    Worker: 2\n", field: "spec.mpiReplicaSpecs.Worker", reason: "must be an object, not a number"},
		"Worker without template":       {input: edit(baseMPIJob, "      replicas: 2\n      template:\n", "      replicas: 2\n      tmpl:\n"), field: "spec.mpiReplicaSpecs.Worker.template", reason: "required"},
		"launcher template no spec":     {input: edit(baseMPIJob, "      replicas: 1\n      template:\n        spec:\n", "      replicas: 1\n      template:\n        podspec:\n"), field: "spec.mpiReplicaSpecs.Launcher.template.spec", reason: "required"},
		"worker containers missing":     {input: edit(baseMPIJob, "          containers:\n          - name: worker\n", "          initContainers:\n          - name: worker\n"), field: "spec.mpiReplicaSpecs.Worker.template.spec.containers", reason: "at least one container"},
		"containers an object":          {input: edit(baseMPIJob, "          containers:\n          - name: worker\n            image: horovod/horovod:0.28.1\n", "          containers: {name: worker}\n"), field: "spec.mpiReplicaSpecs.Worker.template.spec.containers", reason: "must be a list, not an object"},
		"first container a string":      {input: edit(baseMPIJob, "          - name: worker\n            image: horovod/horovod:0.28.1\n", "          - worker\n"), field: "spec.mpiReplicaSpecs.Worker.template.spec.containers[0]", reason: "must be an object, not a string"},
		"env an object":                 {input: edit(baseMPIJob, "            env:\n", "            env: {x: 1}\n            envList:\n"), field: lenv, reason: "must be a list"},
		"env entry a string":            {input: edit(baseMPIJob, `- {name: JOB_PRIORITY, value: "3"}`, `- JOB_PRIORITY=3`), field: lenv + "[4]", reason: "must be an object with name and value, not a string"},
		"env entry without name":        {input: edit(baseMPIJob, `- {name: JOB_PRIORITY, value: "3"}`, `- {value: "3"}`), field: lenv + "[4].name", reason: "required"},
		"env entry name a number":       {input: edit(baseMPIJob, `- {name: JOB_PRIORITY, value: "3"}`, `- {name: 3}`), field: lenv + "[4].name", reason: "must be a string"},
		"env value absent":              {input: env(baseMPIJob, "MIN_NUM_PROC", "null"), field: lenv + "[MIN_NUM_PROC]", reason: "must not be empty"},
		"valueFrom on NP":               {input: edit(baseMPIJobV1Short, `{name: NP, value: "2"}`, `{name: NP, value: "2", valueFrom: {fieldRef: {fieldPath: x}}}`), field: lenv + "[NP]", reason: "not valueFrom"},
		"valueFrom on EPOCHS":           {input: edit(baseMPIJob, `{name: EPOCHS, value: "10"}`, `{name: EPOCHS, valueFrom: {secretKeyRef: {name: s, key: k}}}`), field: lenv + "[EPOCHS]", reason: "not valueFrom"},
		"env value a boolean":           {input: env(baseMPIJob, "EPOCHS", "yes"), field: lenv + "[EPOCHS]", reason: `must be a string, not a boolean (quote it: "true")`},
		"hex priority":                  {input: env(baseMPIJob, "JOB_PRIORITY", `"0x1"`), field: lenv + "[JOB_PRIORITY]", reason: "not a base-10 integer"},
		"underscore digits":             {input: env(baseMPIJob, "MAX_NUM_PROC", `"1_0"`), field: lenv + "[MAX_NUM_PROC]", reason: "not a base-10 integer"},
		"annotation empty":              {input: annotate(baseMPIJob, AnnotationMaxWorkers, `""`), field: "metadata.annotations[vodascheduler/max-workers]", reason: "must not be empty"},
		"annotation syntax before env":  {input: annotate(env(baseMPIJob, "MIN_NUM_PROC", `"x"`), AnnotationMinWorkers, `"y"`), field: "metadata.annotations[vodascheduler/min-workers]", reason: `"y" is not a base-10 integer`},
		"syntax before agreement":       {input: annotate(edit(baseMPIJob, `{name: NUM_PROC, value: "2"}`, `{name: NUM_PROC, value: "2"}`+"\n            - {name: MIN_NP, value: \"x\"}"), AnnotationMinWorkers, `"2"`), field: lenv + "[MIN_NP]", reason: `"x" is not a base-10 integer`},
		"min before max":                {input: env(env(baseMPIJob, "MIN_NUM_PROC", `"0"`), "MAX_NUM_PROC", `"x"`), field: lenv + "[MIN_NUM_PROC]", reason: "0 must be at least 1"},
		"requested below min":           {input: env(env(baseMPIJob, "MIN_NUM_PROC", `"3"`), "NUM_PROC", `"2"`), field: lenv + "[NUM_PROC]", reason: "2 is outside [min, max] = [3, 4]"},
		"requested annotation differs":  {input: annotate(baseMPIJob, AnnotationWorkers, `"3"`), field: "metadata.annotations[vodascheduler/workers]", reason: "conflicts with " + lenv + `[NUM_PROC] = "2"`},
		"NP and NUM_PROC differ":        {input: edit(baseMPIJob, `{name: NUM_PROC, value: "2"}`, `{name: NUM_PROC, value: "2"}`+"\n            - {name: NP, value: \"3\"}"), field: lenv + "[NUM_PROC]", reason: "conflicts with " + lenv + "[NP]"},
		"epochs required":               {input: dropLine(baseMPIJob, "EPOCHS"), opts: Options{RequireEpochs: true}, field: lenv + "[EPOCHS]", reason: "required; set env EPOCHS on the launcher's first container, or annotation vodascheduler/epochs"},
		"epochs 0 when required":        {input: env(baseMPIJob, "EPOCHS", `"0"`), opts: Options{RequireEpochs: true}, field: lenv + "[EPOCHS]", reason: "0 must be at least 1"},
		"epochs annotation differs":     {input: annotate(baseMPIJob, AnnotationEpochs, `"11"`), field: "metadata.annotations[vodascheduler/epochs]", reason: "conflicts with " + lenv + "[EPOCHS]"},
		"priority above MaxPriority":    {input: baseMPIJob, opts: Options{MaxPriority: 2}, field: lenv + "[JOB_PRIORITY]", reason: "3 is outside [0, 2]"},
		"priority annotation differs":   {input: annotate(baseMPIJob, AnnotationPriority, `"4"`), field: "metadata.annotations[vodascheduler/priority]", reason: "conflicts with " + lenv + "[JOB_PRIORITY]"},
		"nodeSelector a list":           {input: edit(baseMPIJob, "          nodeSelector:\n            vodascheduler/accelerator: nvidia-tesla-v100\n", "          nodeSelector: [v100]\n"), field: "spec.mpiReplicaSpecs.Worker.template.spec.nodeSelector", reason: "must be an object"},
		"nodeSelector value a number":   {input: edit(baseMPIJob, "accelerator: nvidia-tesla-v100", "accelerator: 100"), field: workerSel, reason: "must be a string"},
		"empty GPU type":                {input: edit(baseMPIJob, "accelerator: nvidia-tesla-v100", `accelerator: ""`), field: workerSel, reason: "must not be empty"},
		"GPU type on launcher only":     {input: edit(dropLine(baseMPIJob, "vodascheduler/accelerator"), "          containers:\n          - name: launcher\n", "          nodeSelector: {vodascheduler/accelerator: nvidia-tesla-v100}\n          containers:\n          - name: launcher\n"), field: workerSel, reason: "required"},
		"GPU type annotation unknown":   {input: annotate(dropLine(baseMPIJob, "vodascheduler/accelerator"), AnnotationGPUType, "tpu"), opts: Options{GPUTypes: testGPUTypes}, field: "metadata.annotations[vodascheduler/gpu-type]", reason: `unknown GPU type "tpu"`},
		"GPU type 64 characters":        {input: edit(baseMPIJob, "accelerator: nvidia-tesla-v100", "accelerator: "+strings.Repeat("g", 64)), field: workerSel, reason: "label value"},
		"sim-model empty":               {input: annotate(baseMPIJob, AnnotationSimModel, `""`), field: "metadata.annotations[vodascheduler/sim-model]", reason: "must not be empty"},
		"application empty":             {input: annotate(baseMPIJob, AnnotationApplication, `""`), field: "metadata.annotations[vodascheduler/application]", reason: "must be a Kubernetes label value"},
		"application with a slash":      {input: annotate(baseMPIJob, AnnotationApplication, "team/bert"), field: "metadata.annotations[vodascheduler/application]", reason: "must be a Kubernetes label value"},
		"progress log empty":            {input: annotate(baseMPIJob, AnnotationProgressLog, `""`), field: "metadata.annotations[vodascheduler/progress-log]", reason: "must not be empty"},
		"progress log not RE2":          {input: annotate(baseMPIJob, AnnotationProgressLog, `'(?P<epoch>\d+)(?=x)'`), field: "metadata.annotations[vodascheduler/progress-log]", reason: "is not a regular expression (RE2 syntax)"},
		"progress log without epoch":    {input: annotate(baseMPIJob, AnnotationProgressLog, `'Epoch (\d+)'`), field: "metadata.annotations[vodascheduler/progress-log]", reason: "needs a named group (?P<epoch>...)"},
		"progress log misspelt group":   {input: annotate(baseMPIJob, AnnotationProgressLog, `'(?P<epoch>\d+)/(?P<totl>\d+)'`), field: "metadata.annotations[vodascheduler/progress-log]", reason: `has the named group "totl"`},
		"progress log too long":         {input: annotate(baseMPIJob, AnnotationProgressLog, "'(?P<epoch>x)"+strings.Repeat("y", 600)+"'"), field: "metadata.annotations[vodascheduler/progress-log]", reason: "at most 512"},
		"PyTorchJob no replica specs":   {input: edit(basePyTorchJob, "pytorchReplicaSpecs:", "replicaSpecs:"), field: "spec.pytorchReplicaSpecs", reason: "required"},
		"PyTorchJob no Worker":          {input: edit(basePyTorchJob, "    Worker:", "    worker:"), field: "spec.pytorchReplicaSpecs.Worker", reason: "required"},
		"PyTorchJob elasticPolicy list": {input: edit(basePyTorchJob, "  elasticPolicy:\n    rdzvBackend: c10d\n    minReplicas: 1\n    maxReplicas: 4\n", "  elasticPolicy: [1, 4]\n"), field: "spec.elasticPolicy", reason: "must be an object"},
		"PyTorchJob no minReplicas":     {input: dropLine(basePyTorchJob, "minReplicas"), field: "spec.elasticPolicy.minReplicas", reason: "required; set spec.elasticPolicy.minReplicas or annotation vodascheduler/min-workers"},
		"PyTorchJob no maxReplicas":     {input: dropLine(basePyTorchJob, "maxReplicas"), field: "spec.elasticPolicy.maxReplicas", reason: "required"},
		"PyTorchJob minReplicas 0":      {input: edit(basePyTorchJob, "minReplicas: 1", "minReplicas: 0"), field: "spec.elasticPolicy.minReplicas", reason: "0 must be at least 1"},
		"PyTorchJob min > max":          {input: edit(basePyTorchJob, "minReplicas: 1", "minReplicas: 5"), field: "spec.elasticPolicy.minReplicas", reason: "5 is above max workers 4 (spec.elasticPolicy.maxReplicas)"},
		"PyTorchJob huge replicas":      {input: edit(basePyTorchJob, "replicas: 2", "replicas: 9223372036854775807"), field: "spec.pytorchReplicaSpecs.Worker.replicas", reason: "out of range"},
		"PyTorchJob replicas a string":  {input: edit(basePyTorchJob, "replicas: 2", `replicas: "2"`), field: "spec.pytorchReplicaSpecs.Worker.replicas", reason: "must be an integer, not a string"},
		"PyTorchJob annotation differs from elasticPolicy": {
			input: annotate(basePyTorchJob, AnnotationMaxWorkers, `"3"`),
			field: "metadata.annotations[vodascheduler/max-workers]", reason: `"3" conflicts with spec.elasticPolicy.maxReplicas = "4"`,
		},
		"PyTorchJob EPOCHS from valueFrom": {
			input: edit(basePyTorchJob, `{name: EPOCHS, value: "8"}`, `{name: EPOCHS, valueFrom: {fieldRef: {fieldPath: x}}}`),
			field: "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].env[EPOCHS]", reason: "not valueFrom",
		},
		"PyTorchJob epochs required": {
			input: dropLine(basePyTorchJob, "EPOCHS"), opts: Options{RequireEpochs: true},
			field: "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].env[EPOCHS]", reason: "on the Worker's first container",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkFieldError(t, []byte(tc.input), tc.opts, tc.field, tc.reason)
		})
	}
}

// TestParseWorkerLimit covers Options.MaxWorkers (default 1024) on min,
// max and requested workers, wherever they are written; before it, any
// 32-bit count was accepted. badInputs has more cases.
func TestParseWorkerLimit(t *testing.T) {
	lenv := launcherEnv
	cases := map[string]struct {
		input  string
		opts   Options
		field  string
		reason string
	}{
		"max workers over a lower MaxWorkers": {input: baseMPIJob, opts: Options{MaxWorkers: 3}, field: lenv + "[MAX_NUM_PROC]", reason: "4 is above the limit of 3 workers"},
		"min workers over the limit before min > max": {
			input: env(baseMPIJob, "MIN_NUM_PROC", `"5000"`), field: lenv + "[MIN_NUM_PROC]", reason: "5000 is above the limit of 1024 workers",
		},
		"requested workers over the limit": {
			input: env(baseMPIJob, "NUM_PROC", `"2147483647"`), field: lenv + "[NUM_PROC]", reason: "2147483647 is above the limit of 1024 workers (one GPU each) per job that this server accepts (voda server --max-workers)",
		},
		"annotation workers over the limit": {
			input: annotate(dropLine(baseMPIJob, "{name: NUM_PROC,"), AnnotationWorkers, `"1025"`), field: "metadata.annotations[vodascheduler/workers]", reason: "1025 is above the limit of 1024",
		},
		"annotation min-workers over the limit": {
			input: annotate(dropLine(baseMPIJob, "MIN_NUM_PROC"), AnnotationMinWorkers, `"2147483647"`), field: "metadata.annotations[vodascheduler/min-workers]", reason: "2147483647 is above the limit",
		},
		"MAX_NP over the limit": {input: env(baseMPIJobV1Short, "MAX_NP", `"1025"`), field: lenv + "[MAX_NP]", reason: "1025 is above the limit of 1024"},
		"PyTorchJob minReplicas over the limit": {
			input: edit(edit(basePyTorchJob, "minReplicas: 1", "minReplicas: 2000"), "maxReplicas: 4", "maxReplicas: 3000"), field: "spec.elasticPolicy.minReplicas", reason: "2000 is above the limit",
		},
		"PyTorchJob replicas over the limit": {
			input: edit(basePyTorchJob, "replicas: 2", "replicas: 2147483647"), field: "spec.pytorchReplicaSpecs.Worker.replicas", reason: "2147483647 is above the limit",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkFieldError(t, []byte(tc.input), tc.opts, tc.field, tc.reason)
		})
	}
}

// TestValidateErrorMapping covers the last step, which the earlier checks
// make unreachable through Parse.
func TestValidateErrorMapping(t *testing.T) {
	l, ferr := mpiJobLayout(mustYAMLMap(t, baseMPIJob), Options{})
	if ferr != nil {
		t.Fatal(ferr)
	}
	l.addAnnotations(nil)
	for _, tc := range []struct {
		js    model.JobSpec
		field string
	}{
		{model.JobSpec{}, "metadata.name"},
		{model.JobSpec{Name: "a", MaxWorkers: 1, MinWorkers: 1, RequestedWorkers: 1, Priority: -1}, launcherEnv + "[JOB_PRIORITY]"},
		{model.JobSpec{Name: "a", MaxWorkers: 1, MinWorkers: 0}, launcherEnv + "[MIN_NUM_PROC]"},
	} {
		err := l.validateError(tc.js.Validate())
		if err.Field != tc.field {
			t.Errorf("%+v: field %q, want %q", tc.js, err.Field, tc.field)
		}
	}
	if err := l.validateError(errors.New("odd")); err.Field != "spec" || err.Reason != "odd" {
		t.Errorf("unprefixed error: %+v", err)
	}
}

func TestRenameRoundTrip(t *testing.T) {
	inputs := map[string]string{
		"MPIJob":             baseMPIJob,
		"MPIJob v1 short":    baseMPIJobV1Short,
		"annotations only":   annotationsOnly,
		"PyTorchJob":         basePyTorchJob,
		"JOB_NAME valueFrom": edit(baseMPIJob, `{name: NUM_PROC, value: "2"}`, `{name: NUM_PROC, value: "2"}`+"\n            - {name: JOB_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}"),
	}
	for name, input := range withExamples(t, inputs) {
		t.Run(name, func(t *testing.T) {
			spec, err := Parse([]byte(input), Options{})
			if err != nil {
				t.Fatal(err)
			}
			before, err := spec.JSON()
			if err != nil {
				t.Fatal(err)
			}
			unique := spec.Name + "-20240102-030405-02"
			spec.Rename(unique)
			out, err := spec.JSON()
			if err != nil {
				t.Fatal(err)
			}
			// The unique name is longer than a user may write.
			again, err := Parse(out, Options{MaxNameLength: 63})
			if err != nil {
				t.Fatalf("Parse(JSON()) after Rename: %v\n%s", err, out)
			}
			if diff := cmp.Diff(spec, again, ignoreManifest); diff != "" {
				t.Errorf("round trip (-renamed,+parsed):\n%s", diff)
			}
			if again.Name != unique || again.JobSpec.Name != unique {
				t.Errorf("names %q, %q; want %q", again.Name, again.JobSpec.Name, unique)
			}
			if spec.Kind == KindMPIJob {
				if got := launcherJobNames(t, again.Manifest); !cmp.Equal(got, []string{unique}) {
					t.Errorf("launcher JOB_NAME values %q, want [%q]", got, unique)
				}
			}
			// Nothing else changed: undo the rename on a copy and compare.
			spec.Rename(strings.TrimSuffix(unique, "-20240102-030405-02"))
			var want, got map[string]any
			if err := json.Unmarshal(before, &want); err != nil {
				t.Fatal(err)
			}
			after, _ := spec.JSON()
			if err := json.Unmarshal(after, &got); err != nil {
				t.Fatal(err)
			}
			if spec.Kind == KindMPIJob {
				stripJobName(want)
				stripJobName(got)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Rename changed more than the name (-before,+after):\n%s", diff)
			}
		})
	}
}

func TestRenameDefensive(t *testing.T) {
	for name, s := range map[string]*Spec{
		"zero":            {},
		"MPIJob no spec":  {Kind: KindMPIJob, Manifest: map[string]any{"metadata": "x"}},
		"MPIJob odd env":  {Kind: KindMPIJob, Manifest: mustYAMLMap(t, edit(baseMPIJob, "            env:\n", "            env: 3\n            x:\n"))},
		"odd containers":  {Kind: KindMPIJob, Manifest: mustYAMLMap(t, "spec: {mpiReplicaSpecs: {Launcher: {template: {spec: {containers: [1]}}}}}")},
		"empty container": {Kind: KindMPIJob, Manifest: mustYAMLMap(t, "spec: {mpiReplicaSpecs: {Launcher: {template: {spec: {containers: []}}}}}")},
	} {
		t.Run(name, func(t *testing.T) {
			s.Rename("x")
			if s.Name != "x" || s.JobSpec.Name != "x" {
				t.Errorf("names %q, %q", s.Name, s.JobSpec.Name)
			}
			if _, err := s.JSON(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestRenameAddsJobName(t *testing.T) {
	spec, err := Parse([]byte(dropLine(dropLine(dropLine(dropLine(dropLine(baseMPIJob, "MIN_NUM_PROC"), "MAX_NUM_PROC"), "NUM_PROC"), "EPOCHS"), "JOB_PRIORITY")), Options{})
	if err == nil {
		t.Fatalf("accepted a job without settings: %+v", spec)
	}
	// The launcher has no env at all here.
	spec, err = Parse([]byte(annotationsOnly), Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec.Rename("bert-20240102-030405")
	if got := launcherJobNames(t, spec.Manifest); !cmp.Equal(got, []string{"bert-20240102-030405"}) {
		t.Errorf("JOB_NAME values %q", got)
	}
}

func TestFieldErrorMessage(t *testing.T) {
	e := &FieldError{Field: "metadata.name", Value: "X", Reason: "must be lowercase"}
	if got, want := e.Error(), "metadata.name: must be lowercase"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestExamples parses every file in examples/.
func TestExamples(t *testing.T) {
	want := map[string]*Spec{
		"mpijob-v2beta1-horovod-elastic.yaml": {Kind: KindMPIJob, APIVersion: APIVersionV2Beta1, Name: "tf2-keras-mnist-elastic", Namespace: "default", Model: "amdahl",
			JobSpec: model.JobSpec{Name: "tf2-keras-mnist-elastic", GPUType: "nvidia-tesla-v100", MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, Epochs: 10}},
		"mpijob-v1-short-env.yaml": {Kind: KindMPIJob, APIVersion: APIVersionV1, Name: "pytorch-mnist-elastic", Namespace: "default", Model: "amdahl",
			JobSpec: model.JobSpec{Name: "pytorch-mnist-elastic", GPUType: "nvidia-tesla-v100", MinWorkers: 1, MaxWorkers: 8, RequestedWorkers: 2, Priority: 1, Epochs: 5}},
		"pytorchjob-elastic.yaml": {Kind: KindPyTorchJob, APIVersion: APIVersionV1, Name: "resnet18-elastic", Namespace: "default", Model: "amdahl",
			JobSpec: model.JobSpec{Name: "resnet18-elastic", GPUType: "nvidia-tesla-v100", MinWorkers: 1, MaxWorkers: 4, RequestedWorkers: 2, Epochs: 8}},
		"annotations.yaml": {Kind: KindMPIJob, APIVersion: APIVersionV2Beta1, Name: "bert-finetune-elastic", Namespace: "default", Model: "amdahl",
			JobSpec: model.JobSpec{Name: "bert-finetune-elastic", GPUType: "nvidia-tesla-v100", MinWorkers: 2, MaxWorkers: 8, RequestedWorkers: 4, Priority: 10, Epochs: 6}},
	}
	opts := Options{GPUTypes: []string{"nvidia-tesla-v100"}, Models: []string{"amdahl"}, RequireEpochs: true}
	files := exampleFiles(t)
	seen := 0
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(data, opts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if w, ok := want[name]; ok {
				seen++
				if diff := cmp.Diff(w, got, ignoreManifest); diff != "" {
					t.Errorf("(-want,+got):\n%s", diff)
				}
			}
		})
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d expected examples among %q", seen, len(want), files)
	}
}

// withExamples adds every file in examples/ to inputs, by base name.
func withExamples(t testing.TB, inputs map[string]string) map[string]string {
	t.Helper()
	for _, path := range exampleFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		inputs[filepath.Base(path)] = string(data)
	}
	return inputs
}

func exampleFiles(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml", "*.json"} {
		m, err := filepath.Glob(filepath.Join("..", "..", "examples", pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	return files
}

func mustYAMLMap(t testing.TB, s string) map[string]any {
	t.Helper()
	m, err := decodeBody([]byte(s), DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// launcherJobNames lists the values of the launcher's JOB_NAME entries.
func launcherJobNames(t *testing.T, manifest map[string]any) []string {
	t.Helper()
	var names []string
	for _, e := range launcherEnvList(manifest) {
		entry := e.(map[string]any)
		if entry["name"] == EnvJobName {
			if _, ok := entry["valueFrom"]; ok {
				t.Errorf("JOB_NAME keeps valueFrom")
			}
			names = append(names, entry["value"].(string))
		}
	}
	return names
}

func launcherEnvList(manifest map[string]any) []any {
	c, _ := dig(manifest, "spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "containers")
	env, _ := c.([]any)[0].(map[string]any)["env"].([]any)
	return env
}

// stripJobName drops JOB_NAME entries (and an env list only Rename made).
func stripJobName(manifest map[string]any) {
	c, _ := dig(manifest, "spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "containers")
	container := c.([]any)[0].(map[string]any)
	env, _ := container["env"].([]any)
	var kept []any
	for _, e := range env {
		if e.(map[string]any)["name"] != EnvJobName {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		delete(container, "env")
	} else {
		container["env"] = kept
	}
}

// A manifest without a namespace gets the server's, in the Spec and in
// the manifest stored, so that a job says where it runs whatever the
// server's flags later become; one that names its own keeps it.
func TestParseDefaultNamespace(t *testing.T) {
	for _, c := range []struct {
		name, input, defaultNS, want string
	}{
		{"none named, no default", baseMPIJob, "", DefaultNamespace},
		{"none named, the server's", baseMPIJob, "team-z", "team-z"},
		{"named", edit(baseMPIJob, "metadata:\n", "metadata:\n  namespace: team-a\n"), "team-z", "team-a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec, err := Parse([]byte(c.input), Options{DefaultNamespace: c.defaultNS})
			if err != nil {
				t.Fatal(err)
			}
			b, err := spec.JSON()
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Metadata struct{ Namespace string } `json:"metadata"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if spec.Namespace != c.want || m.Metadata.Namespace != c.want {
				t.Errorf("Namespace %q, manifest's %q; want %q", spec.Namespace, m.Metadata.Namespace, c.want)
			}
		})
	}
}
