package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/test/vodatest"
)

// kwok's stage (hack/kwok/stages.yaml) completes a running pod this long
// after it started.
const completeAfter = "pod-complete.stage.kwok.x-k8s.io/delay"

// kind is a job kind under test: how to write its manifest and where its
// object keeps the worker count.
type kind struct {
	name     string
	resource schema.GroupVersionResource
	replicas []string
	// manifest returns a job that runs on [min, max] workers and whose
	// completing pod (launcher or worker) finishes after done.
	manifest func(name, gpuType string, min, max int, done time.Duration) []byte
}

var (
	mpiJob = kind{
		name: "MPIJob", resource: kube.MPIJobResource,
		replicas: []string{"spec", "mpiReplicaSpecs", "Worker", "replicas"},
		manifest: func(name, gpuType string, min, max int, done time.Duration) []byte {
			return mpiJobManifest(name, gpuType, 1, min, max, done)
		},
	}
	pyTorchJob = kind{
		name: "PyTorchJob", resource: kube.PyTorchJobResource,
		replicas: []string{"spec", "pytorchReplicaSpecs", "Worker", "replicas"},
		manifest: func(name, gpuType string, min, max int, done time.Duration) []byte {
			return pyTorchJobManifest(name, gpuType, 1, min, max, done)
		},
	}
)

// submit creates a job through the API and returns its unique name.
func submit(t *testing.T, c *client.Client, manifest []byte) string {
	t.Helper()
	j, err := c.CreateJob(t.Context(), manifest)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return j.Name
}

// placed reports whether a job's cluster state is what Voda decided: its
// object asks for the job's worker count, and exactly that many worker
// pods are bound and running, none gated, per node as the stored
// placement says. workers < 0 accepts whatever count Voda decided. It
// returns the API's view of the job.
func (c *cluster) placed(ctx context.Context, vc *client.Client, k kind, job string, workers int) (api.Job, bool, error) {
	j, err := vc.GetJob(ctx, job)
	if err != nil {
		return j, false, err
	}
	if workers < 0 {
		workers = j.Workers
	}
	if j.Status != "Running" || j.Workers != workers || workers == 0 {
		return j, false, fmt.Errorf("job %s is %s with %d workers, want Running with %d", job, j.Status, j.Workers, workers)
	}
	obj, err := env.Dynamic.Resource(k.resource).Namespace(c.ns).Get(ctx, job, metav1.GetOptions{})
	if err != nil {
		return j, false, err
	}
	if r, _, _ := unstructured.NestedInt64(obj.Object, k.replicas...); int(r) != workers {
		return j, false, fmt.Errorf("%s %s has %d worker replicas, want %d", k.name, job, r, workers)
	}
	pods, err := workerPods(ctx, c.ns, job)
	if err != nil {
		return j, false, err
	}
	got := map[string]int{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			return j, false, fmt.Errorf("pod %s is terminating", p.Name)
		}
		if gated(p) || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			return j, false, fmt.Errorf("pod %s: gated=%v node=%q phase=%s", p.Name, gated(p), p.Spec.NodeName, p.Status.Phase)
		}
		got[p.Spec.NodeName]++
	}
	if !equalCounts(got, j.Placement) {
		return j, false, fmt.Errorf("job %s: pods per node %v, Voda's placement %v", job, got, j.Placement)
	}
	return j, true, nil
}

func (c *cluster) waitPlaced(t *testing.T, vc *client.Client, k kind, job string, workers int) api.Job {
	t.Helper()
	var j api.Job
	vodatest.WaitFor(t, fmt.Sprintf("%s %s running on %d placed workers", k.name, job, workers), 90*time.Second, func() (bool, error) {
		var ok bool
		var err error
		j, ok, err = c.placed(t.Context(), vc, k, job, workers)
		return ok, err
	})
	return j
}

func waitStatus(t *testing.T, vc *client.Client, job, status string) api.Job {
	t.Helper()
	var j api.Job
	vodatest.WaitFor(t, fmt.Sprintf("job %s %s", job, status), 90*time.Second, func() (bool, error) {
		var err error
		j, err = vc.GetJob(t.Context(), job)
		if err != nil {
			return false, err
		}
		return string(j.Status) == status, fmt.Errorf("status %s", j.Status)
	})
	return j
}

func workerPods(ctx context.Context, ns, job string) ([]corev1.Pod, error) {
	list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelJob + "=" + job})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func gated(p corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == kube.SchedulingGate {
			return true
		}
	}
	return false
}

func equalCounts(a, b map[string]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// objects returns the names of a kind's objects in ns that carry Voda's
// job label, sorted.
func objects(t *testing.T, k kind, ns string) []string {
	t.Helper()
	list, err := env.Dynamic.Resource(k.resource).Namespace(ns).List(t.Context(), metav1.ListOptions{LabelSelector: kube.LabelJob})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range list.Items {
		out = append(out, o.GetName())
	}
	sort.Strings(out)
	return out
}

// noStrandedPods fails if any pod in ns is still gated or pending.
func noStrandedPods(ctx context.Context, ns string) (bool, error) {
	list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	var bad []string
	for _, p := range list.Items {
		if gated(p) || p.Status.Phase == corev1.PodPending {
			bad = append(bad, p.Name)
		}
	}
	if len(bad) > 0 {
		return false, fmt.Errorf("%d pods gated or pending: %s", len(bad), strings.Join(bad[:min(len(bad), 5)], ", "))
	}
	return true, nil
}

// mpiJobManifest is an MPIJob of min to max workers of gpus GPUs each
// whose launcher completes after done: with one GPU a worker it says
// slotsPerWorker 1 and leaves the worker's GPU to Voda; with more, it asks
// for them on the worker container and leaves slotsPerWorker to Voda.
func mpiJobManifest(name, gpuType string, gpus, min, max int, done time.Duration) []byte {
	slots, resources := "  slotsPerWorker: 1\n", ""
	if gpus > 1 {
		slots, resources = "", gpuLimits(gpus)
	}
	return []byte(fmt.Sprintf(`apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: %s
  annotations:
    vodascheduler/gpu-type: %s
spec:
%s  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        metadata:
          annotations:
            %s: "%s"
        spec:
          containers:
          - name: launcher
            image: horovod/horovod:0.28.1
            env:
            - {name: MIN_NUM_PROC, value: "%d"}
            - {name: MAX_NUM_PROC, value: "%d"}
    Worker:
      replicas: %d
      template:
        spec:
          containers:
          - name: worker
            image: horovod/horovod:0.28.1
%s`, name, gpuType, slots, completeAfter, done, min, max, min, resources))
}

// pyTorchJobManifest is an elastic PyTorchJob of min to max worker pods
// of gpus GPUs each, whose workers complete after done: with one GPU a
// worker it leaves the GPU and nprocPerNode to Voda and the operator; with
// more, its worker container asks for them and nprocPerNode says to start
// one process per GPU, written as a number as people write it (the CRD
// types it a string; Voda stores the string).
func pyTorchJobManifest(name, gpuType string, gpus, min, max int, done time.Duration) []byte {
	procs, resources := "", ""
	if gpus > 1 {
		procs, resources = fmt.Sprintf("  nprocPerNode: %d\n", gpus), gpuLimits(gpus)
	}
	return []byte(fmt.Sprintf(`apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: %s
  annotations:
    vodascheduler/gpu-type: %s
spec:
%s  elasticPolicy:
    minReplicas: %d
    maxReplicas: %d
    rdzvBackend: c10d
  pytorchReplicaSpecs:
    Worker:
      replicas: %d
      template:
        metadata:
          annotations:
            %s: "%s"
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime
%s`, name, gpuType, procs, min, max, min, completeAfter, done, resources))
}

// gpuLimits is the resources of a worker container of a job manifest
// (indented as in the builders above) that asks for gpus GPUs.
func gpuLimits(gpus int) string {
	return fmt.Sprintf("            resources:\n              limits:\n                nvidia.com/gpu: %d\n", gpus)
}
