package kubetest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/vodascheduler/voda/internal/kube/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

const gpuType = "test-gpu"

var (
	mpiJobs     = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}
	pytorchJobs = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}

	nodesOnce  sync.Once
	nodesNames []string
	nodesErr   error
)

// nodes adds the shared fake nodes node-1 and node-2 (8 GPUs each) once.
func nodes(t *testing.T) []string {
	t.Helper()
	nodesOnce.Do(func() {
		nodesNames, nodesErr = env.AddNodes(context.Background(), gpuType, 2, 8, "node")
	})
	if nodesErr != nil {
		t.Fatal(nodesErr)
	}
	if !slices.Equal(nodesNames, []string{"node-1", "node-2"}) {
		t.Fatalf("AddNodes made %v, want [node-1 node-2]", nodesNames)
	}
	return nodesNames
}

// namespace creates a namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	if err := env.CreateNamespace(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	return name
}

// eventually polls cond every 100 ms until it returns true, an error, or
// the timeout passes; then it fails the test with what.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, cond)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func condition(obj *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

func gpuLimits(n int64) map[string]any {
	return map[string]any{"limits": map[string]any{string(kubetest.GPUResource): n}}
}

func checkLabels(t *testing.T, pod *corev1.Pod, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := pod.Labels[k]; !ok || got != v {
			t.Errorf("pod %s: label %s = %q (present %v), want %q; labels %v", pod.Name, k, got, ok, v, pod.Labels)
		}
	}
}

func TestMPIJob(t *testing.T) {
	nodes(t)
	ctx := t.Context()
	ns := namespace(t, "mpi")
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v2beta1",
		"kind":       "MPIJob",
		"metadata":   map[string]any{"name": "pi", "namespace": ns},
		"spec": map[string]any{
			"slotsPerWorker":         int64(1),
			"launcherCreationPolicy": "WaitForWorkersReady",
			"mpiReplicaSpecs": map[string]any{
				"Launcher": map[string]any{
					"replicas": int64(1),
					"template": map[string]any{
						"metadata": map[string]any{"annotations": map[string]any{kubetest.CompleteAnnotation: "3s"}},
						"spec": map[string]any{"containers": []any{map[string]any{
							"name": "launcher", "image": "fake.invalid/mpi-pi:1", "command": []any{"mpirun", "pi"},
						}}},
					},
				},
				"Worker": map[string]any{
					"replicas": int64(2),
					"template": map[string]any{
						"spec": map[string]any{
							"nodeSelector": map[string]any{kubetest.AcceleratorLabel: gpuType},
							"containers": []any{map[string]any{
								"name": "worker", "image": "fake.invalid/mpi-pi:1", "resources": gpuLimits(1),
							}},
						},
					},
				},
			},
		},
	}}
	if _, err := env.Dynamic.Resource(mpiJobs).Namespace(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	selector := "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=worker"
	var workers []corev1.Pod
	eventually(t, time.Minute, "2 MPI worker pods bound and Running", func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		workers = pods.Items
		if len(workers) != 2 {
			return false, nil
		}
		for _, p := range workers {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	for _, p := range workers {
		t.Logf("MPI worker %s on %s, labels %v", p.Name, p.Spec.NodeName, p.Labels)
		idx := p.Name[len(p.Name)-1:]
		checkLabels(t, &p, map[string]string{
			"training.kubeflow.org/operator-name": "mpi-operator",
			"training.kubeflow.org/job-name":      "pi",
			"training.kubeflow.org/job-role":      "worker",
			"training.kubeflow.org/replica-index": idx,
		})
		if !slices.Contains([]string{"pi-worker-0", "pi-worker-1"}, p.Name) {
			t.Errorf("unexpected worker pod name %s", p.Name)
		}
	}

	eventually(t, time.Minute, "MPIJob pi Succeeded", func(ctx context.Context) (bool, error) {
		obj, err := env.Dynamic.Resource(mpiJobs).Namespace(ns).Get(ctx, "pi", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if condition(obj, "Failed") == "True" {
			return false, fmt.Errorf("MPIJob failed: %v", obj.Object["status"])
		}
		return condition(obj, "Succeeded") == "True", nil
	})

	launchers, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=launcher",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range launchers.Items {
		t.Logf("MPI launcher %s: phase %s, labels %v", p.Name, p.Status.Phase, p.Labels)
	}
}

func TestSchedulingGate(t *testing.T) {
	nodes(t)
	ctx := t.Context()
	ns := namespace(t, "gated")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: ns},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "vodascheduler/placement"}},
			NodeSelector:    map[string]string{kubetest.AcceleratorLabel: gpuType},
			Containers: []corev1.Container{{
				Name: "c", Image: "fake.invalid/c:1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kubetest.GPUResource: resource.MustParse("1")}},
			}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The gate holds: kube-scheduler reports it SchedulingGated, and the pod
	// stays unbound and Pending for the whole observation window.
	eventually(t, 30*time.Second, "pod reported SchedulingGated", func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
				return true, nil
			}
		}
		return false, nil
	})
	window := time.Now().Add(3 * time.Second)
	for time.Now().Before(window) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
			t.Fatalf("gated pod bound to %q, phase %s", p.Spec.NodeName, p.Status.Phase)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}

	// One patch removes the gate and pins the pod to node-1 (mutable while
	// the pod is gated: adding required node affinity is allowed).
	patch := `{"spec":{"schedulingGates":null,"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":` +
		`{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-1"]}]}]}}}}}`
	if _, err := env.Client.CoreV1().Pods(ns).Patch(ctx, "gated", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "ungated pod bound to node-1 and Running", func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" && p.Spec.NodeName != "node-1" {
			return false, fmt.Errorf("bound to %s, want node-1", p.Spec.NodeName)
		}
		return p.Spec.NodeName == "node-1" && p.Status.Phase == corev1.PodRunning, nil
	})
}

// TestElasticPyTorchJob: a PyTorchJob with only Worker replicas and an
// elasticPolicy. training-operator v1.9.0 (pkg/controller.v1/pytorch/
// pytorchjob_controller.go, UpdateJobStatus) decides success of a job
// without a Master replica on the Worker replica statuses: Succeeded when
// all workers succeeded ("expected == 0") OR, when spec.elasticPolicy is
// set, as soon as ANY worker succeeded ("ElasticPolicy != nil &&
// succeeded > 0"). (With a Master, the job succeeds when the Master does.)
// So for elastic jobs one completed worker completes the job: here both
// workers carry the complete annotation, and the job must reach Succeeded.
// Worker 0 is the job's master role (label job-role=master, rendezvous
// endpoint) when there is no Master replica.
func TestElasticPyTorchJob(t *testing.T) {
	nodes(t)
	ctx := t.Context()
	ns := namespace(t, "pytorch")
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1",
		"kind":       "PyTorchJob",
		"metadata":   map[string]any{"name": "elastic", "namespace": ns},
		"spec": map[string]any{
			"elasticPolicy": map[string]any{
				"minReplicas": int64(1),
				"maxReplicas": int64(4),
				"rdzvBackend": "c10d",
			},
			"pytorchReplicaSpecs": map[string]any{
				"Worker": map[string]any{
					"replicas":      int64(2),
					"restartPolicy": "OnFailure",
					"template": map[string]any{
						"metadata": map[string]any{"annotations": map[string]any{kubetest.CompleteAnnotation: "3s"}},
						"spec": map[string]any{
							"nodeSelector": map[string]any{kubetest.AcceleratorLabel: gpuType},
							"containers": []any{map[string]any{
								"name": "pytorch", "image": "fake.invalid/pytorch-elastic:1", "resources": gpuLimits(1),
							}},
						},
					},
				},
			},
		},
	}}
	if _, err := env.Dynamic.Resource(pytorchJobs).Namespace(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var workers []corev1.Pod
	eventually(t, time.Minute, "2 PyTorch worker pods bound and Running", func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
			LabelSelector: "training.kubeflow.org/job-name=elastic,training.kubeflow.org/replica-type=worker",
		})
		if err != nil {
			return false, err
		}
		workers = pods.Items
		if len(workers) != 2 {
			return false, nil
		}
		for _, p := range workers {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	for _, p := range workers {
		t.Logf("PyTorch worker %s on %s, labels %v", p.Name, p.Spec.NodeName, p.Labels)
		idx := p.Name[len(p.Name)-1:]
		checkLabels(t, &p, map[string]string{
			"training.kubeflow.org/operator-name": "pytorchjob-controller",
			"training.kubeflow.org/job-name":      "elastic",
			"training.kubeflow.org/replica-type":  "worker",
			"training.kubeflow.org/replica-index": idx,
		})
		if role, ok := p.Labels["training.kubeflow.org/job-role"]; (idx == "0") != (ok && role == "master") {
			t.Errorf("pod %s: job-role label %q (present %v); want master on worker 0 only", p.Name, role, ok)
		}
	}

	eventually(t, time.Minute, "PyTorchJob elastic Succeeded", func(ctx context.Context) (bool, error) {
		obj, err := env.Dynamic.Resource(pytorchJobs).Namespace(ns).Get(ctx, "elastic", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if condition(obj, "Failed") == "True" {
			return false, fmt.Errorf("PyTorchJob failed: %v", obj.Object["status"])
		}
		return condition(obj, "Succeeded") == "True", nil
	})
}

func TestPodFail(t *testing.T) {
	nodes(t)
	ctx := t.Context()
	ns := namespace(t, "fail")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "doomed", Namespace: ns,
			Annotations: map[string]string{kubetest.FailAnnotation: "1s"},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{kubetest.AcceleratorLabel: gpuType},
			Containers:    []corev1.Container{{Name: "c", Image: "fake.invalid/c:1"}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	eventually(t, 30*time.Second, "pod Failed", func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "doomed", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("pod Succeeded, want Failed")
		}
		got = p
		return p.Status.Phase == corev1.PodFailed, nil
	})
	if len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].State.Terminated == nil ||
		got.Status.ContainerStatuses[0].State.Terminated.ExitCode != 1 {
		t.Errorf("container statuses %+v, want one terminated with exit code 1", got.Status.ContainerStatuses)
	}
}

func TestServiceAccountKubeconfig(t *testing.T) {
	ctx := t.Context()
	path, err := env.ServiceAccountKubeconfig(ctx, "sa-test", "reader")
	if err != nil {
		t.Fatal(err)
	}
	// No RoleBinding: the ServiceAccount may not list nodes.
	out, err := env.Kubectl(ctx, "--kubeconfig", path, "get", "nodes")
	if err == nil {
		t.Fatalf("ServiceAccount without RBAC listed nodes: %s", out)
	}
	out, err = env.Kubectl(ctx, "--kubeconfig", path, "auth", "whoami")
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:sa-test:reader"; !strings.Contains(string(out), want) {
		t.Errorf("kubectl auth whoami = %s, want user %s", out, want)
	}
}
