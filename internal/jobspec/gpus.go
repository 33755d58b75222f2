package jobspec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// A job's workers each hold G GPUs, nvidia.com/gpu: G on the one
// container that trains (G = 1 when no container names a GPU). The
// scheduler hands out whole workers of G GPUs. A GPU anywhere else (a
// sidecar, an init container, the launcher, a MIG profile or another
// vendor's resource) would be used without being counted, and a G that
// is not a whole positive number would over-commit or starve the node;
// such manifests are rejected. The processes a pod starts must be G as
// well: an MPIJob's slotsPerWorker (set to G when left out), a
// PyTorchJob's nprocPerNode.

// MaxGPUsPerWorker bounds G as a manifest may write it: more GPUs than
// any one machine holds is a typing error, not a job. A G within it but
// larger than every node of its type is accepted and waits,
// Unschedulable.
const MaxGPUsPerWorker = 64

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

// checkGPUs applies the GPU rules to a Worker and, for an MPIJob, its
// Launcher (nil for a PyTorchJob), in this order: the Worker's
// containers, its init containers, then the Launcher's containers and
// init containers. It returns the worker's GPU ask. Without multi, a
// worker of several GPUs is refused: the scheduler does not place them
// yet (Options.MultiGPUWorkers).
func checkGPUs(worker replica, launcher *replica, multi bool) (workerAsk, *FieldError) {
	w, err := workerGPUContainer(worker)
	if err != nil {
		return w, err
	}
	if w.gpus > 1 && !multi {
		return w, &FieldError{Field: w.field, Value: strconv.Itoa(w.gpus),
			Reason: fmt.Sprintf("%d is not accepted yet: this Voda schedules workers of one GPU, so write 1; for more GPUs, ask for more workers", w.gpus)}
	}
	err = noGPUs(worker, "initContainers",
		"is not accepted: an init container gets no GPU; a worker's GPUs are nvidia.com/gpu: G on the one container that trains")
	if err != nil {
		return w, err
	}
	if launcher == nil {
		return w, nil
	}
	for _, key := range []string{"containers", "initContainers"} {
		err := noGPUs(*launcher, key,
			"is not accepted: the launcher gets no GPU; Voda counts the GPUs of the workers and none elsewhere, so a GPU here would be used without being counted")
		if err != nil {
			return w, err
		}
	}
	return w, nil
}

// workerAsk is what a Worker asks for: the index of the container that
// trains, its GPUs per worker G, and the field that says so ("" when no
// container names a GPU and G is 1).
type workerAsk struct {
	container, gpus int
	field           string
}

// workerGPUContainer finds the one Worker container that asks for GPUs,
// as nvidia.com/gpu: G in its limits, requests or both (the same G), and
// rejects any other GPU request. Without one, a single container is the
// one Voda gives one GPU; of several, Voda cannot tell which trains.
func workerGPUContainer(r replica) (workerAsk, *FieldError) {
	cpath := child(r.podPath, "containers")
	w := workerAsk{container: -1, gpus: 1}
	for i, c := range r.containers {
		asks, err := gpuAsks(c, index(cpath, strconv.Itoa(i)))
		if err != nil {
			return w, err
		}
		for _, a := range asks {
			switch {
			case a.name != resourceGPU:
				return w, a.fail(fmt.Sprintf("is not accepted: Voda schedules whole GPUs as %s", resourceGPU))
			case w.container >= 0 && w.container != i:
				return w, a.fail(fmt.Sprintf("is not accepted: containers[%d] already asks for %s, and only one container of a worker may: the one that trains", w.container, resourceGPU))
			}
			g, ok := wholeCount(a.value)
			switch {
			case !ok || g < 1 || g > MaxGPUsPerWorker:
				return w, a.fail(fmt.Sprintf("%s is not accepted: a worker's GPUs are a whole number from 1 to %d, written as such (4, not 4000m)", valueText(a.value), MaxGPUsPerWorker))
			case w.container == i && g != w.gpus:
				return w, a.fail(fmt.Sprintf("%s is not accepted: it must equal %s (%d), as Kubernetes requires of a GPU's request and limit", valueText(a.value), w.field, w.gpus))
			}
			if w.container < 0 {
				w = workerAsk{container: i, gpus: g, field: a.field}
			}
		}
	}
	if w.container >= 0 {
		return w, nil
	}
	w.container = 0
	if len(r.containers) > 1 {
		return w, &FieldError{Field: cpath,
			Reason: fmt.Sprintf("name the container that trains: give it resources.limits %s: G (its GPUs); with %d containers and none asking for a GPU, Voda cannot tell which one gets the worker's GPUs", resourceGPU, len(r.containers))}
	}
	return w, nil
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

// wholeCount reads a count written as a whole number: an integer, or a
// string of decimal digits. Other spellings ("1000m", "4.0", "1e1") are not
// worth the doubt they cast on what the user meant.
func wholeCount(v any) (int, bool) {
	var text string
	switch v := v.(type) {
	case json.Number:
		text = v.String()
	case string:
		text = v
	default:
		return 0, false
	}
	if text == "" || len(text) > 9 || strings.TrimLeft(text, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(text)
	return n, err == nil
}

// checkSlotsPerWorker checks an MPIJob's spec.slotsPerWorker against the
// worker's G: each slot is an MPI process training on a GPU of its own.
// Left out, it is set to G, so that the hostfile the mpi-operator writes
// says slots=G.
func checkSlotsPerWorker(spec map[string]any, w workerAsk) *FieldError {
	v, ok := spec["slotsPerWorker"]
	if !ok {
		if w.gpus > 1 {
			spec["slotsPerWorker"] = json.Number(strconv.Itoa(w.gpus))
		}
		return nil
	}
	if n, isNum := v.(json.Number); isNum {
		if g, ok := wholeCount(n); ok && g == w.gpus {
			return nil
		}
	}
	return &FieldError{Field: "spec.slotsPerWorker", Value: scalarText(v),
		Reason: fmt.Sprintf("%s is not accepted: a worker runs one process per GPU, so it must be the integer %d, its GPUs (%s); or leave it out and Voda sets it", valueText(v), w.gpus, gpusFrom(w))}
}

// gpusFrom names where a worker's G comes from, for a reason.
func gpusFrom(w workerAsk) string {
	if w.field == "" {
		return "no container asks for " + resourceGPU + ", so one"
	}
	return w.field
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

// checkProcsPerNode checks the training processes a PyTorchJob starts per
// worker pod (spec.nprocPerNode, or the older
// spec.elasticPolicy.nProcPerNode) against the worker's G: one process
// per GPU. Left out, torchrun starts one, so G must be 1. Either is
// accepted as a number or its string, and stored as the type the
// training-operator's CRD gives it (a string for spec.nprocPerNode, an
// integer for the elastic policy's): the API server refuses the other,
// and the job would never start.
func checkProcsPerNode(spec, policy map[string]any, w workerAsk) *FieldError {
	// The training-operator's webhook refuses a job that sets both: it
	// would never start.
	if _, both := spec["nprocPerNode"]; both {
		if v, ok := policy["nProcPerNode"]; ok {
			return &FieldError{Field: elasticPolicy + ".nProcPerNode", Value: scalarText(v),
				Reason: "is not accepted beside spec.nprocPerNode, which replaces it: the training-operator refuses a job that sets both; keep spec.nprocPerNode"}
		}
	}
	given := false
	for _, f := range []struct {
		obj        map[string]any
		key, field string
		asString   bool
	}{
		{spec, "nprocPerNode", "spec.nprocPerNode", true},
		{policy, "nProcPerNode", elasticPolicy + ".nProcPerNode", false},
	} {
		v, ok := f.obj[f.key]
		if !ok {
			continue
		}
		given = true
		if g, ok := wholeCount(v); ok && g == w.gpus {
			if f.asString {
				f.obj[f.key] = strconv.Itoa(g)
			} else {
				f.obj[f.key] = json.Number(strconv.Itoa(g))
			}
			continue
		}
		return &FieldError{Field: f.field, Value: scalarText(v),
			Reason: fmt.Sprintf("%s is not accepted: a worker pod runs one training process per GPU, so it must be %d, its GPUs (%s)", valueText(v), w.gpus, gpusFrom(w))}
	}
	if !given && w.gpus > 1 {
		return &FieldError{Field: "spec.nprocPerNode",
			Reason: fmt.Sprintf("must be set to %d: each worker pod holds %d GPUs (%s), and torchrun starts one process per pod unless told to start one per GPU", w.gpus, w.gpus, w.field)}
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
	for i, c := range workerContainers(kind, manifest) {
		for _, key := range []string{"limits", "requests"} {
			if _, ok := dig(c, "resources", key, resourceGPU); ok {
				return i
			}
		}
	}
	return 0
}

// GPUsPerWorker returns G, the GPUs each worker of a kind's manifest
// holds: the nvidia.com/gpu of the container WorkerGPUContainer names (its
// limits, else its requests), 1 when it names none or the value is not a
// whole count. For a manifest Parse accepted it is
// JobSpec.PerWorker(); it serves the builder of the Kubernetes objects,
// which has the stored manifest.
func GPUsPerWorker(kind Kind, manifest map[string]any) int {
	containers := workerContainers(kind, manifest)
	i := WorkerGPUContainer(kind, manifest)
	if i >= len(containers) {
		return 1
	}
	for _, key := range []string{"limits", "requests"} {
		v, ok := dig(containers[i], "resources", key, resourceGPU)
		if !ok {
			continue
		}
		// Any JSON decoder's number: json.Number, float64, int64.
		switch n := v.(type) {
		case float64:
			v = strconv.FormatFloat(n, 'f', -1, 64)
		case int64:
			v = strconv.FormatInt(n, 10)
		case int:
			v = strconv.Itoa(n)
		}
		if g, ok := wholeCount(v); ok && g >= 1 {
			return g
		}
	}
	return 1
}

// workerContainers returns the Worker pod template's containers of a
// kind's manifest, nil when it has none or they are not a list.
func workerContainers(kind Kind, manifest map[string]any) []any {
	specs := "mpiReplicaSpecs"
	if kind == KindPyTorchJob {
		specs = "pytorchReplicaSpecs"
	}
	c, _ := dig(manifest, "spec", specs, "Worker", "template", "spec", "containers")
	containers, _ := c.([]any)
	return containers
}
