package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/test/chart"
	"github.com/vodascheduler/voda/test/vodatest"
)

// prometheusOperator is the module whose example/prometheus-operator-crd
// holds the CRDs of ServiceMonitor and PrometheusRule, which the chart's
// monitoring values render and the test stack does not have.
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

// TestChartDryRun applies every object the chart renders, for each of
// chart.ValueSets, to the control plane with a server-side apply in
// dry-run mode (dryRun=All): the API server validates and admits each
// object as it would on `helm install`, and stores none.
func TestChartDryRun(t *testing.T) {
	ctx := t.Context()
	installMonitoringCRDs(t)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(env.Client.Discovery()))
	for _, ns := range []string{chart.Namespace, "team-a", "team-b", "team-c"} {
		if err := env.CreateNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	// The PodSecurity admission warns about a Deployment whose pod
	// template breaks the namespace's level: the chart's pods must meet
	// restricted, so any warning fails the test.
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/warn":"restricted"}}}`)
	if _, err := env.Client.CoreV1().Namespaces().Patch(ctx, chart.Namespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = warnings
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, vs := range chart.ValueSets() {
		t.Run(vs.Name, func(t *testing.T) {
			start := time.Now()
			out, err := chart.Render(ctx, vs.Values, vs.Files)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := chart.Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			rendered := time.Since(start)
			start = time.Now()
			for _, o := range objs {
				gvk := o.GroupVersionKind()
				m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Errorf("%s %s: %v", gvk, o.GetName(), err)
					continue
				}
				var ri dynamic.ResourceInterface = client.Resource(m.Resource)
				if m.Scope.Name() == meta.RESTScopeNameNamespace {
					ri = client.Resource(m.Resource).Namespace(o.GetNamespace())
				}
				_, err = ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "voda-chart-test", Force: true, DryRun: []string{metav1.DryRunAll}})
				if err != nil {
					t.Errorf("%s %s/%s refused: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
				}
				for _, w := range warnings.take() {
					t.Errorf("%s %s/%s: warning: %s", gvk.Kind, o.GetNamespace(), o.GetName(), w)
				}
			}
			t.Logf("%s: rendered in %v, %d objects accepted by a server-side dry-run in %v",
				vs.Name, rendered.Round(time.Millisecond), len(objs), time.Since(start).Round(time.Millisecond))
		})
	}

	// The dry-run does check: a broken object is refused, and a pod
	// template below restricted is warned about.
	out, err := chart.Render(ctx, chart.WithImage(nil), nil, "--show-only", "templates/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := chart.Decode(out)
	if err != nil || len(objs) != 1 {
		t.Fatalf("the Deployment alone: %d objects, %v", len(objs), err)
	}
	d := objs[0]
	deployments := client.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(d.GetNamespace())
	dryRun := metav1.ApplyOptions{FieldManager: "voda-chart-test", Force: true, DryRun: []string{metav1.DryRunAll}}
	bad := d.DeepCopy()
	if err := unstructured.SetNestedField(bad.Object, "Sideways", "spec", "strategy", "type"); err != nil {
		t.Fatal(err)
	}
	if _, err := deployments.Apply(ctx, bad.GetName(), bad, dryRun); !apierrors.IsInvalid(err) {
		t.Errorf("a Deployment with strategy Sideways: %v, want Invalid", err)
	}
	loose := d.DeepCopy()
	unstructured.RemoveNestedField(loose.Object, "spec", "template", "spec", "securityContext")
	cs, _, _ := unstructured.NestedSlice(loose.Object, "spec", "template", "spec", "containers")
	delete(cs[0].(map[string]any), "securityContext")
	if err := unstructured.SetNestedSlice(loose.Object, cs, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	if _, err := deployments.Apply(ctx, loose.GetName(), loose, dryRun); err != nil {
		t.Fatal(err)
	}
	if w := warnings.take(); len(w) == 0 {
		t.Error("no PodSecurity warning for a pod template without a securityContext")
	}
}

// warningRecorder keeps the API server's warnings.
type warningRecorder struct {
	mu   sync.Mutex
	list []string
}

func (r *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, text)
}

// take returns the warnings since the last call.
func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.list
	r.list = nil
	return l
}

// installMonitoringCRDs installs the CRDs of ServiceMonitor and
// PrometheusRule from the prometheus-operator module (downloaded into the
// Go module cache) and waits until the API server serves them.
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", prometheusOperator).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", prometheusOperator, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s: no folder in %s (%v)", prometheusOperator, out, err)
	}
	crds := filepath.Join(mod.Dir, "example", "prometheus-operator-crd")
	for _, f := range []string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"} {
		if err := env.Apply(t.Context(), filepath.Join(crds, f)); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		res, err := env.Client.Discovery().ServerResourcesForGroupVersion("monitoring.coreos.com/v1")
		if err != nil {
			return false, nil
		}
		var have []string
		for _, r := range res.APIResources {
			have = append(have, r.Name)
		}
		s := strings.Join(have, ",")
		return strings.Contains(s, "servicemonitors") && strings.Contains(s, "prometheusrules"), nil
	})
	if err != nil {
		t.Fatalf("the monitoring CRDs are not served: %v", err)
	}
}

// TestChartDeploymentFromImage runs Voda as the chart deploys it: the
// voda binary taken out of the container image (hack/image, as make image
// builds it), with the arguments and environment the chart gives its
// container (default values, but the image built, named by its digest,
// this test's namespace and GPU type, and an extra variable) and the
// chart's RBAC (deploy/rbac.yaml is its rendering), authenticated as the
// chart's ServiceAccount: the server starts, leads its GPU type, and a job
// a user of voda-user submits is placed. Only what a pod has and a test process has not is replaced: the
// API's address, the data folder and the in-cluster credentials
// (--kubeconfig, the chart's ServiceAccount's token).
func TestChartDeploymentFromImage(t *testing.T) {
	bin, digest := imageBinary(t)
	revision, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "(revision "+strings.TrimSpace(string(revision))+",") {
		t.Errorf("the image's voda version: %v\n%s\nwant revision %s", err, out, revision)
	}
	t.Logf("the image's %s", bytes.TrimSpace(out))

	const gpuType = "chart-gpu"
	c := newCluster(t, gpuType, 1, 2)
	applyRoles(t)
	bindRole(t, "voda-user", c.ns, user("bob")) // the chart's user role, in the chart's job namespace
	values := map[string]any{
		// The image just built, by the digest make image prints.
		"image":         map[string]any{"repository": chart.ImageRepository, "digest": digest},
		"jobNamespaces": []string{c.ns},
		// The stack's other tests' GPU types are not this server's; a short
		// rate limit so the test does not wait 30 s for a cycle.
		"scheduler": map[string]any{"gpuTypes": []string{gpuType}, "rateLimit": "1s"},
		"log":       map[string]any{"level": "debug"},
		"extraEnv":  []map[string]any{{"name": "GOMAXPROCS", "value": "2"}},
	}
	rendered, err := chart.Render(t.Context(), values, nil, "--show-only", "templates/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := chart.Decode(rendered)
	if err != nil || len(objs) != 1 {
		t.Fatalf("the Deployment: %d objects, %v", len(objs), err)
	}
	cs, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "template", "spec", "containers")
	container := cs[0].(map[string]any)
	if got, want := container["image"], chart.ImageRepository+"@"+digest; got != want {
		t.Errorf("the container's image %v, want %s: the image built", got, want)
	}
	renderedArgs, _, _ := unstructured.NestedStringSlice(container, "args")
	if len(renderedArgs) == 0 || renderedArgs[0] != "server" {
		t.Fatalf("args %q", renderedArgs)
	}
	var args []string
	probeAddr := ""
	for _, a := range renderedArgs[1:] {
		switch {
		case strings.HasPrefix(a, "--addr="): // vodatest gives a free loopback port
		case strings.HasPrefix(a, "--probe-addr="): // a free loopback port too
			probeAddr = vodatest.FreeAddr(t)
			args = append(args, "--probe-addr="+probeAddr)
		case strings.HasPrefix(a, "--data-dir="):
			args = append(args, "--data-dir="+t.TempDir())
		default:
			args = append(args, a)
		}
	}
	args = append(args, "--kubeconfig", schedulerKubeconfig(t))
	envs, _, _ := unstructured.NestedSlice(container, "env")
	var environ []string
	for _, e := range envs {
		m := e.(map[string]any)
		v, ok := m["value"].(string)
		if !ok {
			t.Fatalf("env %v: only plain values can be given to a test process", m)
		}
		environ = append(environ, fmt.Sprintf("%s=%s", m["name"], v))
	}
	if len(environ) != 1 || environ[0] != "GOMAXPROCS=2" {
		t.Errorf("the container's environment %q, want the extra variable", environ)
	}
	t.Logf("%s voda server %s", strings.Join(environ, " "), strings.Join(args, " "))
	srv := vodatest.StartServerBinary(t, bin, environ, args...)
	if probeAddr == "" {
		t.Error("the chart gives no --probe-addr, where its probes go")
	} else {
		resp, err := http.Get("http://" + probeAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("the chart's readiness probe, GET /readyz on --probe-addr %s: %v %v", probeAddr, resp, err)
		}
	}
	tok, err := env.UserToken("bob")
	if err != nil {
		t.Fatal(err)
	}
	vc := srv.Client(client.WithBearerToken(tok))
	start := time.Now()
	job := submit(t, vc, mpiJob.manifest("chart", gpuType, 1, 2, time.Hour))
	c.waitPlaced(t, vc, mpiJob, job, 2)
	t.Logf("%s: submitted to 2 workers bound in %v", job, time.Since(start).Round(time.Millisecond))
}
