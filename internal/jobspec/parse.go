package jobspec

import (
	"fmt"
	"slices"
	"strings"
)

// Parse decodes one job manifest, YAML or JSON, and validates it for Voda.
// Every error it returns is a *FieldError. It reports the first problem
// found, checking in this order:
//
//  1. the body: size, emptiness, YAML syntax, a single document, its size
//     with YAML aliases expanded (before anything is expanded), duplicate
//     keys and values JSON cannot hold, its size as JSON, an object at the
//     root; the sizes are bounded by Options.MaxBytes;
//  2. kind, then apiVersion;
//  3. metadata: name (present, a DNS-1123 label, at most
//     Options.MaxNameLength long), namespace (a DNS-1123 label, one of
//     Options.Namespaces when that is not empty), annotations (string
//     values, no unknown vodascheduler/ key), labels (none under
//     vodascheduler/);
//  4. the structure Voda reads. MPIJob: spec.mpiReplicaSpecs.Launcher, then
//     .Worker, each with template.spec.containers[0]; the launcher
//     container's env list; the Worker's nodeSelector. PyTorchJob:
//     spec.pytorchReplicaSpecs, no Master, spec.elasticPolicy, then the
//     Worker with its template.spec.containers[0], that container's env
//     list and the nodeSelector;
//  5. the GPUs, one per worker: an MPIJob's spec.slotsPerWorker absent or
//     1 and spec.runLauncherAsWorker absent or false; a PyTorchJob's
//     spec.nprocPerNode and spec.elasticPolicy.nProcPerNode absent or 1;
//     the Worker's containers, of which at most one asks for
//     nvidia.com/gpu, with exactly 1, none for any other GPU resource, and
//     one must ask when there are several; then no GPU resource at all in
//     the Worker's init containers, nor in the Launcher's containers and
//     init containers (see isGPUResource for what counts as a GPU);
//  6. the settings, one after the other: min workers, max workers,
//     requested workers, epochs, priority, GPU type, simulation model. For
//     each: every source's syntax, the annotation first; then the sources'
//     agreement; then the range (worker counts at least 1 and at most
//     Options.MaxWorkers, min against max when max is checked, requested
//     against both);
//  7. model.JobSpec.Validate, which the checks above already imply;
//  8. the pod templates, in key order (Launcher before Worker), each: no
//     vodascheduler/ label or annotation on its metadata; then Voda's own
//     fields, whatever the level: no nodeName, no system-* priority class;
//     unless Options.AllowServiceAccount no serviceAccountName,
//     serviceAccount or automountServiceAccountToken: true; no
//     nodeSelector key under vodascheduler/ (but the Worker's
//     vodascheduler/accelerator); no toleration on such a key nor of
//     every taint; no node affinity term on such a key, nor on a
//     Worker's node name; no scheduling gate under vodascheduler/; then
//     the Pod Security Standards level Options.PodSecurity, with every
//     check the pod fails (see checkPodSecurity).
//
// Once the kind and API version are known, Parse also lists the fields
// Kubernetes does not know for them (see unknown.go): Spec.Warnings on a
// manifest it accepts, FieldError.Warnings on one it rejects later.
func Parse(data []byte, opts Options) (*Spec, error) {
	s, ferr := parse(data, opts.withDefaults())
	if ferr != nil {
		// Return a nil error interface, never a typed nil pointer.
		return nil, ferr
	}
	return s, nil
}

func parse(data []byte, opts Options) (*Spec, *FieldError) {
	root, err := decodeBody(data, opts.MaxBytes)
	if err != nil {
		return nil, err
	}
	kind, apiVersion, err := kindOf(root)
	if err != nil {
		return nil, err
	}
	// Before anything is checked, so that a misspelt field is told along
	// with the error it may cause ("spec.mpiReplicaSpecs: required").
	warnings := unknownFields(kind, apiVersion, root)
	s, err := parseKind(root, kind, apiVersion, opts)
	if err != nil {
		err.Warnings = warnings
		return nil, err
	}
	s.Warnings = warnings
	return s, nil
}

// parseKind checks and reads a manifest of an accepted kind and version
// (parse, from step 3).
func parseKind(root map[string]any, kind Kind, apiVersion string, opts Options) (*Spec, *FieldError) {
	meta, err := readMetadata(root, opts)
	if err != nil {
		return nil, err
	}
	var l *layout
	switch kind {
	case KindMPIJob:
		l, err = mpiJobLayout(root, opts)
	default:
		l, err = pyTorchJobLayout(root, opts)
	}
	if err != nil {
		return nil, err
	}
	l.addAnnotations(meta.annotations)
	js, simModel, err := l.resolve(opts)
	if err != nil {
		return nil, err
	}
	app, progressLog, err := measureAnnotations(meta.annotations)
	if err != nil {
		return nil, err
	}
	js.Name = meta.name
	if l.gpu.gpus > 1 {
		js.GPUsPerWorker = l.gpu.gpus // G = 1 stays 0, as stored before
	}
	if verr := js.Validate(); verr != nil {
		return nil, l.validateError(verr)
	}
	if err := checkPods(kind, root, opts); err != nil {
		return nil, err
	}
	return &Spec{
		Kind:               kind,
		APIVersion:         apiVersion,
		Name:               meta.name,
		Namespace:          meta.namespace,
		JobSpec:            js,
		Model:              simModel,
		Application:        app,
		ProgressLog:        progressLog,
		Manifest:           root,
		WorkerGPUContainer: l.gpu.container,
	}, nil
}

type acceptedKind struct {
	kind     Kind
	versions []string
}

// accepted lists the kinds and, per kind, the API versions Parse takes.
var accepted = []acceptedKind{
	{KindMPIJob, []string{APIVersionV2Beta1, APIVersionV1}},
	{KindPyTorchJob, []string{APIVersionV1}},
}

func acceptedText() string {
	parts := make([]string, len(accepted))
	for i, a := range accepted {
		parts[i] = fmt.Sprintf("%s (%s)", a.kind, joinList(a.versions))
	}
	return "accepted: " + joinList(parts)
}

func kindOf(root map[string]any) (kind Kind, apiVersion string, err *FieldError) {
	given, ok, err := stringAt(root, "kind", "kind")
	if err != nil {
		err.Reason += "; " + acceptedText()
		return "", "", err
	}
	if !ok {
		return "", "", &FieldError{Field: "kind", Reason: "required; " + acceptedText()}
	}
	i := slices.IndexFunc(accepted, func(a acceptedKind) bool { return string(a.kind) == given })
	if i < 0 {
		return "", "", &FieldError{Field: "kind", Value: given,
			Reason: fmt.Sprintf("%s is not accepted; %s", quote(given), acceptedText())}
	}
	kind, versions := accepted[i].kind, accepted[i].versions
	apiVersion, ok, err = stringAt(root, "apiVersion", "apiVersion")
	if err != nil {
		return "", "", err
	}
	if !ok {
		return "", "", &FieldError{Field: "apiVersion",
			Reason: fmt.Sprintf("required; accepted for %s: %s", kind, joinList(versions))}
	}
	if !slices.Contains(versions, apiVersion) {
		return "", "", &FieldError{Field: "apiVersion", Value: apiVersion,
			Reason: fmt.Sprintf("%s is not accepted for %s; accepted: %s", quote(apiVersion), kind, joinList(versions))}
	}
	return kind, apiVersion, nil
}

type metadata struct {
	name, namespace string
	annotations     map[string]string
}

// knownAnnotations is sorted, for messages.
var knownAnnotations = []string{
	AnnotationApplication,
	AnnotationEpochs,
	AnnotationGPUType,
	AnnotationMaxWorkers,
	AnnotationMinWorkers,
	AnnotationPriority,
	AnnotationProgressLog,
	AnnotationSimModel,
	AnnotationWorkers,
}

func readMetadata(root map[string]any, opts Options) (metadata, *FieldError) {
	var md metadata
	meta, err := requiredObjectAt(root, "metadata", "metadata", "; set metadata.name")
	if err != nil {
		return md, err
	}
	name, ok, err := stringAt(meta, "name", "metadata.name")
	if err != nil {
		return md, err
	}
	if !ok {
		why := "required"
		if meta["generateName"] != nil {
			why += "; metadata.generateName is not supported: the service makes the name unique itself"
		}
		return md, &FieldError{Field: "metadata.name", Reason: why}
	}
	if reason := checkName(name, opts.MaxNameLength); reason != "" {
		return md, &FieldError{Field: "metadata.name", Value: name, Reason: reason}
	}
	md.name = name
	ns, _, err := stringAt(meta, "namespace", "metadata.namespace")
	if err != nil {
		return md, err
	}
	if ns != "" {
		if reason := checkName(ns, maxLabelLength); reason != "" {
			return md, &FieldError{Field: "metadata.namespace", Value: ns, Reason: reason}
		}
		if len(opts.Namespaces) > 0 && !slices.Contains(opts.Namespaces, ns) {
			return md, &FieldError{Field: "metadata.namespace", Value: ns,
				Reason: fmt.Sprintf("%s is not a namespace this server creates jobs in; accepted: %s, or leave it out", quote(ns), joinList(opts.Namespaces))}
		}
	} else {
		ns = opts.DefaultNamespace
		meta["namespace"] = ns
	}
	md.namespace = ns
	md.annotations, err = stringMapAt(meta, "annotations", "metadata.annotations")
	if err != nil {
		return md, err
	}
	for _, k := range sortedKeys(md.annotations) {
		if strings.HasPrefix(k, annotationPrefix) && !slices.Contains(knownAnnotations, k) {
			return md, &FieldError{Field: index("metadata.annotations", k), Value: md.annotations[k],
				Reason: "unknown Voda annotation; known: " + joinList(knownAnnotations)}
		}
	}
	return md, checkJobLabels(meta)
}

// checkName returns why name is not a DNS-1123 label of at most maxLen
// characters, or "".
func checkName(name string, maxLen int) string {
	if name == "" {
		return "must not be empty"
	}
	if !isDNSLabel(name) {
		return fmt.Sprintf("%s must be a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit", quote(name))
	}
	if len(name) > maxLen {
		return fmt.Sprintf("is %d characters; at most %d are accepted, because the service appends -YYYYMMDD-hhmmss (and maybe -NN) to make it unique and Kubernetes label values stop at 63", len(name), maxLen)
	}
	return ""
}

func isDNSLabel(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

// isLabelValue reports whether s is a non-empty Kubernetes label value.
func isLabelValue(s string) bool {
	if s == "" || len(s) > maxLabelLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		inner := c == '-' || c == '_' || c == '.'
		if !alnum && (!inner || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

// validateError maps a model.JobSpec.Validate error ("minWorkers: ...")
// to the field the user wrote the setting in.
func (l *layout) validateError(err error) *FieldError {
	prefix, reason, ok := strings.Cut(err.Error(), ": ")
	if !ok {
		return &FieldError{Field: "spec", Reason: err.Error()}
	}
	fields := map[string]string{
		"name":             "metadata.name",
		"minWorkers":       l.field(settingMin),
		"maxWorkers":       l.field(settingMax),
		"requestedWorkers": l.field(settingRequested),
		"priority":         l.field(settingPriority),
		"epochs":           l.field(settingEpochs),
	}
	f, ok := fields[prefix]
	if !ok {
		return &FieldError{Field: "spec", Reason: err.Error()}
	}
	return &FieldError{Field: f, Reason: reason}
}
