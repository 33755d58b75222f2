package jobspec

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/vodascheduler/voda/internal/model"
)

// Kind is a job manifest's kind: KindMPIJob or KindPyTorchJob. It is
// stored and shown as the plain string.
type Kind string

// Kinds and API versions Parse accepts.
const (
	KindMPIJob     Kind = "MPIJob"
	KindPyTorchJob Kind = "PyTorchJob"

	// APIVersionV1 is the training-operator's group version (MPIJob and
	// PyTorchJob); the original Voda submitted kubeflow.org/v1 MPIJobs.
	APIVersionV1 = "kubeflow.org/v1"
	// APIVersionV2Beta1 is the mpi-operator's MPIJob.
	APIVersionV2Beta1 = "kubeflow.org/v2beta1"
)

// Annotations on metadata.annotations that carry Voda's settings. They
// work for every kind and may replace the environment variables, the
// elastic policy and the nodeSelector; where both are given they must
// agree. Every other key under the vodascheduler/ prefix is rejected, so
// that a misspelt setting is not silently ignored.
const (
	AnnotationMinWorkers = "vodascheduler/min-workers"
	AnnotationMaxWorkers = "vodascheduler/max-workers"
	AnnotationWorkers    = "vodascheduler/workers"
	AnnotationEpochs     = "vodascheduler/epochs"
	AnnotationPriority   = "vodascheduler/priority"
	AnnotationGPUType    = "vodascheduler/gpu-type"
	// AnnotationSimModel names the performance model a simulated cluster
	// runs the job with; a real cluster ignores it.
	AnnotationSimModel = "vodascheduler/sim-model"

	// annotationPrefix is reserved for the annotations above and those
	// in measure.go.
	annotationPrefix = "vodascheduler/"
)

// LabelAccelerator is the node label naming a node's GPU type; a worker
// template's nodeSelector on it is how the original named the GPU type.
const LabelAccelerator = "vodascheduler/accelerator"

// EnvJobName is the launcher environment variable Rename sets to the
// job's unique name, so the training script can find its own files.
const EnvJobName = "JOB_NAME"

// Defaults for the zero fields of Options.
const (
	DefaultMaxBytes      = 1 << 20
	DefaultMaxNameLength = 40
	DefaultMaxPriority   = 100
	DefaultMaxWorkers    = 1024
	DefaultNamespace     = "default"
)

// maxLabelLength bounds a DNS-1123 label and a Kubernetes label value.
const maxLabelLength = 63

// Options tune Parse. The zero value is ready to use.
type Options struct {
	// MaxBytes bounds the body as received, the manifest with its YAML
	// aliases expanded, and the manifest as JSON (Spec.JSON before
	// Rename); 0 (or less) means DefaultMaxBytes.
	MaxBytes int
	// MaxNameLength bounds metadata.name; 0 (or less) means
	// DefaultMaxNameLength, above 63 means 63. The service appends
	// "-YYYYMMDD-hhmmss" and maybe "-NN" to make the name unique, and the
	// result must stay a Kubernetes label value (at most 63 characters),
	// hence 40. A manifest Rename gave its unique name needs 63 to parse
	// again.
	MaxNameLength int
	// MaxPriority is the largest (least urgent) priority accepted; 0 (or
	// less) means DefaultMaxPriority. Priority 0 is the most urgent.
	MaxPriority int
	// GPUTypes, when not empty, lists the GPU types the cluster has; a
	// job asking for another one is rejected rather than left waiting.
	GPUTypes []string
	// Models, when not empty, lists the performance models the simulated
	// cluster knows; the vodascheduler/sim-model annotation must name one.
	Models []string
	// MaxWorkers is the most GPUs one job may ask for as its minimum,
	// maximum or requested count (workers x G); 0 (or less) means
	// DefaultMaxWorkers.
	MaxWorkers int
	// MultiGPUWorkers accepts workers of several GPUs (nvidia.com/gpu: G
	// with G > 1 on the worker container). Without it such a manifest is
	// rejected: until the scheduler places them, a worker is one GPU.
	MultiGPUWorkers bool
	// RequireEpochs rejects jobs that do not say how many epochs they
	// train. Without it a missing count is 0, meaning unknown.
	RequireEpochs bool
	// PodSecurity is the Kubernetes Pod Security Standards level every
	// pod template must meet: PodSecurityPrivileged, PodSecurityBaseline
	// or PodSecurityRestricted; empty means DefaultPodSecurity (baseline),
	// and a value CheckPodSecurity refuses means restricted. Voda's own
	// fields are refused at every level (see Parse).
	PodSecurity string
	// AllowServiceAccount accepts pod templates that name a service
	// account or set automountServiceAccountToken: true. Without it they
	// are rejected: the job would act with that account's rights.
	AllowServiceAccount bool
	// Namespaces, when not empty, lists the namespaces a manifest's
	// metadata.namespace may name; empty accepts any. A manifest without
	// one is accepted either way: it goes to DefaultNamespace.
	Namespaces []string
	// DefaultNamespace is the namespace of a manifest that names none
	// (the package's DefaultNamespace when empty). Parse writes it into
	// the manifest, so that a stored job says where it runs.
	DefaultNamespace string
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxNameLength <= 0 {
		o.MaxNameLength = DefaultMaxNameLength
	}
	o.MaxNameLength = min(o.MaxNameLength, maxLabelLength)
	if o.MaxWorkers <= 0 {
		o.MaxWorkers = DefaultMaxWorkers
	}
	if o.MaxPriority <= 0 {
		o.MaxPriority = DefaultMaxPriority
	}
	o.GPUTypes = sortedCopy(o.GPUTypes)
	o.Models = sortedCopy(o.Models)
	o.Namespaces = sortedCopy(o.Namespaces)
	if o.DefaultNamespace == "" {
		o.DefaultNamespace = DefaultNamespace
	}
	return o
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// Spec is an accepted job manifest.
type Spec struct {
	// Kind is KindMPIJob or KindPyTorchJob; APIVersion is the manifest's.
	Kind       Kind
	APIVersion string
	// Name is metadata.name.
	Name string
	// Namespace is metadata.namespace, which Parse sets to
	// Options.DefaultNamespace when the manifest names none.
	Namespace string
	// JobSpec is what the scheduler needs; its SubmitTime is zero.
	JobSpec model.JobSpec
	// Model is the vodascheduler/sim-model annotation, empty if absent.
	Model string
	// Application is the vodascheduler/application annotation, empty if
	// absent.
	Application string
	// ProgressLog is the vodascheduler/progress-log annotation (checked
	// with CompileProgressLog), empty if absent.
	ProgressLog string
	// WorkerGPUContainer is the index, in the Worker pod template's
	// containers, of the container that gets the worker's GPUs: the one
	// that asks for nvidia.com/gpu (G of them, JobSpec.GPUsPerWorker), or
	// 0 when the template's single container asks for none (G = 1).
	// Whoever builds the pods gives that container nvidia.com/gpu: G, and
	// no other container any GPU.
	// WorkerGPUContainer(Kind, Manifest) computes it from a manifest.
	WorkerGPUContainer int
	// Warnings name the manifest's fields that Kubernetes does not know
	// for its kind (`unknown field "spec.slotsPerWorkr"`, as
	// kube-apiserver words them): they are accepted and ignored, as
	// Kubernetes ignores them, so a misspelt one may leave a setting at
	// its default. At most 21 warnings: 20 fields (paths cut at 160
	// characters) and one that counts the rest; nil when there are none.
	Warnings []string
	// Manifest is the decoded manifest. JSON numbers are json.Number, so
	// that integers survive unchanged.
	Manifest map[string]any
}

// Rename gives the job a new name: metadata.name, Name, JobSpec.Name and,
// for an MPIJob, the launcher's JOB_NAME environment variable, which is
// added to the launcher's first container if absent. The stored manifest
// thus carries the unique name the service chose. Rename does not check
// the name; the caller builds it from an accepted one.
func (s *Spec) Rename(name string) {
	s.Name = name
	s.JobSpec.Name = name
	if s.Manifest == nil {
		s.Manifest = map[string]any{}
	}
	meta, ok := s.Manifest["metadata"].(map[string]any)
	if !ok {
		meta = map[string]any{}
		s.Manifest["metadata"] = meta
	}
	meta["name"] = name
	if s.Kind == KindMPIJob {
		setLauncherJobName(s.Manifest, name)
	}
}

// setLauncherJobName sets JOB_NAME on the launcher's first container. A
// manifest without that container (one Parse did not accept) is left as
// it is.
func setLauncherJobName(manifest map[string]any, name string) {
	c, ok := dig(manifest, "spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "containers")
	if !ok {
		return
	}
	containers, ok := c.([]any)
	if !ok || len(containers) == 0 {
		return
	}
	container, ok := containers[0].(map[string]any)
	if !ok {
		return
	}
	env, _ := container["env"].([]any)
	found := false
	for _, e := range env {
		entry, ok := e.(map[string]any)
		if !ok || entry["name"] != EnvJobName {
			continue
		}
		// Every entry: Kubernetes lets the last of duplicates win.
		entry["value"] = name
		delete(entry, "valueFrom")
		found = true
	}
	if !found {
		container["env"] = append(env, map[string]any{"name": EnvJobName, "value": name})
	}
}

// dig follows keys through nested objects.
func dig(v any, keys ...string) (any, bool) {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// JSON encodes the manifest. Object keys come out sorted, so equal
// manifests encode to equal bytes.
func (s *Spec) JSON() ([]byte, error) {
	b, err := json.Marshal(s.Manifest)
	if err != nil {
		return nil, fmt.Errorf("encode manifest of job %s: %w", s.Name, err)
	}
	return b, nil
}

// FieldError is why Parse rejected a manifest.
type FieldError struct {
	// Field locates the problem in the manifest, JSON-path style:
	// "metadata.name", "spec.elasticPolicy.minReplicas",
	// "metadata.annotations[vodascheduler/priority]",
	// "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].env[NP]".
	// "body" is the request body as a whole.
	Field string
	// Value is the offending value as written, empty when the field is
	// missing or not a scalar.
	Value string
	// Reason says what is wrong and, where it helps, what is accepted.
	Reason string
	// Warnings are Spec.Warnings of a manifest that was rejected after
	// its kind and API version were found: a misspelt field is often
	// why a required one is missing.
	Warnings []string
}

// Error implements error as "<field>: <reason>".
func (e *FieldError) Error() string {
	return e.Field + ": " + e.Reason
}
