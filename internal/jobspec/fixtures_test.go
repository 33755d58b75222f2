package jobspec

import (
	"fmt"
	"strings"
)

// baseMPIJob is a valid MPIJob the cases edit: min 1, max 4, requested 2,
// 10 epochs, priority 3, nvidia-tesla-v100.
const baseMPIJob = `apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: mnist
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
            - {name: MAX_NUM_PROC, value: "4"}
            - {name: NUM_PROC, value: "2"}
            - {name: EPOCHS, value: "10"}
            - {name: JOB_PRIORITY, value: "3"}
    Worker:
      replicas: 2
      template:
        spec:
          nodeSelector:
            vodascheduler/accelerator: nvidia-tesla-v100
          containers:
          - name: worker
            image: horovod/horovod:0.28.1
`

// mpiWorkerContainer and mpiLauncherImage are baseMPIJob's worker
// container and its launcher container's image line, for edits.
const (
	mpiWorkerContainer = "          - name: worker\n            image: horovod/horovod:0.28.1\n"
	mpiLauncherImage   = "            image: horovod/horovod:0.28.1\n            env:\n"
)

// workerResources gives baseMPIJob's worker container resources, a YAML
// flow mapping such as {limits: {nvidia.com/gpu: 1}}, and more, YAML
// lines after it (more containers).
func workerResources(res, more string) string {
	return edit(baseMPIJob, mpiWorkerContainer, mpiWorkerContainer+"            resources: "+res+"\n"+more)
}

// baseMPIJobV1Short is baseMPIJob as a kubeflow.org/v1 MPIJob with
// Horovod's short names: min 1, max 8, requested 2.
var baseMPIJobV1Short = edit(edit(edit(edit(baseMPIJob,
	"kubeflow.org/v2beta1", "kubeflow.org/v1"),
	`{name: MIN_NUM_PROC, value: "1"}`, `{name: MIN_NP, value: "1"}`),
	`{name: MAX_NUM_PROC, value: "4"}`, `{name: MAX_NP, value: "8"}`),
	`{name: NUM_PROC, value: "2"}`, `{name: NP, value: "2"}`)

// basePyTorchJob is a valid elastic PyTorchJob: min 1, max 4, requested
// 2, 8 epochs, priority 0, nvidia-tesla-v100.
const basePyTorchJob = `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: resnet
spec:
  elasticPolicy:
    rdzvBackend: c10d
    minReplicas: 1
    maxReplicas: 4
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          nodeSelector:
            vodascheduler/accelerator: nvidia-tesla-v100
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime
            env:
            - {name: EPOCHS, value: "8"}
`

// annotationsOnly is an MPIJob whose settings are all annotations.
const annotationsOnly = `apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: bert
  namespace: team-a
  annotations:
    vodascheduler/min-workers: "2"
    vodascheduler/max-workers: "8"
    vodascheduler/workers: "4"
    vodascheduler/epochs: "6"
    vodascheduler/priority: "10"
    vodascheduler/gpu-type: nvidia-tesla-v100
    vodascheduler/sim-model: amdahl
spec:
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
          - name: launcher
            image: horovod/horovod:0.28.1
    Worker:
      template:
        spec:
          containers:
          - name: worker
            image: horovod/horovod:0.28.1
`

// edit replaces the one occurrence of old in s; a case whose edit does
// not apply is a broken test, caught when the package's tests load.
func edit(s, old, new string) string {
	if strings.Count(s, old) != 1 {
		panic(fmt.Sprintf("edit: %q occurs %d times", old, strings.Count(s, old)))
	}
	return strings.Replace(s, old, new, 1)
}

// env replaces the value of the launcher (or PyTorchJob worker) env var
// written as {name: NAME, value: "OLD"}.
func env(s, name, value string) string {
	i := strings.Index(s, "{name: "+name+", value: ")
	if i < 0 {
		panic("env: no " + name)
	}
	j := strings.Index(s[i:], "}")
	return s[:i] + "{name: " + name + ", value: " + value + "}" + s[i+j+1:]
}

// dropLine removes the one line containing sub.
func dropLine(s, sub string) string {
	lines := strings.SplitAfter(s, "\n")
	out := lines[:0]
	n := 0
	for _, l := range lines {
		if strings.Contains(l, sub) {
			n++
			continue
		}
		out = append(out, l)
	}
	if n != 1 {
		panic(fmt.Sprintf("dropLine: %q on %d lines", sub, n))
	}
	return strings.Join(out, "")
}

// annotate adds annotations (key, value YAML pairs) under metadata.
func annotate(s string, kv ...string) string {
	var b strings.Builder
	b.WriteString("metadata:\n  annotations:\n")
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, "    %s: %s\n", kv[i], kv[i+1])
	}
	return edit(s, "metadata:\n", b.String())
}

// testGPUTypes and testModels are the cluster the bad-inputs table is
// parsed against (and the doc says so).
var (
	testGPUTypes = []string{"nvidia-gtx-1080ti", "nvidia-tesla-v100"}
	testModels   = []string{"amdahl", "linear"}
)
