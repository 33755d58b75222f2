package kube

import (
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vodascheduler/voda/internal/jobspec"
)

// Labels, annotations and the scheduling gate Voda puts on what it
// creates.
const (
	// LabelJob carries the Voda job name on the job object and on every
	// worker pod. Voda manages only pods with this label.
	LabelJob = "vodascheduler/job"
	// LabelGPUType carries the GPU type on the job object and its workers.
	LabelGPUType = "vodascheduler/gpu-type"
	// LabelManagedBy marks objects Voda created.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "voda"
	// SchedulingGate holds a worker pod until Voda has chosen its node.
	SchedulingGate = "vodascheduler/placement"
	// LabelReplicaIndex is the worker index both operators put on pods.
	LabelReplicaIndex = "training.kubeflow.org/replica-index"
	// ResourceGPU is the extended resource of one GPU.
	ResourceGPU = "nvidia.com/gpu"
)

// Group versions and resources of the job kinds.
var (
	MPIJobResource     = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}
	PyTorchJobResource = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
)

// resourceOf returns the resource a job kind is created as.
func resourceOf(kind jobspec.Kind) (schema.GroupVersionResource, error) {
	switch kind {
	case jobspec.KindMPIJob:
		return MPIJobResource, nil
	case jobspec.KindPyTorchJob:
		return PyTorchJobResource, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("job kind %q cannot run on Kubernetes (want %s or %s)",
		kind, jobspec.KindMPIJob, jobspec.KindPyTorchJob)
}

// workerPath is where a kind keeps its Worker replica spec.
func workerPath(kind jobspec.Kind) []string {
	if kind == jobspec.KindPyTorchJob {
		return []string{"spec", "pytorchReplicaSpecs", "Worker"}
	}
	return []string{"spec", "mpiReplicaSpecs", "Worker"}
}

// buildObject turns a stored manifest (JSON, already carrying the job's
// unique name) into the object Voda creates: an MPIJob as
// kubeflow.org/v2beta1 (a v1 manifest is converted), a PyTorchJob as
// kubeflow.org/v1; in namespace ns unless the manifest names one; with
// Voda's labels; workers replicas; and a worker template that asks for
// its G GPUs of gpuType (jobspec.GPUsPerWorker) and carries the placement
// gate.
func buildObject(kind jobspec.Kind, manifest []byte, ns, gpuType string, workers int) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := json.Unmarshal(manifest, &m); err != nil {
		return nil, fmt.Errorf("decode stored manifest: %w", err)
	}
	obj := &unstructured.Unstructured{Object: m}
	name := obj.GetName()
	if name == "" {
		return nil, fmt.Errorf("stored manifest has no metadata.name")
	}
	gvr, err := resourceOf(kind)
	if err != nil {
		return nil, err
	}
	obj.SetAPIVersion(gvr.GroupVersion().String())
	obj.SetKind(string(kind))
	if obj.GetNamespace() == "" {
		obj.SetNamespace(ns)
	}
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "ownerReferences", "finalizers"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	delete(obj.Object, "status")
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelJob] = name
	labels[LabelGPUType] = gpuType
	labels[LabelManagedBy] = managedBy
	obj.SetLabels(labels)

	if kind == jobspec.KindMPIJob {
		convertMPIJobV1(obj.Object)
	}
	// Workers that finished or failed are cleaned up when the job ends,
	// so their GPUs are not held by pods nobody needs.
	if _, found, _ := unstructured.NestedString(obj.Object, "spec", "runPolicy", "cleanPodPolicy"); !found {
		if err := unstructured.SetNestedField(obj.Object, "Running", "spec", "runPolicy", "cleanPodPolicy"); err != nil {
			return nil, fmt.Errorf("set cleanPodPolicy: %w", err)
		}
	}
	wp := workerPath(kind)
	worker, found, err := unstructured.NestedMap(obj.Object, wp...)
	if err != nil || !found {
		return nil, fmt.Errorf("stored manifest has no %v", wp)
	}
	if err := prepareWorker(worker, name, gpuType, jobspec.WorkerGPUContainer(kind, obj.Object), jobspec.GPUsPerWorker(kind, obj.Object)); err != nil {
		return nil, err
	}
	worker["replicas"] = int64(workers)
	if err := unstructured.SetNestedMap(obj.Object, worker, wp...); err != nil {
		return nil, fmt.Errorf("set worker spec: %w", err)
	}
	return obj, nil
}

// convertMPIJobV1 rewrites the fields of a kubeflow.org/v1 MPIJob that
// moved or went away in v2beta1. A v2beta1 manifest is left as it is.
func convertMPIJobV1(m map[string]any) {
	spec, ok := m["spec"].(map[string]any)
	if !ok {
		return
	}
	if p, ok := spec["cleanPodPolicy"]; ok {
		rp, _ := spec["runPolicy"].(map[string]any)
		if rp == nil {
			rp = map[string]any{}
			spec["runPolicy"] = rp
		}
		if _, set := rp["cleanPodPolicy"]; !set {
			rp["cleanPodPolicy"] = p
		}
		delete(spec, "cleanPodPolicy")
	}
	delete(spec, "mainContainer")
}

// prepareWorker makes a Worker replica spec Voda's: labels on its pods,
// g GPUs per worker (requests and limits) on container gpu (the one the
// manifest gave nvidia.com/gpu: g, or its only container), the GPU type's
// nodeSelector and the placement gate.
func prepareWorker(worker map[string]any, job, gpuType string, gpu, g int) error {
	tmpl := childMap(worker, "template")
	meta := childMap(tmpl, "metadata")
	labels := childMap(meta, "labels")
	labels[LabelJob] = job
	labels[LabelGPUType] = gpuType
	spec := childMap(tmpl, "spec")
	containers, _ := spec["containers"].([]any)
	if gpu < 0 || gpu >= len(containers) {
		return fmt.Errorf("worker template has no container %d to give the GPU", gpu)
	}
	c, ok := containers[gpu].(map[string]any)
	if !ok {
		return fmt.Errorf("worker template's container %d is not an object", gpu)
	}
	res := childMap(c, "resources")
	childMap(res, "limits")[ResourceGPU] = strconv.Itoa(g)
	childMap(res, "requests")[ResourceGPU] = strconv.Itoa(g)
	childMap(spec, "nodeSelector")[jobspec.LabelAccelerator] = gpuType
	gates, _ := spec["schedulingGates"].([]any)
	for _, g := range gates {
		if gm, ok := g.(map[string]any); ok && gm["name"] == SchedulingGate {
			return nil
		}
	}
	spec["schedulingGates"] = append(gates, map[string]any{"name": SchedulingGate})
	return nil
}

// childMap returns m[key] as an object, creating it (or replacing a
// non-object) when needed.
func childMap(m map[string]any, key string) map[string]any {
	c, ok := m[key].(map[string]any)
	if !ok {
		c = map[string]any{}
		m[key] = c
	}
	return c
}

// jobCondition returns the terminal state an operator reports in
// status.conditions: "Succeeded" or "Failed" (with status True), or "".
func jobCondition(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		cm, ok := c.(map[string]any)
		if !ok || cm["status"] != "True" {
			continue
		}
		switch cm["type"] {
		case "Succeeded", "Failed":
			return cm["type"].(string)
		}
	}
	return ""
}
