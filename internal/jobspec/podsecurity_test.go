package jobspec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	launcherPod = "spec.mpiReplicaSpecs.Launcher.template.spec"
	workerPod   = "spec.mpiReplicaSpecs.Worker.template.spec"
	// mpiLauncherSpec and mpiWorkerSpec start baseMPIJob's launcher and
	// worker pod specs, for edits.
	mpiLauncherSpec = "        spec:\n          containers:\n          - name: launcher\n"
	mpiWorkerSpec   = "        spec:\n          nodeSelector:\n"
)

// launcherPodSpec and workerPodSpec add YAML lines, indented by 10
// spaces, to baseMPIJob's launcher or worker pod spec.
func launcherPodSpec(lines string) string {
	return edit(baseMPIJob, mpiLauncherSpec, "        spec:\n"+lines+"          containers:\n          - name: launcher\n")
}

func workerPodSpec(lines string) string {
	return edit(baseMPIJob, mpiWorkerSpec, "        spec:\n"+lines+"          nodeSelector:\n")
}

// workerContainer adds YAML lines, indented by 12 spaces, to baseMPIJob's
// worker container.
func workerContainer(lines string) string {
	return edit(baseMPIJob, mpiWorkerContainer, mpiWorkerContainer+lines)
}

// templateMeta gives baseMPIJob's launcher (or worker) pod template
// metadata, YAML lines indented by 10 spaces.
func templateMeta(worker bool, lines string) string {
	if worker {
		return edit(baseMPIJob, mpiWorkerSpec, "        metadata:\n"+lines+mpiWorkerSpec)
	}
	return edit(baseMPIJob, mpiLauncherSpec, "        metadata:\n"+lines+mpiLauncherSpec)
}

// restrictedSC is a container securityContext that meets restricted.
const restrictedSC = "{allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}"

// restrictedJob is baseMPIJob meeting restricted, with the worker
// container's securityContext sc (YAML flow mapping).
func restrictedJob(sc string) string {
	return edit(workerContainer("            securityContext: "+sc+"\n"),
		mpiLauncherImage, "            image: horovod/horovod:0.28.1\n            securityContext: "+restrictedSC+"\n            env:\n")
}

var (
	restricted  = Options{PodSecurity: PodSecurityRestricted}
	privileged  = Options{PodSecurity: PodSecurityPrivileged}
	teamOptions = Options{Namespaces: []string{"default", "team-a"}}
)

// hostileInputs are manifests that would have Voda create what its user
// may not: one case per rule, each rejected at the field named. It is
// both a test (TestHostileInputs) and the second table in
// docs/job-spec.md (TestBadInputsDoc).
var hostileInputs = []struct {
	what   string
	opts   Options
	input  string
	field  string
	reason string // a substring of the reason
}{
	{"metadata.namespace: kube-system (server takes default, team-a)", teamOptions, edit(baseMPIJob, "  name: mnist\n", "  name: mnist\n  namespace: kube-system\n"), "metadata.namespace", `"kube-system" is not a namespace this server creates jobs in; accepted: default, team-a`},
	{"job labelled vodascheduler/job: other", Options{}, edit(baseMPIJob, "  name: mnist\n", "  name: mnist\n  labels: {vodascheduler/job: other}\n"), "metadata.labels[vodascheduler/job]", "labels under vodascheduler/ are set by Voda"},
	{"launcher template labelled vodascheduler/job: other", Options{}, templateMeta(false, "          labels: {vodascheduler/job: other}\n"), "spec.mpiReplicaSpecs.Launcher.template.metadata.labels[vodascheduler/job]", "keys under vodascheduler/ on pods are set by Voda"},
	{"worker template annotated vodascheduler/priority", Options{}, templateMeta(true, "          annotations: {vodascheduler/priority: \"0\"}\n"), "spec.mpiReplicaSpecs.Worker.template.metadata.annotations[vodascheduler/priority]", "Voda's settings go on the job's metadata.annotations"},
	{"nodeName on the worker", Options{}, workerPodSpec("          nodeName: gpu-node-1\n"), workerPod + ".nodeName", "a pod with nodeName skips both"},
	{"nodeName at level privileged", privileged, launcherPodSpec("          nodeName: control-plane\n"), launcherPod + ".nodeName", "Voda and the Kubernetes scheduler choose the node"},
	{"priorityClassName: system-node-critical", Options{}, workerPodSpec("          priorityClassName: system-node-critical\n"), workerPod + ".priorityClassName", "at that priority a job would preempt any other pod"},
	{"serviceAccountName on the launcher", Options{}, launcherPodSpec("          serviceAccountName: admin\n"), launcherPod + ".serviceAccountName", "does not let jobs run as a service account (voda server --allow-service-account)"},
	{"serviceAccount (the old name) on the worker", Options{}, workerPodSpec("          serviceAccount: admin\n"), workerPod + ".serviceAccount", "does not let jobs run as a service account"},
	{"automountServiceAccountToken: true", Options{}, launcherPodSpec("          automountServiceAccountToken: true\n"), launcherPod + ".automountServiceAccountToken", "does not mount service account tokens into jobs"},
	{"launcher nodeSelector vodascheduler/accelerator", Options{}, launcherPodSpec("          nodeSelector: {vodascheduler/accelerator: nvidia-tesla-v100}\n"), launcherPod + ".nodeSelector[vodascheduler/accelerator]", "node selector on Voda's own key"},
	{"worker nodeSelector vodascheduler/job", Options{}, edit(baseMPIJob, "            vodascheduler/accelerator: nvidia-tesla-v100\n", "            vodascheduler/accelerator: nvidia-tesla-v100\n            vodascheduler/job: other\n"), workerPod + ".nodeSelector[vodascheduler/job]", "node selector on Voda's own key"},
	{"toleration of vodascheduler/placement", Options{}, workerPodSpec("          tolerations: [{key: vodascheduler/placement, operator: Exists}]\n"), workerPod + ".tolerations[0].key", "toleration on Voda's own key"},
	{"toleration of every taint", Options{}, launcherPodSpec("          tolerations: [{key: nvidia.com/gpu, operator: Exists}, {operator: Exists}]\n"), launcherPod + ".tolerations[1]", "tolerates every taint"},
	{"node affinity on vodascheduler/accelerator", Options{}, workerPodSpec("          affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: vodascheduler/accelerator, operator: In, values: [a100]}]}]}}}\n"), workerPod + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key", "node affinity term on Voda's own key"},
	{"preferred node affinity on vodascheduler/job", Options{}, launcherPodSpec("          affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: vodascheduler/job, operator: Exists}]}}]}}\n"), launcherPod + ".affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].key", "node affinity term on Voda's own key"},
	{"worker node affinity on the node's name", Options{}, workerPodSpec("          affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [gpu-node-1]}]}]}}}\n"), workerPod + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key", "Voda chooses each worker's node"},
	{"scheduling gate vodascheduler/placement on the launcher", Options{}, launcherPodSpec("          schedulingGates: [{name: vodascheduler/placement}]\n"), launcherPod + ".schedulingGates[0].name", "scheduling gate on Voda's own key"},
	{"privileged worker container", Options{}, workerContainer("            securityContext: {privileged: true}\n"), workerPod, `violates PodSecurity "baseline:latest": privileged (container "worker" must not set securityContext.privileged=true); this server accepts pods at Pod Security Standards level baseline (voda server --pod-security)`},
	{"privileged launcher", Options{}, edit(baseMPIJob, mpiLauncherImage, "            image: horovod/horovod:0.28.1\n            securityContext: {privileged: true}\n            env:\n"), launcherPod, `privileged (container "launcher" must not set securityContext.privileged=true)`},
	{"privileged init container", Options{}, workerPodSpec("          initContainers: [{name: setup, image: busybox, securityContext: {privileged: true}}]\n"), workerPod, `privileged (container "setup" must not set securityContext.privileged=true)`},
	{"privileged sidecar", Options{}, workerResources("{limits: {nvidia.com/gpu: 1}}", "          - {name: proxy, image: envoyproxy/envoy:v1.30.1, securityContext: {privileged: true}}\n"), workerPod, `privileged (container "proxy" must not set securityContext.privileged=true)`},
	{"privileged ephemeral container", Options{}, workerPodSpec("          ephemeralContainers: [{name: debug, image: busybox, securityContext: {privileged: true}}]\n"), workerPod, `privileged (container "debug" must not set securityContext.privileged=true)`},
	{"hostNetwork, hostPID and hostIPC", Options{}, workerPodSpec("          hostNetwork: true\n          hostPID: true\n          hostIPC: true\n"), workerPod, "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)"},
	{"hostIPC", Options{}, launcherPodSpec("          hostIPC: true\n"), launcherPod, "host namespaces (hostIPC=true)"},
	{"hostNetwork: true hidden behind hostnetwork: false", Options{}, workerPodSpec("          hostNetwork: true\n          hostnetwork: false\n"), workerPod, "host namespaces (hostNetwork=true)"},
	{"hostPath volume /", Options{}, workerPodSpec("          volumes: [{name: root, hostPath: {path: /}}]\n"), workerPod, `hostPath volumes (volume "root")`},
	{"hostPort", Options{}, workerContainer("            ports: [{containerPort: 22, hostPort: 22}]\n"), workerPod, `hostPort (container "worker" uses hostPort 22)`},
	{"capability SYS_ADMIN", Options{}, workerContainer("            securityContext: {capabilities: {add: [SYS_ADMIN]}}\n"), workerPod, `non-default capabilities (container "worker" must not include "SYS_ADMIN" in securityContext.capabilities.add)`},
	{"procMount: Unmasked", Options{}, workerContainer("            securityContext: {procMount: Unmasked}\n"), workerPod, `procMount (container "worker" must not set securityContext.procMount to "Unmasked")`},
	{"seccompProfile Unconfined", Options{}, workerPodSpec("          securityContext: {seccompProfile: {type: Unconfined}}\n"), workerPod, `seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")`},
	{"allowPrivilegeEscalation: true at level restricted", restricted, restrictedJob(strings.Replace(restrictedSC, "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", 1)), workerPod, `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "worker" must set securityContext.allowPrivilegeEscalation=false); this server accepts pods at Pod Security Standards level restricted`},
	{"privileged PyTorchJob worker", Options{}, edit(basePyTorchJob, "          - name: pytorch\n", "          - name: pytorch\n            securityContext: {privileged: true}\n"), "spec.pytorchReplicaSpecs.Worker.template.spec", `privileged (container "pytorch" must not set securityContext.privileged=true)`},
	{"progress-log pattern whose program would be huge (a{100} nested three deep)", Options{}, annotate(baseMPIJob, AnnotationProgressLog, `'(?P<epoch>(((a{100}){100}){100}))'`), "metadata.annotations[vodascheduler/progress-log]", "invalid repeat count"},
	{"progress-log pattern of 100 KB", Options{}, annotate(baseMPIJob, AnnotationProgressLog, "'(?P<epoch>[0-9]+)"+strings.Repeat("x", 100<<10)+"'"), "metadata.annotations[vodascheduler/progress-log]", "at most 512 are accepted"},
	{"application of 10,000 characters", Options{}, annotate(baseMPIJob, AnnotationApplication, strings.Repeat("a", 10000)), "metadata.annotations[vodascheduler/application]", "must be a Kubernetes label value"},
	{"a third MPIJob replica spec, privileged", Options{}, edit(baseMPIJob, "    Worker:\n", "    Extra:\n      template:\n        spec:\n          containers: [{name: x, image: busybox, securityContext: {privileged: true}}]\n    Worker:\n"), "spec.mpiReplicaSpecs.Extra.template.spec", `privileged (container "x" must not set securityContext.privileged=true)`},
}

func TestHostileInputs(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range hostileInputs {
		if seen[tc.what] {
			t.Fatalf("duplicate case %q", tc.what)
		}
		seen[tc.what] = true
		t.Run(tc.what, func(t *testing.T) {
			checkFieldError(t, []byte(tc.input), tc.opts, tc.field, tc.reason)
		})
	}
}

// TestPodSecurityAccepts: what the levels and options let through.
func TestPodSecurityAccepts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		input string
	}{
		{"restricted job at level restricted", restricted, restrictedJob(restrictedSC)},
		{"allowPrivilegeEscalation: true at level baseline", Options{}, workerContainer("            securityContext: {allowPrivilegeEscalation: true}\n")},
		{"privileged at level privileged", privileged, workerContainer("            securityContext: {privileged: true}\n")},
		{"hostPath at level privileged", privileged, workerPodSpec("          volumes: [{name: root, hostPath: {path: /}}]\n")},
		{"serviceAccountName with AllowServiceAccount", Options{AllowServiceAccount: true}, launcherPodSpec("          serviceAccountName: trainer\n          automountServiceAccountToken: true\n")},
		{"automountServiceAccountToken: false", Options{}, launcherPodSpec("          automountServiceAccountToken: false\n")},
		{"kube-system when the server takes any namespace", Options{}, edit(baseMPIJob, "  name: mnist\n", "  name: mnist\n  namespace: kube-system\n")},
		{"team-a among the server's namespaces", teamOptions, edit(baseMPIJob, "  name: mnist\n", "  name: mnist\n  namespace: team-a\n")},
		{"no namespace with a list of namespaces", teamOptions, baseMPIJob},
		{"other tolerations, labels and node affinity", Options{}, workerPodSpec(`          tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
          affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}
`)},
		{"a priority class of the cluster's own", Options{}, workerPodSpec("          priorityClassName: research-high\n")},
		{"launcher pinned by node name", Options{}, launcherPodSpec("          affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [cpu-1]}]}]}}}\n")},
		{"pod labels of the user's own", Options{}, templateMeta(true, "          labels: {app: mnist, team: a}\n          annotations: {prometheus.io/scrape: \"true\"}\n")},
		{"unknown level means restricted", Options{PodSecurity: "Restricted"}, restrictedJob(restrictedSC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.input), tc.opts); err != nil {
				t.Fatalf("Parse: %v", err)
			}
		})
	}
	// And restricted does bite with a misspelt level.
	checkFieldError(t, []byte(baseMPIJob), Options{PodSecurity: "Restricted"}, launcherPod, `violates PodSecurity "restricted:latest"`)
}

// TestExamplesPodSecurity: the examples and the test fixtures pass the
// default level, baseline, said explicitly; none of them, written
// without a securityContext, passes restricted.
func TestExamplesPodSecurity(t *testing.T) {
	inputs := withExamples(t, map[string]string{"baseMPIJob": baseMPIJob, "baseMPIJobV1Short": baseMPIJobV1Short, "basePyTorchJob": basePyTorchJob, "annotationsOnly": annotationsOnly})
	for name, input := range inputs {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(input), Options{PodSecurity: PodSecurityBaseline}); err != nil {
				t.Errorf("baseline: %v", err)
			}
			_, err := Parse([]byte(input), restricted)
			if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
				t.Errorf("restricted: %v", err)
			}
		})
	}
}

func TestCheckPodSecurity(t *testing.T) {
	for _, ok := range []string{"", "privileged", "baseline", "restricted"} {
		if err := CheckPodSecurity(ok); err != nil {
			t.Errorf("CheckPodSecurity(%q) = %v", ok, err)
		}
	}
	err := CheckPodSecurity("Baseline")
	if want := `pod security level "Baseline" is not one of privileged, baseline, restricted`; err == nil || err.Error() != want {
		t.Errorf("CheckPodSecurity(Baseline) = %v, want %s", err, want)
	}
}

// renderHostileInputs is the doc's second table.
func renderHostileInputs(t *testing.T) string {
	rows := make([]docRow, len(hostileInputs))
	for i, tc := range hostileInputs {
		level := tc.opts.PodSecurity
		if level == "" {
			level = DefaultPodSecurity
		}
		rows[i] = docRow{cells: []string{tc.what, level}, input: tc.input, opts: tc.opts}
	}
	return renderTable(t, []string{"input", "level"}, rows)
}

// hostileFile holds hostileInputs for tests outside this package: test/e2e
// submits each to the running binary (TestHostileManifestsAgainstBinary).
const hostileFile = "testdata/hostile-manifests.json"

// hostileManifest is one entry of hostileFile.
type hostileManifest struct {
	What        string   `json:"what"`
	PodSecurity string   `json:"podSecurity,omitempty"`
	Namespaces  []string `json:"namespaces,omitempty"`
	Manifest    string   `json:"manifest"`
	Field       string   `json:"field"`
	Reason      string   `json:"reason"`
}

// TestHostileManifestsFile keeps hostileFile equal to hostileInputs
// (rewritten with -update).
func TestHostileManifestsFile(t *testing.T) {
	out := make([]hostileManifest, len(hostileInputs))
	for i, tc := range hostileInputs {
		out[i] = hostileManifest{What: tc.what, PodSecurity: tc.opts.PodSecurity, Namespaces: tc.opts.Namespaces,
			Manifest: tc.input, Field: tc.field, Reason: tc.reason}
	}
	want, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	got, err := os.ReadFile(hostileFile)
	if err == nil && bytes.Equal(got, want) {
		return
	}
	if !*update {
		t.Fatalf("%s is out of date (%v); run\n\tgo test ./internal/jobspec -run TestHostileManifestsFile -update", hostileFile, err)
	}
	if err := os.MkdirAll(filepath.Dir(hostileFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hostileFile, want, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated %s", hostileFile)
}
