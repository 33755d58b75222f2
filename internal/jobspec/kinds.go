package jobspec

import (
	"fmt"
	"strconv"
)

// Environment variables the original Voda read from the MPIJob launcher's
// first container. The short names are Horovod's older spelling.
const (
	envMinNumProc  = "MIN_NUM_PROC"
	envMinNP       = "MIN_NP"
	envMaxNumProc  = "MAX_NUM_PROC"
	envMaxNP       = "MAX_NP"
	envNumProc     = "NUM_PROC"
	envNP          = "NP"
	envEpochs      = "EPOCHS"
	envJobPriority = "JOB_PRIORITY"
)

const (
	mpiReplicaSpecs     = "spec.mpiReplicaSpecs"
	pytorchReplicaSpecs = "spec.pytorchReplicaSpecs"
	elasticPolicy       = "spec.elasticPolicy"
)

// mpiJobLayout checks the parts of an MPIJob Voda reads, then its GPUs,
// and says where each setting lives.
func mpiJobLayout(root map[string]any, opts Options) (*layout, *FieldError) {
	spec, err := requiredObjectAt(root, "spec", "spec", "")
	if err != nil {
		return nil, err
	}
	specs, err := requiredObjectAt(spec, "mpiReplicaSpecs", mpiReplicaSpecs, "; an MPIJob needs a Launcher and a Worker")
	if err != nil {
		return nil, err
	}
	launcher, err := readReplica(specs, "Launcher", mpiReplicaSpecs, "; Voda reads its settings from the launcher's first container")
	if err != nil {
		return nil, err
	}
	worker, err := readReplica(specs, "Worker", mpiReplicaSpecs, "; an MPIJob needs a Launcher and a Worker")
	if err != nil {
		return nil, err
	}
	env, err := readEnv(launcher, []string{
		envMinNumProc, envMinNP, envMaxNumProc, envMaxNP, envNumProc, envNP, envEpochs, envJobPriority,
	})
	if err != nil {
		return nil, err
	}
	gpu, err := acceleratorSource(worker)
	if err != nil {
		return nil, err
	}
	w, err := checkGPUs(worker, &launcher, opts.MultiGPUWorkers)
	if err != nil {
		return nil, err
	}
	if err := checkSlotsPerWorker(spec, w); err != nil {
		return nil, err
	}
	if err := checkLauncherAsWorker(spec); err != nil {
		return nil, err
	}
	l := &layout{gpu: w}
	l.sources[settingMin] = []source{env[envMinNumProc], env[envMinNP]}
	l.sources[settingMax] = []source{env[envMaxNumProc], env[envMaxNP]}
	l.sources[settingRequested] = []source{env[envNumProc], env[envNP]}
	l.sources[settingEpochs] = []source{env[envEpochs]}
	l.sources[settingPriority] = []source{env[envJobPriority]}
	l.sources[settingGPUType] = []source{gpu}
	l.hint = [numSettings]string{
		settingMin:     fmt.Sprintf("set env %s (or %s) on the launcher's first container, or annotation %s", envMinNumProc, envMinNP, AnnotationMinWorkers),
		settingMax:     fmt.Sprintf("set env %s (or %s) on the launcher's first container, or annotation %s", envMaxNumProc, envMaxNP, AnnotationMaxWorkers),
		settingEpochs:  fmt.Sprintf("set env %s on the launcher's first container, or annotation %s", envEpochs, AnnotationEpochs),
		settingGPUType: gpuHint,
	}
	return l, nil
}

// pyTorchJobLayout checks the parts of an elastic PyTorchJob Voda reads,
// then its GPUs, and says where each setting lives.
func pyTorchJobLayout(root map[string]any, opts Options) (*layout, *FieldError) {
	spec, err := requiredObjectAt(root, "spec", "spec", "")
	if err != nil {
		return nil, err
	}
	specs, err := requiredObjectAt(spec, "pytorchReplicaSpecs", pytorchReplicaSpecs, "; Voda needs a Worker")
	if err != nil {
		return nil, err
	}
	if specs["Master"] != nil {
		return nil, &FieldError{Field: pytorchReplicaSpecs + ".Master",
			Reason: "not supported: in an elastic PyTorchJob every pod is a Worker, and Voda resizes the Workers"}
	}
	policy, err := requiredObjectAt(spec, "elasticPolicy", elasticPolicy,
		"; Voda schedules elastic PyTorchJobs only: set minReplicas and maxReplicas (and rdzvBackend)")
	if err != nil {
		return nil, err
	}
	worker, err := readReplica(specs, "Worker", pytorchReplicaSpecs, "; Voda runs the Workers of an elastic PyTorchJob")
	if err != nil {
		return nil, err
	}
	env, err := readEnv(worker, []string{envEpochs, envJobPriority})
	if err != nil {
		return nil, err
	}
	gpu, err := acceleratorSource(worker)
	if err != nil {
		return nil, err
	}
	w, err := checkGPUs(worker, nil, opts.MultiGPUWorkers)
	if err != nil {
		return nil, err
	}
	if err := checkProcsPerNode(spec, policy, w); err != nil {
		return nil, err
	}
	l := &layout{gpu: w}
	l.sources[settingMin] = []source{numberSource(policy, "minReplicas", elasticPolicy+".minReplicas")}
	l.sources[settingMax] = []source{numberSource(policy, "maxReplicas", elasticPolicy+".maxReplicas")}
	l.sources[settingRequested] = []source{numberSource(worker.obj, "replicas", worker.path+".replicas")}
	l.sources[settingEpochs] = []source{env[envEpochs]}
	l.sources[settingPriority] = []source{env[envJobPriority]}
	l.sources[settingGPUType] = []source{gpu}
	l.hint = [numSettings]string{
		settingMin:     fmt.Sprintf("set %s.minReplicas or annotation %s", elasticPolicy, AnnotationMinWorkers),
		settingMax:     fmt.Sprintf("set %s.maxReplicas or annotation %s", elasticPolicy, AnnotationMaxWorkers),
		settingEpochs:  fmt.Sprintf("set env %s on the Worker's first container, or annotation %s", envEpochs, AnnotationEpochs),
		settingGPUType: gpuHint,
	}
	return l, nil
}

var gpuHint = fmt.Sprintf("set the Worker's nodeSelector %s, or annotation %s", LabelAccelerator, AnnotationGPUType)

// replica is one replica spec and the parts of it Voda reads.
type replica struct {
	obj  map[string]any
	path string
	// pod is template.spec; containers is its containers list, container
	// the first of them.
	pod, container         map[string]any
	containers             []any
	podPath, containerPath string
}

func readReplica(specs map[string]any, role, specsPath, why string) (replica, *FieldError) {
	r := replica{path: child(specsPath, role)}
	var err *FieldError
	if r.obj, err = requiredObjectAt(specs, role, r.path, why); err != nil {
		return r, err
	}
	tmpl, err := requiredObjectAt(r.obj, "template", child(r.path, "template"), "")
	if err != nil {
		return r, err
	}
	r.podPath = child(r.path, "template.spec")
	if r.pod, err = requiredObjectAt(tmpl, "spec", r.podPath, ""); err != nil {
		return r, err
	}
	cpath := child(r.podPath, "containers")
	containers, err := listAt(r.pod, "containers", cpath)
	if err != nil {
		return r, err
	}
	if len(containers) == 0 {
		return r, &FieldError{Field: cpath, Reason: "must list at least one container"}
	}
	r.containerPath = index(cpath, "0")
	c, ok := containers[0].(map[string]any)
	if !ok {
		return r, &FieldError{Field: r.containerPath, Value: scalarText(containers[0]),
			Reason: "must be an object, not " + typeName(containers[0])}
	}
	r.container, r.containers = c, containers
	return r, nil
}

// readEnv reads the named variables from the replica's first container.
// A variable set twice, set through valueFrom, or with a value that is not
// a string yields a source with err set.
func readEnv(r replica, names []string) (map[string]source, *FieldError) {
	epath := child(r.containerPath, "env")
	list, err := listAt(r.container, "env", epath)
	if err != nil {
		return nil, err
	}
	out := make(map[string]source, len(names))
	for _, n := range names {
		out[n] = source{field: index(epath, n)}
	}
	first := map[string]int{}
	for i, e := range list {
		ipath := index(epath, strconv.Itoa(i))
		entry, ok := e.(map[string]any)
		if !ok {
			return nil, &FieldError{Field: ipath, Value: scalarText(e),
				Reason: "must be an object with name and value, not " + typeName(e)}
		}
		name, ok, err := stringAt(entry, "name", child(ipath, "name"))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &FieldError{Field: child(ipath, "name"), Reason: "required"}
		}
		src, ours := out[name]
		if !ours {
			continue
		}
		if j, seen := first[name]; seen {
			src.err = &FieldError{Field: src.field, Value: scalarText(entry["value"]),
				Reason: fmt.Sprintf("is set twice (env[%d] and env[%d]); set it once", j, i)}
			out[name] = src
			continue
		}
		first[name] = i
		if entry["valueFrom"] != nil {
			src.err = &FieldError{Field: src.field,
				Reason: "must be a literal value, not valueFrom: Voda reads it when the job is submitted, before any pod exists"}
			out[name] = src
			continue
		}
		v, _, err := stringAt(entry, "value", src.field)
		if err != nil {
			src.err = err
		} else {
			// An entry without a value sets the variable to "".
			src.raw, src.present = v, true
		}
		out[name] = src
	}
	return out, nil
}

// acceleratorSource reads the GPU type from the replica's nodeSelector.
func acceleratorSource(r replica) (source, *FieldError) {
	npath := child(r.podPath, "nodeSelector")
	sel, err := stringMapAt(r.pod, "nodeSelector", npath)
	if err != nil {
		return source{}, err
	}
	src := source{field: index(npath, LabelAccelerator)}
	if v, ok := sel[LabelAccelerator]; ok {
		src.raw, src.present = v, true
	}
	return src, nil
}
