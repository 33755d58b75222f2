package jobspec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Voda counts one GPU per worker: the scheduler hands out GPUs, and a
// worker pod gets exactly one, nvidia.com/gpu: 1, on the one container
// that trains. A manifest asking for more (nvidia.com/gpu: 4, a GPU on a
// sidecar, an init container or the launcher, several slots per worker)
// would over-commit the GPUs the scheduler believes free, or leave pods
// unschedulable; one asking for fewer (0) would train without a GPU.
// Workers with several GPUs are not a feature (yet), so such manifests are
// rejected.

// resourceGPU is the extended resource of one NVIDIA GPU, the only GPU
// resource Voda schedules.
const resourceGPU = "nvidia.com/gpu"

// gpuPrefixes are the vendors' extended-resource domains: NVIDIA's MIG
// profiles and shared GPUs, AMD's and Intel's GPUs.
var gpuPrefixes = []string{"nvidia.com/", "amd.com/", "gpu.intel.com/"}

// isGPUResource reports whether a resource name is, or may well be, a GPU.
func isGPUResource(name string) bool {
	lower := strings.ToLower(name)
	for _, p := range gpuPrefixes {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	return strings.Contains(lower, "gpu")
}

// gpuAsk is one GPU resource a container asks for.
type gpuAsk struct {
	field, name string
	value       any
}

func (a gpuAsk) fail(reason string) *FieldError {
	return &FieldError{Field: a.field, Value: scalarText(a.value), Reason: reason}
}

// gpuAsks lists the GPU resources container c (at cpath) asks for:
// resources.limits, then resources.requests, each in key order.
func gpuAsks(c any, cpath string) ([]gpuAsk, *FieldError) {
	obj, ok := c.(map[string]any)
	if !ok {
		return nil, &FieldError{Field: cpath, Value: scalarText(c), Reason: "must be an object, not " + typeName(c)}
	}
	rpath := child(cpath, "resources")
	res, err := objectAt(obj, "resources", rpath)
	if err != nil || res == nil {
		return nil, err
	}
	var asks []gpuAsk
	for _, key := range []string{"limits", "requests"} {
		path := child(rpath, key)
		m, err := objectAt(res, key, path)
		if err != nil {
			return nil, err
		}
		for _, name := range sortedKeys(m) {
			if isGPUResource(name) {
				asks = append(asks, gpuAsk{field: index(path, name), name: name, value: m[name]})
			}
		}
	}
	return asks, nil
}

// checkGPUs applies the one-GPU-per-worker rule to a Worker and, for an
// MPIJob, its Launcher (nil for a PyTorchJob), in this order: the
// Worker's containers, its init containers, then the Launcher's
// containers and init containers. It returns the index of the Worker
// container that gets the GPU.
func checkGPUs(worker replica, launcher *replica) (int, *FieldError) {
	gpu, err := workerGPUContainer(worker)
	if err != nil {
		return 0, err
	}
	err = noGPUs(worker, "initContainers",
		"is not accepted: an init container gets no GPU; a worker is exactly one GPU, nvidia.com/gpu: 1 on the container that trains")
	if err != nil {
		return 0, err
	}
	if launcher == nil {
		return gpu, nil
	}
	for _, key := range []string{"containers", "initContainers"} {
		err := noGPUs(*launcher, key,
			"is not accepted: the launcher gets no GPU; Voda counts one GPU per worker and none elsewhere, so a GPU here would be used without being counted")
		if err != nil {
			return 0, err
		}
	}
	return gpu, nil
}

// workerGPUContainer finds the one Worker container that asks for a GPU,
// as nvidia.com/gpu: 1 in its limits, requests or both, and rejects any
// other GPU request. Without one, a single container is the one Voda
// gives the GPU; of several, Voda cannot tell which trains.
func workerGPUContainer(r replica) (int, *FieldError) {
	cpath := child(r.podPath, "containers")
	gpu := -1
	for i, c := range r.containers {
		asks, err := gpuAsks(c, index(cpath, strconv.Itoa(i)))
		if err != nil {
			return 0, err
		}
		for _, a := range asks {
			switch {
			case a.name != resourceGPU:
				return 0, a.fail(fmt.Sprintf("is not accepted: Voda schedules whole GPUs as %s, exactly one per worker", resourceGPU))
			case gpu >= 0 && gpu != i:
				return 0, a.fail(fmt.Sprintf("is not accepted: containers[%d] already asks for %s, and only one container of a worker may: a worker is exactly one GPU", gpu, resourceGPU))
			case !isOne(a.value):
				return 0, a.fail(fmt.Sprintf("%s is not accepted: a worker is exactly one GPU, so write 1; for more GPUs, ask for more workers", valueText(a.value)))
			}
			gpu = i
		}
	}
	if gpu >= 0 {
		return gpu, nil
	}
	if len(r.containers) > 1 {
		return 0, &FieldError{Field: cpath,
			Reason: fmt.Sprintf("name the container that trains: give it resources.limits %s: 1; with %d containers and none asking for a GPU, Voda cannot tell which one gets the worker's GPU", resourceGPU, len(r.containers))}
	}
	return 0, nil
}

// noGPUs rejects any GPU request in the replica's container list key
// (containers or initContainers), with reason why.
func noGPUs(r replica, key, why string) *FieldError {
	path := child(r.podPath, key)
	list, err := listAt(r.pod, key, path)
	if err != nil {
		return err
	}
	for i, c := range list {
		asks, err := gpuAsks(c, index(path, strconv.Itoa(i)))
		if err != nil {
			return err
		}
		if len(asks) > 0 {
			return asks[0].fail(why)
		}
	}
	return nil
}

// isOne reports whether a quantity is written as exactly one: the integer
// 1 or the string "1". Other spellings of one ("1000m") are not worth the
// doubt they cast on what the user meant.
func isOne(v any) bool {
	switch v := v.(type) {
	case json.Number:
		return v.String() == "1"
	case string:
		return v == "1"
	}
	return false
}

// checkSlotsPerWorker rejects an MPIJob's spec.slotsPerWorker other than
// 1: each slot is an MPI process, each process trains on a GPU of its own.
func checkSlotsPerWorker(spec map[string]any) *FieldError {
	v := spec["slotsPerWorker"]
	if v == nil {
		return nil
	}
	if n, ok := v.(json.Number); ok && n.String() == "1" {
		return nil
	}
	return &FieldError{Field: "spec.slotsPerWorker", Value: scalarText(v),
		Reason: valueText(v) + " is not accepted: Voda runs one process (one GPU) per worker; leave it out or set it to 1"}
}

// checkLauncherAsWorker rejects an MPIJob whose launcher also runs a
// worker process (mpi-operator v2's spec.runLauncherAsWorker): that
// process would train on a GPU Voda never counted.
func checkLauncherAsWorker(spec map[string]any) *FieldError {
	v := spec["runLauncherAsWorker"]
	if v == nil || v == false {
		return nil
	}
	return &FieldError{Field: "spec.runLauncherAsWorker", Value: scalarText(v),
		Reason: valueText(v) + " is not accepted: the launcher gets no GPU in Voda, so it must not run a worker; leave it out or set it to false"}
}

// checkProcsPerNode rejects a PyTorchJob that starts several training
// processes per worker pod (spec.nprocPerNode, or the older
// spec.elasticPolicy.nProcPerNode): each would want a GPU of its own.
func checkProcsPerNode(spec, policy map[string]any) *FieldError {
	for _, f := range []struct {
		obj        map[string]any
		key, field string
	}{
		{spec, "nprocPerNode", "spec.nprocPerNode"},
		{policy, "nProcPerNode", elasticPolicy + ".nProcPerNode"},
	} {
		v := f.obj[f.key]
		if v == nil || isOne(v) {
			continue
		}
		return &FieldError{Field: f.field, Value: scalarText(v),
			Reason: valueText(v) + " is not accepted: Voda runs one training process (one GPU) per worker pod; leave it out or set it to 1"}
	}
	return nil
}

// valueText renders a value for a reason: a number as written, a string
// quoted, anything else by its type.
func valueText(v any) string {
	switch v := v.(type) {
	case json.Number:
		return v.String()
	case string:
		return quote(v)
	}
	return typeName(v)
}

// WorkerGPUContainer returns the index, in the Worker pod template's
// containers of a kind's manifest, of the container that gets the
// worker's GPU: the one whose resources name nvidia.com/gpu, else 0. For a
// manifest Parse accepted it is Spec.WorkerGPUContainer; it serves code
// that has the stored manifest (decoded with any JSON decoder) rather than
// the Spec, such as the builder of the Kubernetes objects.
func WorkerGPUContainer(kind Kind, manifest map[string]any) int {
	specs := "mpiReplicaSpecs"
	if kind == KindPyTorchJob {
		specs = "pytorchReplicaSpecs"
	}
	c, _ := dig(manifest, "spec", specs, "Worker", "template", "spec", "containers")
	containers, _ := c.([]any)
	for i, c := range containers {
		for _, key := range []string{"limits", "requests"} {
			if _, ok := dig(c, "resources", key, resourceGPU); ok {
				return i
			}
		}
	}
	return 0
}
