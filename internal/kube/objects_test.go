package kube

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/jobspec"
)

// TestBuildObject builds the object of every example manifest and checks
// what Voda adds: API version, namespace, labels, worker count, one GPU
// per worker, the GPU type's node selector and the placement gate.
func TestBuildObject(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("examples: %v (%d files)", err, len(paths))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := jobspec.Parse(data, jobspec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			spec.Rename(spec.Name + "-20261121-101010")
			manifest, err := spec.JSON()
			if err != nil {
				t.Fatal(err)
			}
			obj, err := buildObject(spec.Kind, manifest, "jobs", spec.JobSpec.GPUType, 3)
			if err != nil {
				t.Fatal(err)
			}
			gvr, _ := resourceOf(spec.Kind)
			if got, want := obj.GetAPIVersion(), gvr.GroupVersion().String(); got != want {
				t.Errorf("apiVersion %s, want %s", got, want)
			}
			if obj.GetName() != spec.Name || obj.GetLabels()[LabelJob] != spec.Name || obj.GetLabels()[LabelGPUType] != spec.JobSpec.GPUType {
				t.Errorf("name %s labels %v", obj.GetName(), obj.GetLabels())
			}
			wantNS := "jobs" // the manifest names none: the default given
			if meta, ok := spec.Manifest["metadata"].(map[string]any); ok && meta["namespace"] != nil {
				wantNS = meta["namespace"].(string)
			}
			if obj.GetNamespace() != wantNS {
				t.Errorf("namespace %s, want %s", obj.GetNamespace(), wantNS)
			}
			w := workerPath(spec.Kind)
			if r, _, _ := unstructured.NestedInt64(obj.Object, append(w, "replicas")...); r != 3 {
				t.Errorf("worker replicas %d, want 3", r)
			}
			tmpl := append(append([]string{}, w...), "template")
			if l, _, _ := unstructured.NestedString(obj.Object, append(tmpl, "metadata", "labels", LabelJob)...); l != spec.Name {
				t.Errorf("worker pod label %s=%q", LabelJob, l)
			}
			if sel, _, _ := unstructured.NestedString(obj.Object, append(tmpl, "spec", "nodeSelector", jobspec.LabelAccelerator)...); sel != spec.JobSpec.GPUType {
				t.Errorf("worker nodeSelector %q", sel)
			}
			gates, _, _ := unstructured.NestedSlice(obj.Object, append(tmpl, "spec", "schedulingGates")...)
			if len(gates) != 1 || gates[0].(map[string]any)["name"] != SchedulingGate {
				t.Errorf("scheduling gates %v", gates)
			}
			containers, _, _ := unstructured.NestedSlice(obj.Object, append(tmpl, "spec", "containers")...)
			for _, part := range []string{"limits", "requests"} {
				if g, _, _ := unstructured.NestedString(containers[0].(map[string]any), "resources", part, ResourceGPU); g != "1" {
					t.Errorf("worker %s %s = %q, want 1", part, ResourceGPU, g)
				}
			}
			if p, _, _ := unstructured.NestedString(obj.Object, "spec", "runPolicy", "cleanPodPolicy"); p == "" {
				t.Error("no cleanPodPolicy")
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "cleanPodPolicy"); found {
				t.Error("v1 spec.cleanPodPolicy left in a v2beta1 object")
			}
			// Building again from the built object adds nothing twice.
			again, err := buildObject(spec.Kind, mustJSON(t, obj), "jobs", spec.JobSpec.GPUType, 3)
			if err != nil {
				t.Fatal(err)
			}
			gates, _, _ = unstructured.NestedSlice(again.Object, append(tmpl, "spec", "schedulingGates")...)
			if len(gates) != 1 {
				t.Errorf("gates after a second build: %v", gates)
			}
		})
	}
}

func mustJSON(t *testing.T, obj *unstructured.Unstructured) []byte {
	t.Helper()
	b, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBuildObjectErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kind     jobspec.Kind
		manifest string
	}{
		{"not JSON", jobspec.KindMPIJob, `{`},
		{"no name", jobspec.KindMPIJob, `{"spec":{"mpiReplicaSpecs":{"Worker":{"template":{"spec":{"containers":[{}]}}}}}}`},
		{"unknown kind", "TFJob", `{"metadata":{"name":"x"}}`},
		{"no worker", jobspec.KindMPIJob, `{"metadata":{"name":"x"},"spec":{"mpiReplicaSpecs":{}}}`},
		{"no containers", jobspec.KindPyTorchJob, `{"metadata":{"name":"x"},"spec":{"pytorchReplicaSpecs":{"Worker":{"template":{"spec":{}}}}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := buildObject(tc.kind, []byte(tc.manifest), "ns", "v100", 1); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestJobCondition(t *testing.T) {
	for _, tc := range []struct {
		conds []any
		want  string
	}{
		{nil, ""},
		{[]any{map[string]any{"type": "Running", "status": "True"}}, ""},
		{[]any{map[string]any{"type": "Succeeded", "status": "False"}}, ""},
		{[]any{map[string]any{"type": "Running", "status": "False"}, map[string]any{"type": "Succeeded", "status": "True"}}, "Succeeded"},
		{[]any{map[string]any{"type": "Failed", "status": "True"}}, "Failed"},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": tc.conds}}}
		if got := jobCondition(obj); got != tc.want {
			t.Errorf("conditions %v: %q, want %q", tc.conds, got, tc.want)
		}
	}
}

// The GPU goes to the container the manifest gave nvidia.com/gpu: 1, not
// blindly to the first: a sidecar listed first used to get a second GPU.
func TestBuildObjectGivesTheGPUToTheTrainingContainer(t *testing.T) {
	manifest := []byte(`apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: gpu-second}
spec:
  elasticPolicy: {minReplicas: 1, maxReplicas: 2, rdzvBackend: c10d}
  pytorchReplicaSpecs:
    Worker:
      template:
        spec:
          nodeSelector: {vodascheduler/accelerator: v100}
          containers:
          - {name: proxy, image: envoy}
          - {name: pytorch, image: pytorch, resources: {limits: {nvidia.com/gpu: 1}}}
`)
	spec, err := jobspec.Parse(manifest, jobspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := spec.JSON()
	if err != nil {
		t.Fatal(err)
	}
	obj, err := buildObject(spec.Kind, stored, "jobs", "v100", 1)
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "pytorchReplicaSpecs", "Worker", "template", "spec", "containers")
	for i, want := range []bool{false, true} {
		_, has, _ := unstructured.NestedFieldNoCopy(containers[i].(map[string]any), "resources", "limits", ResourceGPU)
		if has != want {
			t.Errorf("container %d has a GPU limit: %v, want %v", i, has, want)
		}
	}
}

// A worker of G GPUs keeps G on its container's requests and limits, and
// an MPIJob's hostfile slots (spec.slotsPerWorker) are G.
func TestBuildObjectMultiGPUWorkers(t *testing.T) {
	for _, path := range []string{"mpijob-v2beta1-horovod-elastic.yaml", "pytorchjob-elastic.yaml"} {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "..", "examples", path))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := yaml.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			kind := jobspec.Kind(m["kind"].(string))
			w := workerPath(kind)
			containers, _, _ := unstructured.NestedSlice(m, append(append([]string{}, w...), "template", "spec", "containers")...)
			c := containers[0].(map[string]any)
			c["resources"] = map[string]any{"limits": map[string]any{ResourceGPU: int64(4)}}
			if err := unstructured.SetNestedSlice(m, containers, append(append([]string{}, w...), "template", "spec", "containers")...); err != nil {
				t.Fatal(err)
			}
			if kind == jobspec.KindMPIJob {
				unstructured.RemoveNestedField(m, "spec", "slotsPerWorker")
			} else {
				m["spec"].(map[string]any)["nprocPerNode"] = "4"
			}
			spec, err := jobspec.Parse(mustJSONMap(t, m), jobspec.Options{MultiGPUWorkers: true})
			if err != nil {
				t.Fatal(err)
			}
			if spec.JobSpec.PerWorker() != 4 {
				t.Fatalf("parsed G = %d, want 4", spec.JobSpec.PerWorker())
			}
			manifest, err := spec.JSON()
			if err != nil {
				t.Fatal(err)
			}
			obj, err := buildObject(spec.Kind, manifest, "jobs", spec.JobSpec.GPUType, 2)
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedSlice(obj.Object, append(append([]string{}, w...), "template", "spec", "containers")...)
			for _, part := range []string{"limits", "requests"} {
				if g, _, _ := unstructured.NestedString(got[0].(map[string]any), "resources", part, ResourceGPU); g != "4" {
					t.Errorf("worker %s %s = %q, want 4", part, ResourceGPU, g)
				}
			}
			if kind == jobspec.KindMPIJob {
				if slots, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "slotsPerWorker"); fmt.Sprint(slots) != "4" {
					t.Errorf("spec.slotsPerWorker = %v, want 4 (set by Voda)", slots)
				}
			}
		})
	}
}

func mustJSONMap(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
