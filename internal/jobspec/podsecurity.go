package jobspec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	sigsjson "sigs.k8s.io/json"
)

// Voda creates the job from the manifest with its own Kubernetes
// credentials, so whatever the manifest's pod templates ask for, Voda
// grants: a privileged container or a hostPath of / on a GPU node, a pod
// in kube-system, a service account's token, a launcher that Voda mistakes
// for another job's worker. Every pod template of the manifest is checked
// here, before anything is stored: against a Kubernetes Pod Security
// Standards level (Options.PodSecurity), with the upstream checks the
// PodSecurity admission controller runs, and against the fields Voda owns
// itself, whatever the level.

// Pod Security Standards levels for Options.PodSecurity.
const (
	PodSecurityPrivileged = string(psaapi.LevelPrivileged)
	PodSecurityBaseline   = string(psaapi.LevelBaseline)
	PodSecurityRestricted = string(psaapi.LevelRestricted)
	// DefaultPodSecurity is the level of an empty Options.PodSecurity.
	DefaultPodSecurity = PodSecurityBaseline
)

// PodSecurityLevels lists the accepted Options.PodSecurity values, most
// permissive first.
var PodSecurityLevels = []string{PodSecurityPrivileged, PodSecurityBaseline, PodSecurityRestricted}

// CheckPodSecurity returns an error unless level is one of
// PodSecurityLevels or empty (DefaultPodSecurity).
func CheckPodSecurity(level string) error {
	if level == "" || slices.Contains(PodSecurityLevels, level) {
		return nil
	}
	return fmt.Errorf("pod security level %s is not one of %s", quote(level), joinList(PodSecurityLevels))
}

// podSecurityLevel is the level Parse applies: the default for "", and
// restricted, the strictest, for a value CheckPodSecurity refuses, so
// that a misspelt level opens nothing.
func podSecurityLevel(level string) psaapi.Level {
	if level == "" {
		return psaapi.LevelBaseline
	}
	l, err := psaapi.ParseLevel(level)
	if err != nil {
		return psaapi.LevelRestricted
	}
	return l
}

// evaluator holds the upstream checks; building it validates them, once.
var evaluator = sync.OnceValues(func() (policy.Evaluator, error) {
	return policy.NewEvaluator(policy.DefaultChecks())
})

// The fields of a pod spec Voda owns or refuses to grant.
const (
	fieldNodeName         = "nodeName"
	fieldServiceAccount   = "serviceAccount"
	fieldServiceAccountNm = "serviceAccountName"
	fieldAutomountSAToken = "automountServiceAccountToken"
	fieldPriorityClass    = "priorityClassName"
	systemPriorityPrefix  = "system-"
	nodeNameMatchField    = "metadata.name"
	tolerationOpExists    = "Exists"
)

// checkPods checks every pod template under the kind's replica specs, in
// key order (Launcher before Worker), each as checkPodTemplate says.
// Parse has checked the replica specs Voda reads; a replica spec of
// another role is checked too when it has a template, since the operator
// may make pods of it.
func checkPods(kind Kind, root map[string]any, opts Options) *FieldError {
	key, path := "mpiReplicaSpecs", mpiReplicaSpecs
	if kind == KindPyTorchJob {
		key, path = "pytorchReplicaSpecs", pytorchReplicaSpecs
	}
	specs, _ := dig(root, "spec", key)
	m, _ := specs.(map[string]any)
	for _, role := range sortedKeys(m) {
		rpath := child(path, role)
		r, err := objectAt(m, role, rpath)
		if err != nil {
			return err
		}
		if r == nil {
			continue
		}
		tpath := child(rpath, "template")
		tmpl, err := objectAt(r, "template", tpath)
		if err != nil {
			return err
		}
		if tmpl == nil {
			continue
		}
		if err := checkPodTemplate(tmpl, tpath, role == "Worker", opts); err != nil {
			return err
		}
	}
	return nil
}

// checkPodTemplate checks one pod template at tpath: first Voda's own
// rules (checkVodaFields), then the template as Kubernetes would read it
// against the Pod Security Standards level.
func checkPodTemplate(tmpl map[string]any, tpath string, worker bool, opts Options) *FieldError {
	mpath, spath := child(tpath, "metadata"), child(tpath, "spec")
	meta, err := objectAt(tmpl, "metadata", mpath)
	if err != nil {
		return err
	}
	for _, key := range []string{"labels", "annotations"} {
		if err := noVodaKeys(meta, key, child(mpath, key)); err != nil {
			return err
		}
	}
	spec, err := objectAt(tmpl, "spec", spath)
	if err != nil || spec == nil {
		return err
	}
	if err := checkVodaFields(spec, spath, worker, opts); err != nil {
		return err
	}
	var podMeta metav1.ObjectMeta
	if err := decodeAs(meta, &podMeta); err != nil {
		return &FieldError{Field: mpath, Reason: "is not valid pod metadata: " + err.Error()}
	}
	var pod corev1.PodSpec
	if err := decodeAs(spec, &pod); err != nil {
		return &FieldError{Field: spath, Reason: "is not a valid pod spec: " + err.Error()}
	}
	return checkPodSecurity(&podMeta, &pod, spath, opts.PodSecurity)
}

// decodeAs decodes a part of the manifest into a Kubernetes type as the
// API server would: field names are case-sensitive. Go's encoding/json
// would let "hostnetwork": false override "hostNetwork": true, which
// Kubernetes reads as true.
func decodeAs(obj map[string]any, into any) error {
	if obj == nil {
		return nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return sigsjson.UnmarshalCaseSensitivePreserveInts(b, into)
}

// checkPodSecurity evaluates a pod against the level with the upstream
// checks and rejects it at spath with every check it fails, worded as
// the PodSecurity admission controller words them.
func checkPodSecurity(meta *metav1.ObjectMeta, pod *corev1.PodSpec, spath, level string) *FieldError {
	l := podSecurityLevel(level)
	if l == psaapi.LevelPrivileged {
		return nil
	}
	ev, err := evaluator()
	if err != nil {
		// The upstream checks are fixed at build time; refuse rather than
		// let the pod through unchecked.
		return &FieldError{Field: spath, Reason: "cannot be checked against the Pod Security Standards: " + err.Error()}
	}
	lv := psaapi.LevelVersion{Level: l, Version: psaapi.LatestVersion()}
	agg := policy.AggregateCheckResults(ev.EvaluatePod(lv, meta, pod))
	if agg.Allowed {
		return nil
	}
	failed := make([]string, len(agg.ForbiddenReasons))
	for i, reason := range agg.ForbiddenReasons {
		failed[i] = reason
		if d := agg.ForbiddenDetails[i]; d != "" {
			failed[i] += " (" + d + ")"
		}
	}
	return &FieldError{Field: spath,
		Reason: fmt.Sprintf("violates PodSecurity %q: %s; this server accepts pods at Pod Security Standards level %s (voda server --pod-security)",
			lv.String(), strings.Join(failed, ", "), l)}
}

// checkVodaFields refuses, whatever the Pod Security level, the pod spec
// fields that would take from Voda a decision it makes itself (where a
// pod runs, what it is labelled or gated with) or lend the pod
// credentials: nodeName; a system-* priority class; nodeSelector keys, node affinity keys,
// tolerations and scheduling gates under Voda's prefix (except the
// Worker's nodeSelector vodascheduler/accelerator, which names the GPU
// type); a toleration of every taint; a Worker node affinity on the
// node's name, which is how Voda places workers; and, unless
// Options.AllowServiceAccount, a service account or its token.
func checkVodaFields(spec map[string]any, spath string, worker bool, opts Options) *FieldError {
	if v := spec[fieldNodeName]; v != nil {
		return &FieldError{Field: child(spath, fieldNodeName), Value: scalarText(v),
			Reason: "is not accepted: Voda and the Kubernetes scheduler choose the node; a pod with nodeName skips both"}
	}
	if !opts.AllowServiceAccount {
		for _, f := range []string{fieldServiceAccountNm, fieldServiceAccount} {
			if v := spec[f]; v != nil {
				return &FieldError{Field: child(spath, f), Value: scalarText(v),
					Reason: "is not accepted: this server does not let jobs run as a service account (voda server --allow-service-account)"}
			}
		}
		if v := spec[fieldAutomountSAToken]; v != nil && v != false {
			return &FieldError{Field: child(spath, fieldAutomountSAToken), Value: scalarText(v),
				Reason: fmt.Sprintf("%v is not accepted: this server does not mount service account tokens into jobs (voda server --allow-service-account); leave it out or set it to false", v)}
		}
	}
	if v, _ := spec[fieldPriorityClass].(string); strings.HasPrefix(v, systemPriorityPrefix) {
		return &FieldError{Field: child(spath, fieldPriorityClass), Value: v,
			Reason: fmt.Sprintf("%s is not accepted: the %s priority classes are Kubernetes' own, for pods the cluster cannot run without; at that priority a job would preempt any other pod", quote(v), systemPriorityPrefix+"*")}
	}
	npath := child(spath, "nodeSelector")
	sel, err := stringMapAt(spec, "nodeSelector", npath)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(sel) {
		if isVodaKey(k) && !(worker && k == LabelAccelerator) {
			return &FieldError{Field: index(npath, k), Value: sel[k], Reason: vodaKeyReason(k, "node selector")}
		}
	}
	if err := checkTolerations(spec, child(spath, "tolerations")); err != nil {
		return err
	}
	if err := checkNodeAffinity(spec, child(spath, "affinity.nodeAffinity"), worker); err != nil {
		return err
	}
	return checkSchedulingGates(spec, child(spath, "schedulingGates"))
}

// isVodaKey reports whether a label, annotation, taint or gate name is
// under Voda's prefix.
func isVodaKey(k string) bool {
	return strings.HasPrefix(k, annotationPrefix)
}

func vodaKeyReason(k, what string) string {
	return fmt.Sprintf("%s is a %s on Voda's own key: keys under %s are set by Voda, not by jobs", quote(k), what, annotationPrefix)
}

// noVodaKeys refuses a label or annotation (obj[key], at path) under
// Voda's prefix on a pod template: Voda labels the pods it manages, and
// takes a pod carrying vodascheduler/job for one of that job's.
func noVodaKeys(obj map[string]any, key, path string) *FieldError {
	m, err := stringMapAt(obj, key, path)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		if isVodaKey(k) {
			why := fmt.Sprintf("is not accepted: keys under %s on pods are set by Voda, not by jobs", annotationPrefix)
			if key == "annotations" && slices.Contains(knownAnnotations, k) {
				why += "; Voda's settings go on the job's metadata.annotations"
			}
			return &FieldError{Field: index(path, k), Value: m[k], Reason: why}
		}
	}
	return nil
}

// checkJobLabels refuses a label under Voda's prefix on the job object:
// Voda labels the jobs it creates (vodascheduler/job names the job whose
// pods these are). Voda's settings are annotations, not labels.
func checkJobLabels(meta map[string]any) *FieldError {
	const path = "metadata.labels"
	m, err := stringMapAt(meta, "labels", path)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		if isVodaKey(k) {
			return &FieldError{Field: index(path, k), Value: m[k],
				Reason: fmt.Sprintf("is not accepted: labels under %s are set by Voda; Voda's settings are annotations (metadata.annotations)", annotationPrefix)}
		}
	}
	return nil
}

func checkTolerations(spec map[string]any, path string) *FieldError {
	list, err := listAt(spec, "tolerations", path)
	if err != nil {
		return err
	}
	for i, t := range list {
		ipath := index(path, strconv.Itoa(i))
		tol, ok := t.(map[string]any)
		if !ok {
			return &FieldError{Field: ipath, Value: scalarText(t), Reason: "must be an object, not " + typeName(t)}
		}
		key, _, err := stringAt(tol, "key", child(ipath, "key"))
		if err != nil {
			return err
		}
		if isVodaKey(key) {
			return &FieldError{Field: child(ipath, "key"), Value: key, Reason: vodaKeyReason(key, "toleration")}
		}
		if key == "" && tol["operator"] == tolerationOpExists {
			return &FieldError{Field: ipath,
				Reason: "is not accepted: a toleration with operator Exists and no key tolerates every taint, Voda's and the cluster's own; name the taint's key"}
		}
	}
	return nil
}

// checkNodeAffinity refuses node affinity terms on Voda's keys, and on a
// Worker a term on the node's name (metadata.name), which is how Voda
// places workers.
func checkNodeAffinity(spec map[string]any, path string, worker bool) *FieldError {
	na, _ := dig(spec, "affinity", "nodeAffinity")
	nam, _ := na.(map[string]any)
	if nam == nil {
		return nil
	}
	type term struct {
		obj  map[string]any
		path string
	}
	var terms []term
	rpath := child(path, "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms")
	req, _ := dig(nam, "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	reqList, _ := req.([]any)
	for i, t := range reqList {
		if m, ok := t.(map[string]any); ok {
			terms = append(terms, term{m, index(rpath, strconv.Itoa(i))})
		}
	}
	ppath := child(path, "preferredDuringSchedulingIgnoredDuringExecution")
	pref, _ := nam["preferredDuringSchedulingIgnoredDuringExecution"].([]any)
	for i, t := range pref {
		if m, ok := dig(t, "preference"); ok {
			if mm, ok := m.(map[string]any); ok {
				terms = append(terms, term{mm, child(index(ppath, strconv.Itoa(i)), "preference")})
			}
		}
	}
	for _, t := range terms {
		for _, list := range []string{"matchExpressions", "matchFields"} {
			reqs, _ := t.obj[list].([]any)
			for j, r := range reqs {
				key, _ := dig(r, "key")
				k, _ := key.(string)
				kpath := child(index(child(t.path, list), strconv.Itoa(j)), "key")
				if isVodaKey(k) {
					return &FieldError{Field: kpath, Value: k, Reason: vodaKeyReason(k, "node affinity term")}
				}
				if worker && list == "matchFields" && k == nodeNameMatchField {
					return &FieldError{Field: kpath, Value: k,
						Reason: "is not accepted on a Worker: Voda chooses each worker's node and requires it by metadata.name itself"}
				}
			}
		}
	}
	return nil
}

// checkSchedulingGates refuses a scheduling gate under Voda's prefix:
// Voda gates the workers it has yet to place, and removes only its gate.
func checkSchedulingGates(spec map[string]any, path string) *FieldError {
	gates, _ := spec["schedulingGates"].([]any)
	for i, g := range gates {
		name, _ := dig(g, "name")
		if n, _ := name.(string); isVodaKey(n) {
			return &FieldError{Field: child(index(path, strconv.Itoa(i)), "name"), Value: n, Reason: vodaKeyReason(n, "scheduling gate")}
		}
	}
	return nil
}
