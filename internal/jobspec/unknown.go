package jobspec

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A field Kubernetes does not know is dropped when it stores an object,
// and kube-apiserver says so with a warning, `unknown field
// "spec.slotsPerWorkr"`, which kubectl prints. Voda creates the job in
// Kubernetes later, so a misspelt field would vanish silently there;
// Parse warns of it at once, in the same words (Spec.Warnings).
//
// What is known is what Kubernetes would know: the job kinds' fields, as
// the Kubeflow operators' Go types declare them (mirrored below, since the
// package imports no Kubeflow types), with the pod templates and the
// metadata decided by Kubernetes' own types. Field names are
// case-sensitive, as in Kubernetes. A value whose type decodes itself (a
// quantity, a time, an int-or-string, an extension) is not looked into.
//
// sigs.k8s.io/json's strict decoding reports the same fields, but it
// builds every unknown field's whole path, even beyond the 100 it keeps:
// a 1 MiB manifest with a long map key above 80,000 unknown fields took it
// 15 s of CPU. unknownFields walks the decoded manifest once and builds
// the paths of the fields it reports only.

// Bounds of Spec.Warnings, so that a manifest with thousands of unknown
// fields, or with a huge key, gives a short answer: at most
// maxUnknownFields warnings, each path cut at maxWarningPath runes, and
// one more that counts the fields not listed. kube-apiserver keeps its
// warnings within 4 KiB; so do these.
const (
	maxUnknownFields = 20
	maxWarningPath   = 160
)

// The Kubeflow job kinds, as their operators' Go types declare them:
// mpi-operator v0.6.0 to v0.8.2 for MPIJob kubeflow.org/v2beta1,
// training-operator v1.9.0 for MPIJob and PyTorchJob kubeflow.org/v1.
// Only the JSON names and the types of the fields matter here.
type (
	kubeflowJob[S any] struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
		Spec       S                 `json:"spec"`
		// Status is the operator's; Kubernetes ignores it in a new
		// object.
		Status any `json:"status"`
	}

	replicaSpec struct {
		Replicas      *int32                 `json:"replicas"`
		Template      corev1.PodTemplateSpec `json:"template"`
		RestartPolicy string                 `json:"restartPolicy"`
	}

	schedulingPolicy struct {
		MinAvailable           *int32               `json:"minAvailable"`
		Queue                  string               `json:"queue"`
		MinResources           *corev1.ResourceList `json:"minResources"`
		PriorityClass          string               `json:"priorityClass"`
		ScheduleTimeoutSeconds *int32               `json:"scheduleTimeoutSeconds"`
	}

	runPolicy struct {
		CleanPodPolicy          *string           `json:"cleanPodPolicy"`
		TTLSecondsAfterFinished *int32            `json:"ttlSecondsAfterFinished"`
		ActiveDeadlineSeconds   *int64            `json:"activeDeadlineSeconds"`
		BackoffLimit            *int32            `json:"backoffLimit"`
		SchedulingPolicy        *schedulingPolicy `json:"schedulingPolicy"`
		Suspend                 *bool             `json:"suspend"`
		ManagedBy               *string           `json:"managedBy"`
	}

	// mpiJobSpecV2Beta1 is mpi-operator's MPIJobSpec.
	mpiJobSpecV2Beta1 struct {
		SlotsPerWorker         *int32                  `json:"slotsPerWorker"`
		RunLauncherAsWorker    *bool                   `json:"runLauncherAsWorker"`
		RunPolicy              runPolicy               `json:"runPolicy"`
		MPIReplicaSpecs        map[string]*replicaSpec `json:"mpiReplicaSpecs"`
		SSHAuthMountPath       string                  `json:"sshAuthMountPath"`
		LauncherCreationPolicy string                  `json:"launcherCreationPolicy"`
		MPIImplementation      string                  `json:"mpiImplementation"`
	}

	// mpiJobSpecV1 is training-operator's MPIJobSpec.
	mpiJobSpecV1 struct {
		SlotsPerWorker  *int32                  `json:"slotsPerWorker"`
		CleanPodPolicy  *string                 `json:"cleanPodPolicy"`
		MPIReplicaSpecs map[string]*replicaSpec `json:"mpiReplicaSpecs"`
		MainContainer   string                  `json:"mainContainer"`
		RunPolicy       runPolicy               `json:"runPolicy"`
	}

	// pyTorchJobSpec is training-operator's PyTorchJobSpec.
	pyTorchJobSpec struct {
		RunPolicy           runPolicy               `json:"runPolicy"`
		ElasticPolicy       *elasticPolicyFields    `json:"elasticPolicy"`
		PyTorchReplicaSpecs map[string]*replicaSpec `json:"pytorchReplicaSpecs"`
		NprocPerNode        *string                 `json:"nprocPerNode"`
	}

	elasticPolicyFields struct {
		MinReplicas *int32  `json:"minReplicas"`
		MaxReplicas *int32  `json:"maxReplicas"`
		RDZVBackend *string `json:"rdzvBackend"`
		RDZVPort    *int32  `json:"rdzvPort"`
		RDZVHost    *string `json:"rdzvHost"`
		RDZVID      *string `json:"rdzvId"`
		RDZVConf    []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"rdzvConf"`
		Standalone   *bool                      `json:"standalone"`
		NProcPerNode *int32                     `json:"nProcPerNode"`
		MaxRestarts  *int32                     `json:"maxRestarts"`
		Metrics      []autoscalingv2.MetricSpec `json:"metrics"`
	}
)

// jobShapes are the known fields of each kind and API version Parse
// accepts.
var jobShapes = map[[2]string]reflect.Type{
	{string(KindMPIJob), APIVersionV2Beta1}: reflect.TypeFor[kubeflowJob[mpiJobSpecV2Beta1]](),
	{string(KindMPIJob), APIVersionV1}:      reflect.TypeFor[kubeflowJob[mpiJobSpecV1]](),
	{string(KindPyTorchJob), APIVersionV1}:  reflect.TypeFor[kubeflowJob[pyTorchJobSpec]](),
}

// unknownFields returns a warning for each field of the manifest that
// the kind does not know, in the order of a depth-first walk with keys
// in sorted order, bounded as the constants above say.
func unknownFields(kind Kind, apiVersion string, root map[string]any) []string {
	t, ok := jobShapes[[2]string{string(kind), apiVersion}]
	if !ok {
		return nil
	}
	var w fieldWalker
	w.walk(root, t)
	switch more := w.found - len(w.warnings); {
	case more == 1:
		w.warnings = append(w.warnings, "1 more unknown field not listed")
	case more > 1:
		w.warnings = append(w.warnings, fmt.Sprintf("%d more unknown fields not listed", more))
	}
	return w.warnings
}

// fieldWalker walks a decoded manifest along a Go type. path holds the
// keys (string) and list indexes (int) from the root to the value being
// walked; a path is written out only for a field that is reported.
type fieldWalker struct {
	path     []any
	found    int
	warnings []string
}

func (w *fieldWalker) walk(v any, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(obj) {
			w.path = append(w.path, k)
			if ft, ok := fields[k]; ok {
				w.walk(obj[k], ft)
			} else {
				w.report()
			}
			w.path = w.path[:len(w.path)-1]
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, k := range sortedKeys(obj) {
			w.path = append(w.path, k)
			w.walk(obj[k], t.Elem())
			w.path = w.path[:len(w.path)-1]
		}
	case reflect.Slice, reflect.Array:
		list, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range list {
			w.path = append(w.path, i)
			w.walk(e, t.Elem())
			w.path = w.path[:len(w.path)-1]
		}
	}
}

// report counts the field at w.path and, within the bound, warns of it
// as kube-apiserver does: unknown field "spec.slotsPerWorkr".
func (w *fieldWalker) report() {
	w.found++
	if len(w.warnings) >= maxUnknownFields {
		return
	}
	var b strings.Builder
	for _, p := range w.path {
		if b.Len() > maxWarningPath*utf8.UTFMax {
			break
		}
		switch p := p.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			// A huge key is cut here already; quoteCut cuts the path.
			b.WriteString(p[:min(len(p), maxWarningPath*utf8.UTFMax+1)])
		case int:
			b.WriteString("[" + strconv.Itoa(p) + "]")
		}
	}
	w.warnings = append(w.warnings, "unknown field "+quoteCut(b.String(), maxWarningPath))
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesItself reports whether values of t decode themselves (a
// resource.Quantity, a metav1.Time, an intstr.IntOrString, a
// runtime.RawExtension) or take any JSON (an interface): their insides are
// not fields.
func decodesItself(t reflect.Type) bool {
	if t.Kind() == reflect.Interface {
		return true
	}
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler)
}

// jsonFieldsCache caches jsonFields by type.
var jsonFieldsCache sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields maps the JSON names of a struct's fields to their types, as
// encoding/json names them: the json tag's name, else the Go name; "-"
// is no field; an embedded struct without a name in its tag (Kubernetes'
// `json:",inline"`) lends its fields, where the struct has no field of
// the same name.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := jsonFieldsCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			embedded = append(embedded, ft)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	for _, et := range embedded {
		for name, ft := range jsonFields(et) {
			if _, ok := m[name]; !ok {
				m[name] = ft
			}
		}
	}
	jsonFieldsCache.Store(t, m)
	return m
}
