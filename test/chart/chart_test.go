package chart

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/server"
)

var update = flag.Bool("update", false, "rewrite deploy/rbac.yaml and deploy/roles.yaml from the chart")

const updateHint = "go test ./test/chart -run TestDeployManifests -update"

// rendered is one value set's objects, with lookups for the assertions.
type rendered struct {
	t    *testing.T
	objs []*unstructured.Unstructured
}

func render(t *testing.T, vs ValueSet) *rendered {
	t.Helper()
	start := time.Now()
	out, err := Render(t.Context(), vs.Values, vs.Files)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(out)
	if err != nil {
		t.Fatalf("decoding the rendering: %v\n%s", err, out)
	}
	t.Logf("%s: rendered %d objects in %v", vs.Name, len(objs), time.Since(start).Round(time.Millisecond))
	return &rendered{t: t, objs: objs}
}

// all returns the objects of kind.
func (r *rendered) all(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// get returns the object of kind and name (in any namespace), failing
// the test when there is none.
func (r *rendered) get(kind, name string) *unstructured.Unstructured {
	r.t.Helper()
	if o := r.find(kind, name); o != nil {
		return o
	}
	r.t.Fatalf("no %s %s among %s", kind, name, r.names())
	return nil
}

func (r *rendered) find(kind, name string) *unstructured.Unstructured {
	for _, o := range r.objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func (r *rendered) names() string {
	var s []string
	for _, o := range r.objs {
		s = append(s, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	return strings.Join(s, " ")
}

// container returns the voda container of a Deployment.
func (r *rendered) container(deployment string) map[string]any {
	r.t.Helper()
	cs, _, _ := unstructured.NestedSlice(r.get("Deployment", deployment).Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		r.t.Fatalf("Deployment %s: %d containers, want 1", deployment, len(cs))
	}
	return cs[0].(map[string]any)
}

// args returns the container's args as a flag → value map (a flag
// without =value maps to "").
func (r *rendered) args(deployment string) map[string]string {
	r.t.Helper()
	list, _, _ := unstructured.NestedStringSlice(r.container(deployment), "args")
	if len(list) == 0 || list[0] != "server" {
		r.t.Fatalf("Deployment %s: args %q do not start with server", deployment, list)
	}
	m := map[string]string{}
	for _, a := range list[1:] {
		k, v, _ := strings.Cut(a, "=")
		if _, dup := m[k]; dup {
			r.t.Errorf("Deployment %s: %s given twice", deployment, k)
		}
		m[k] = v
	}
	return m
}

func (r *rendered) wantArgs(deployment string, want map[string]string, absent ...string) {
	r.t.Helper()
	got := r.args(deployment)
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			r.t.Errorf("Deployment %s: %s=%q, want %q (args %v)", deployment, k, g, v, got)
		}
	}
	for _, k := range absent {
		if _, ok := got[k]; ok {
			r.t.Errorf("Deployment %s: %s given, want none", deployment, k)
		}
	}
}

// wantProbes checks the port and scheme ("" for none, which is HTTP) of
// the container's probes, by name.
func (r *rendered) wantProbes(deployment string, want map[string][2]string) {
	r.t.Helper()
	c := r.container(deployment)
	for probe, w := range want {
		wantField(r.t, c, w[0], probe, "httpGet", "port")
		scheme, _, _ := unstructured.NestedString(c, probe, "httpGet", "scheme")
		if scheme != w[1] {
			r.t.Errorf("Deployment %s: %s scheme %q, want %q", deployment, probe, scheme, w[1])
		}
	}
}

// wantPorts checks the container's ports, name to number.
func (r *rendered) wantPorts(deployment string, want map[string]int64) {
	r.t.Helper()
	ps, _, _ := unstructured.NestedSlice(r.container(deployment), "ports")
	got, wantText := map[string]string{}, map[string]string{}
	for _, p := range ps {
		p := p.(map[string]any)
		got[fmt.Sprint(p["name"])] = fmt.Sprint(p["containerPort"])
	}
	for name, n := range want {
		wantText[name] = fmt.Sprint(n)
	}
	if !maps.Equal(got, wantText) {
		r.t.Errorf("Deployment %s: ports %v, want %v", deployment, got, want)
	}
}

// allProbes is wantProbes' argument for the three probes on one port.
func allProbes(port, scheme string) map[string][2]string {
	return map[string][2]string{"livenessProbe": {port, scheme}, "readinessProbe": {port, scheme}, "startupProbe": {port, scheme}}
}

// field walks obj by path: map keys, and indices into lists.
func field(t *testing.T, obj map[string]any, path ...string) any {
	t.Helper()
	var v any = obj
	for i, p := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[p]; ok {
				continue
			}
		case []any:
			if n, err := strconv.Atoi(p); err == nil && n >= 0 && n < len(x) {
				v = x[n]
				continue
			}
		}
		t.Fatalf("no %s", strings.Join(path[:i+1], "."))
	}
	return v
}

// appVersion returns the chart's appVersion, the default image tag.
func appVersion(t *testing.T) string {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("Chart.yaml: no appVersion (%v)", err)
	}
	return c.AppVersion
}

func wantField(t *testing.T, obj map[string]any, want any, path ...string) {
	t.Helper()
	if got := field(t, obj, path...); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", strings.Join(path, "."), got, want)
	}
}

// volumes returns the pod's volumes by name.
func (r *rendered) volumes(deployment string) map[string]map[string]any {
	vs, _, _ := unstructured.NestedSlice(r.get("Deployment", deployment).Object, "spec", "template", "spec", "volumes")
	m := map[string]map[string]any{}
	for _, v := range vs {
		v := v.(map[string]any)
		m[v["name"].(string)] = v
	}
	return m
}

// checkRestricted checks the pod and container meet the restricted Pod
// Security Standard as the chart promises.
func (r *rendered) checkRestricted(deployment string) {
	t := r.t
	t.Helper()
	pod := r.get("Deployment", deployment).Object
	c := r.container(deployment)
	wantField(t, pod, true, "spec", "template", "spec", "securityContext", "runAsNonRoot")
	wantField(t, pod, 65532, "spec", "template", "spec", "securityContext", "runAsUser")
	wantField(t, pod, "RuntimeDefault", "spec", "template", "spec", "securityContext", "seccompProfile", "type")
	wantField(t, c, true, "securityContext", "runAsNonRoot")
	wantField(t, c, 65532, "securityContext", "runAsUser")
	wantField(t, c, true, "securityContext", "readOnlyRootFilesystem")
	wantField(t, c, false, "securityContext", "allowPrivilegeEscalation")
	wantField(t, c, "[ALL]", "securityContext", "capabilities", "drop")
	wantField(t, c, "RuntimeDefault", "securityContext", "seccompProfile", "type")
}

// subjects returns "kind:namespace/name" of a binding's subjects.
func subjects(o *unstructured.Unstructured) []string {
	ss, _, _ := unstructured.NestedSlice(o.Object, "subjects")
	var out []string
	for _, s := range ss {
		s := s.(map[string]any)
		out = append(out, fmt.Sprintf("%s:%v/%v", s["kind"], s["namespace"], s["name"]))
	}
	return out
}

const sa = "ServiceAccount:voda-system/voda-scheduler"

// TestRender renders each value set and checks what it must say.
func TestRender(t *testing.T) {
	checks := map[string]func(t *testing.T, r *rendered){
		"defaults": func(t *testing.T, r *rendered) {
			if got := len(r.all("Deployment")); got != 1 {
				t.Fatalf("%d Deployments, want 1", got)
			}
			d := r.get("Deployment", "voda").Object
			wantField(t, d, 1, "spec", "replicas")
			wantField(t, d, "Recreate", "spec", "strategy", "type")
			r.wantArgs("voda", map[string]string{
				"--cluster": "kubernetes", "--components": "all", "--addr": ":55587",
				"--data-dir": "/var/lib/voda", "--leader-elect": "true", "--lease-namespace": "voda-system",
				"--leader-elect-lease-duration": "15s", "--leader-elect-renew-deadline": "10s", "--leader-elect-retry-period": "2s",
				"--authentication": "kubernetes", "--namespace": "default", "--job-namespaces": "default",
				"--pod-security": "baseline", "--progress-url": "http://voda.voda-system.svc:55587",
				"--probe-addr": ":55588", "--max-connections": "1024", "--first-request-grace": "1s",
				"--finished-retention": "720h", "--max-finished-jobs": "100000", "--per-job-metrics": "true",
			}, "--store-file", "--queue-file", "--gpu-types", "--tls-cert-file", "--insecure-allow-anonymous", "--store", "--queue", "--quotas-file")
			if _, ok := r.volumes("voda")["quotas"]; ok {
				t.Error("a quotas volume without teams")
			}
			c := r.container("voda")
			wantField(t, c, ImageRepository+":"+ImageTag, "image")
			wantField(t, c, "/healthz", "livenessProbe", "httpGet", "path")
			wantField(t, c, "/readyz", "readinessProbe", "httpGet", "path")
			r.wantPorts("voda", map[string]int64{"http": 55587, "probes": 55588})
			r.wantProbes("voda", allProbes("probes", ""))
			r.checkRestricted("voda")
			pvc := r.get("PersistentVolumeClaim", "voda-data")
			wantField(t, pvc.Object, "1Gi", "spec", "resources", "requests", "storage")
			wantField(t, r.volumes("voda")["data"], "voda-data", "persistentVolumeClaim", "claimName")
			svc := r.get("Service", "voda").Object
			wantField(t, svc, 55587, "spec", "ports", "0", "port")
			wantField(t, r.get("PodDisruptionBudget", "voda").Object, 1, "spec", "maxUnavailable")
			if got := subjects(r.get("ClusterRoleBinding", "voda-scheduler-auth-delegator")); !slices.Equal(got, []string{sa}) {
				t.Errorf("auth-delegator subjects %v", got)
			}
			rb := r.get("RoleBinding", "voda-scheduler-jobs")
			if rb.GetNamespace() != "default" {
				t.Errorf("jobs RoleBinding in %s, want default", rb.GetNamespace())
			}
			r.get("Role", "voda-scheduler-leases")
			for _, n := range []string{"voda-user", "voda-admin", "voda-metrics-reader", "voda-scheduler", "voda-scheduler-jobs"} {
				r.get("ClusterRole", n)
			}
			for _, k := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap", "Namespace"} {
				if n := len(r.all(k)); n != 0 {
					t.Errorf("%d %s by default, want none", n, k)
				}
			}
		},
		"mongodb-rabbitmq-3-replicas": func(t *testing.T, r *rendered) {
			d := r.get("Deployment", "voda").Object
			wantField(t, d, 3, "spec", "replicas")
			wantField(t, d, "RollingUpdate", "spec", "strategy", "type")
			r.wantArgs("voda", map[string]string{
				"--store-file": "/etc/voda/store/uri", "--queue-file": "/etc/voda/queue/url",
				"--gpu-types": "nvidia-tesla-v100,nvidia-a100", "--leader-elect": "true",
				"--leader-elect-lease-duration": "20s", "--leader-elect-renew-deadline": "15s", "--leader-elect-retry-period": "3s",
			}, "--data-dir", "--store", "--queue", "--probe-addr")
			r.wantPorts("voda", map[string]int64{"http": 55587})
			r.wantProbes("voda", allProbes("http", ""))
			if r.find("PersistentVolumeClaim", "voda-data") != nil {
				t.Error("a PersistentVolumeClaim with MongoDB")
			}
			vols := r.volumes("voda")
			if _, ok := vols["data"]; ok {
				t.Error("a data volume with MongoDB")
			}
			wantField(t, vols["store"], "voda-mongodb", "secret", "secretName")
			wantField(t, vols["store"], "[map[key:uri path:uri]]", "secret", "items")
			wantField(t, vols["queue"], "voda-rabbitmq", "secret", "secretName")
			wantField(t, vols["queue"], "[map[key:amqp-url path:url]]", "secret", "items")
			// The URLs never reach the environment or the command line.
			if _, ok := r.container("voda")["env"]; ok {
				t.Error("env set: the URLs must come from the mounted files")
			}
			pdb := r.get("PodDisruptionBudget", "voda").Object
			wantField(t, pdb, 2, "spec", "minAvailable")
			if _, ok, _ := unstructured.NestedFieldNoCopy(pdb, "spec", "maxUnavailable"); ok {
				t.Error("PodDisruptionBudget has both minAvailable and maxUnavailable")
			}
		},
		"split-mongodb-rabbitmq": func(t *testing.T, r *rendered) {
			if got := len(r.all("Deployment")); got != 2 {
				t.Fatalf("%d Deployments, want 2: %s", got, r.names())
			}
			wantField(t, r.get("Deployment", "voda-api").Object, 3, "spec", "replicas")
			wantField(t, r.get("Deployment", "voda-scheduler").Object, 2, "spec", "replicas")
			r.wantArgs("voda-api", map[string]string{"--components": "api", "--gpu-types": "v100", "--authentication": "kubernetes",
				"--progress-url": "http://voda-api.voda-system.svc:55587"}, "--leader-elect", "--lease-namespace")
			r.wantArgs("voda-api", map[string]string{"--probe-addr": ":55588"})
			r.wantProbes("voda-api", allProbes("probes", ""))
			r.wantArgs("voda-scheduler", map[string]string{"--components": "scheduler", "--leader-elect": "true", "--lease-namespace": "voda-system",
				"--finished-retention": "168h", "--max-finished-jobs": "2000000", "--per-job-metrics": "true"},
				"--addr", "--authentication", "--probe-addr")
			// Retention runs beside the schedulers only, and only they
			// export per-job series and seed the teams' quotas.
			r.wantArgs("voda-api", nil, "--finished-retention", "--max-finished-jobs", "--per-job-metrics", "--quotas-file")
			r.wantArgs("voda-scheduler", map[string]string{"--quotas-file": "/etc/voda/quotas/quotas.yaml"})
			wantField(t, r.volumes("voda-scheduler")["quotas"], "voda-quotas", "configMap", "name")
			if _, ok := r.volumes("voda-api")["quotas"]; ok {
				t.Error("the quotas mounted on the API's pods, which do not seed them")
			}
			// The rendered file is what voda server --quotas-file reads.
			file, _ := field(t, r.get("ConfigMap", "voda-quotas").Object, "data", "quotas.yaml").(string)
			quotas, err := server.ParseQuotas([]byte(file))
			want := map[string][]model.Quota{"v100": {{Team: "team-a", Guarantee: 8, Limit: 16, Weight: 1}, {Team: "team-b", Guarantee: 8, Weight: 1}}}
			if err != nil || fmt.Sprint(quotas) != fmt.Sprint(want) {
				t.Errorf("the quotas file %q reads as %+v, %v; want %+v", file, quotas, err, want)
			}
			if _, ok := r.container("voda-scheduler")["readinessProbe"]; ok {
				t.Error("probes on scheduler-only pods, which serve no HTTP")
			}
			svc := r.get("Service", "voda-api").Object
			wantField(t, svc, "api", "spec", "selector", "app.kubernetes.io/component")
			r.get("PodDisruptionBudget", "voda-api")
			r.get("PodDisruptionBudget", "voda-scheduler")
			// The API's pods have their own ServiceAccount, granted only
			// the reviews; the schedulers' is not granted those.
			wantField(t, r.get("Deployment", "voda-api").Object, "voda-api", "spec", "template", "spec", "serviceAccountName")
			wantField(t, r.get("Deployment", "voda-scheduler").Object, "voda-scheduler", "spec", "template", "spec", "serviceAccountName")
			r.get("ServiceAccount", "voda-api")
			r.get("ServiceAccount", "voda-scheduler")
			if got := subjects(r.get("ClusterRoleBinding", "voda-scheduler-auth-delegator")); !slices.Equal(got, []string{"ServiceAccount:voda-system/voda-api"}) {
				t.Errorf("auth-delegator subjects %v, want the API's ServiceAccount alone", got)
			}
			for _, b := range append(r.all("RoleBinding"), r.all("ClusterRoleBinding")...) {
				if b.GetName() != "voda-scheduler-auth-delegator" && !slices.Equal(subjects(b), []string{sa}) {
					t.Errorf("%s %s subjects %v, want the schedulers' alone", b.GetKind(), b.GetName(), subjects(b))
				}
			}
			r.checkRestricted("voda-api")
			r.checkRestricted("voda-scheduler")
		},
		"token-file-tls": func(t *testing.T, r *rendered) {
			r.wantArgs("voda", map[string]string{
				"--authentication": "token-file", "--token-auth-file": "/etc/voda/auth/tokens.csv", "--admins-group": "ops",
				"--tls-cert-file": "/etc/voda/tls/tls.crt", "--tls-private-key-file": "/etc/voda/tls/tls.key",
				"--progress-url": "https://voda.voda-system.svc:55587", "--pod-security": "restricted",
			}, "--users-group")
			c := r.container("voda")
			wantField(t, c, ImageRepository+"@sha256:"+strings.Repeat("ab", 32), "image")
			wantField(t, c, "Always", "imagePullPolicy")
			// The probes' port is plain HTTP whatever the API serves.
			r.wantProbes("voda", map[string][2]string{
				"livenessProbe": {"probes", ""}, "readinessProbe": {"probes", ""}, "startupProbe": {"http", "HTTPS"},
			})
			vols := r.volumes("voda")
			wantField(t, vols["tokens"], "voda-tokens", "secret", "secretName")
			wantField(t, vols["tls"], "voda-tls", "secret", "secretName")
			pod := r.get("Deployment", "voda").Object
			wantField(t, pod, "", "spec", "template", "spec", "nodeSelector", "node-role.kubernetes.io/control-plane")
			wantField(t, pod, "Exists", "spec", "template", "spec", "tolerations", "0", "operator")
			pvc := r.get("PersistentVolumeClaim", "voda-data").Object
			wantField(t, pvc, "fast", "spec", "storageClassName")
			wantField(t, pvc, "5Gi", "spec", "resources", "requests", "storage")
			if r.find("ClusterRoleBinding", "voda-scheduler-auth-delegator") != nil {
				t.Error("system:auth-delegator bound without --authentication kubernetes")
			}
		},
		"monitoring": func(t *testing.T, r *rendered) {
			r.wantArgs("voda", map[string]string{"--per-job-metrics": "false"})
			sm := r.get("ServiceMonitor", "voda").Object
			wantField(t, sm, "prometheus", "metadata", "labels", "release")
			wantField(t, sm, "/metrics", "spec", "endpoints", "0", "path")
			wantField(t, sm, "http", "spec", "endpoints", "0", "port")
			pr := r.get("PrometheusRule", "voda").Object
			if gs, _, _ := unstructured.NestedSlice(pr, "spec", "groups"); len(gs) == 0 {
				t.Error("PrometheusRule without groups")
			}
			cms := r.all("ConfigMap")
			dir, err := Dir()
			if err != nil {
				t.Fatal(err)
			}
			own, _ := filepath.Glob(filepath.Join(dir, "files", "dashboards", "*.json"))
			if len(cms) != len(own)+1 {
				t.Errorf("%d dashboard ConfigMaps, want one per JSON file (%d)", len(cms), len(own)+1)
			}
			cm := r.get("ConfigMap", "voda-dashboard-chart-test").Object
			wantField(t, cm, "1", "metadata", "labels", "grafana_dashboard")
			wantField(t, cm, TestDashboard, "data", "chart-test.json")
		},
		"job-namespaces": func(t *testing.T, r *rendered) {
			r.wantArgs("voda", map[string]string{"--job-namespaces": "team-a,team-b,team-c", "--namespace": "team-b",
				"--progress-url": "https://voda.example.com"})
			var nss []string
			for _, rb := range r.all("RoleBinding") {
				if rb.GetName() != "voda-scheduler-jobs" {
					continue
				}
				nss = append(nss, rb.GetNamespace())
				if got := subjects(rb); !slices.Equal(got, []string{sa}) {
					t.Errorf("RoleBinding %s/%s subjects %v", rb.GetNamespace(), rb.GetName(), got)
				}
				wantField(t, rb.Object, "voda-scheduler-jobs", "roleRef", "name")
				wantField(t, rb.Object, "ClusterRole", "roleRef", "kind")
			}
			if !slices.Equal(nss, []string{"team-a", "team-b", "team-c"}) {
				t.Errorf("jobs RoleBindings in %v, want team-a, team-b, team-c", nss)
			}
			wantField(t, r.get("Deployment", "voda").Object, "linux",
				"spec", "template", "spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", "0", "matchExpressions", "0", "values", "0")
		},
	}
	for _, vs := range ValueSets() {
		t.Run(vs.Name, func(t *testing.T) {
			check, ok := checks[vs.Name]
			if !ok {
				t.Fatalf("no check for value set %s", vs.Name)
			}
			check(t, render(t, vs))
		})
	}
}
