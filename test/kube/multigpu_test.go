package kube

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/test/vodatest"
)

// An MPIJob whose workers hold 4 GPUs each, on one 8-GPU kwok node with
// the real mpi-operator: alone it grows to 2 pods, shrinks to 1 when a
// second such job arrives, and grows back when that one completes; its
// hostfile says slots=4, and every worker pod asks for 4 GPUs of a node
// that has them.
func TestMultiGPUMPIJob(t *testing.T) {
	c := newCluster(t, "mg-gpu", 1, 8)
	srv := c.start("--multi-gpu-workers")
	vc := srv.Client()

	a := submit(t, vc, mpiJobManifest("wide", c.gpuType, 4, 1, 2, time.Hour))
	ja := c.waitPlaced(t, vc, mpiJob, a, 2)
	if ja.GPUsPerWorker != 4 || ja.GPUs != 8 {
		t.Errorf("job %s: %d GPUs per worker, %d GPUs; want 4 and 8", a, ja.GPUsPerWorker, ja.GPUs)
	}
	c.waitHostfileSlots(t, a, 2, 4)
	c.checkWorkerGPUs(t, a, 4)
	c.checkNodeGPUs(t)

	// A second job of one worker of 4: the first shrinks to one pod.
	b := submit(t, vc, mpiJobManifest("narrow", c.gpuType, 4, 1, 1, 20*time.Second))
	c.waitPlaced(t, vc, mpiJob, b, 1)
	c.waitPlaced(t, vc, mpiJob, a, 1)
	c.waitHostfileSlots(t, a, 1, 4)

	// It completes: the first grows back to two pods.
	waitStatus(t, vc, b, "Completed")
	c.waitPlaced(t, vc, mpiJob, a, 2)
	c.waitHostfileSlots(t, a, 2, 4)
}

// A PyTorchJob whose worker pods hold 2 GPUs and run 2 processes each
// (nprocPerNode 2), elastic between 1 and 2 pods, with the real
// training-operator on two kwok nodes of 2 GPUs: alone it grows to 2 pods,
// one per node; a second such job of one pod makes it shrink to 1; it
// grows back to 2 when that one completes. At each step every worker pod
// asks for 2 GPUs of a node that has them, no node holds more than it
// has, and the object Voda wrote keeps nprocPerNode "2" and its replicas
// inside the elastic range, which the operator turns into
// PET_NPROC_PER_NODE=2 and PET_NNODES=1:2 for torchrun.
//
// It fails if Voda passes nprocPerNode written as a number to the API
// server, which refuses it (the CRD types it a string: the job never
// starts; it did before jobspec stored the string), if it counts the
// job's pods as GPUs (4 replicas written for 4 GPUs, or a resize past
// maxReplicas), if the pods ask for one GPU, if the placer puts two
// workers of 2 on one 2-GPU node (the second pod is never bound), or if a
// resize rewrites or drops nprocPerNode or the elastic policy.
func TestMultiGPUPyTorchJob(t *testing.T) {
	c := newCluster(t, "mg-pt", 2, 2)
	srv := c.start("--multi-gpu-workers")
	vc := srv.Client()

	step := func(what, job string, workers int) {
		t.Helper()
		j := c.waitPlaced(t, vc, pyTorchJob, job, workers)
		if j.GPUsPerWorker != 2 || j.GPUs != 2*workers {
			t.Errorf("%s: job %s has %d GPUs per worker and %d GPUs; want 2 and %d", what, job, j.GPUsPerWorker, j.GPUs, 2*workers)
		}
		if len(j.Placement) != workers {
			t.Errorf("%s: job %s placed on %v, want one worker on each of %d nodes", what, job, j.Placement, workers)
		}
		c.checkWorkerGPUs(t, job, 2)
		c.checkPyTorchJobProcs(t, job, 2, 1, 2)
		c.checkNodeGPUs(t)
	}

	a := submit(t, vc, pyTorchJobManifest("wide", c.gpuType, 2, 1, 2, time.Hour))
	step("alone", a, 2)

	// A second job of one pod of 2 GPUs, its nprocPerNode written as the
	// CRD's string: the first shrinks to one pod.
	narrow := bytes.Replace(pyTorchJobManifest("narrow", c.gpuType, 2, 1, 1, 20*time.Second), []byte("nprocPerNode: 2\n"), []byte("nprocPerNode: \"2\"\n"), 1)
	b := submit(t, vc, narrow)
	c.waitPlaced(t, vc, pyTorchJob, b, 1)
	step("beside a second job", a, 1)

	// It completes: the first grows back to two pods.
	waitStatus(t, vc, b, "Completed")
	step("after the second job", a, 2)
}

// Jobs of workers of 1, 2 and 4 GPUs on one GPU type of two 8-GPU and two
// 4-GPU kwok nodes, then a job of one worker of 8 GPUs. The placer packs
// the first three as it always does (largest need first, tightest fit):
// 3 workers of 2 on one 8-GPU node, 6 of 1 on the other, one of 4 on a
// 4-GPU node. That leaves 8 GPUs free (2, 2 and 4) but none of 8 on one
// node, so the worker of 8 fits nowhere until the topology placer's
// defragmentation (docs/placement.md, "Freeing a node when nothing else
// works") moves smaller workers off one 8-GPU node, within its
// defrag_budget of 8 workers a cycle. The job of 8 must then run on an
// 8-GPU node, every moved job run again, every pod ask for its G GPUs on
// a node that has them, no node's pods ask for more than it has, and only
// workers of the node the job of 8 took have moved.
//
// It fails if the placer does not defragment (the job of 8 waits
// Unschedulable with 8 GPUs free), if it moves a worker onto a node
// without room for it (the pod is never bound, or a node is over
// capacity), if it moves more workers than the budget or workers of
// other nodes, or if the 8-GPU worker lands on a 4-GPU node.
func TestMixedGPUsPerWorker(t *testing.T) {
	c := newCluster(t, "mixed-gpu", 2, 4)
	big, err := env.AddNodes(t.Context(), c.gpuType, 2, 8, c.gpuType+"-big")
	if err != nil {
		t.Fatal(err)
	}
	c.nodes = append(c.nodes, big...)
	srv := c.start("--multi-gpu-workers")
	vc := srv.Client()

	type shape struct {
		name          string
		gpus, workers int
	}
	small := []shape{{"two", 2, 3}, {"one", 1, 6}, {"four", 4, 1}}
	var names []string
	for _, s := range small {
		names = append(names, submit(t, vc, pyTorchJobManifest(s.name, c.gpuType, s.gpus, s.workers, s.workers, time.Hour)))
	}
	before := map[string]map[string]int{}
	free := c.nodeGPUs(t)
	for i, s := range small {
		j := c.waitPlaced(t, vc, pyTorchJob, names[i], s.workers)
		before[names[i]] = j.Placement
		for node, w := range j.Placement {
			free[node] -= int64(w * s.gpus)
		}
		c.checkWorkerGPUs(t, names[i], int64(s.gpus))
	}
	c.checkNodeGPUs(t)
	var total, most int64
	for _, f := range free {
		total += f
		most = max(most, f)
	}
	t.Logf("placed %v; free GPUs by node %v", before, free)
	if total < 8 || most >= 8 {
		t.Fatalf("the small jobs left %d GPUs free, at most %d on one node (%v); the test needs 8 or more, none of 8 on one node", total, most, free)
	}

	wide := submit(t, vc, pyTorchJobManifest("eight", c.gpuType, 8, 1, 1, time.Hour))
	j := c.waitPlaced(t, vc, pyTorchJob, wide, 1)
	if j.Status != "Running" || j.GPUsPerWorker != 8 || j.GPUs != 8 {
		t.Errorf("job %s is %s with %d GPUs per worker, %d GPUs; want Running with 8 and 8", wide, j.Status, j.GPUsPerWorker, j.GPUs)
	}
	var took string
	for node := range j.Placement {
		took = node
	}
	moved := 0
	for i, s := range small {
		after := c.waitPlaced(t, vc, pyTorchJob, names[i], s.workers).Placement
		for node, w := range before[names[i]] {
			if gone := w - after[node]; gone > 0 {
				moved += gone
				if node != took {
					t.Errorf("job %s moved %d workers off node %s, not the node %s the job of 8 took: before %v, after %v", names[i], gone, node, took, before[names[i]], after)
				}
			}
		}
		t.Logf("job %s (%d workers of %d GPUs): %v, then %v", names[i], s.workers, s.gpus, before[names[i]], after)
		c.checkWorkerGPUs(t, names[i], int64(s.gpus))
	}
	c.checkWorkerGPUs(t, wide, 8)
	c.checkNodeGPUs(t)
	t.Logf("the job of 8 took node %s; %d workers moved", took, moved)
	if moved == 0 || moved > 8 {
		t.Errorf("%d workers moved to free a node for the job of 8, want 1 to 8 (defrag_budget)", moved)
	}
}

// gpuAsk is the nvidia.com/gpu a container asks for: its limit and its
// request, 0 when it names none.
func gpuAsk(c corev1.Container) (limit, request int64) {
	l := c.Resources.Limits[corev1.ResourceName(kube.ResourceGPU)]
	r := c.Resources.Requests[corev1.ResourceName(kube.ResourceGPU)]
	return l.Value(), r.Value()
}

// checkWorkerGPUs fails the test unless every live worker pod of job has
// exactly one container asking for g GPUs (limit and request) and is
// bound to a node of the cluster with at least g allocatable GPUs.
func (c *cluster) checkWorkerGPUs(t *testing.T, job string, g int64) {
	t.Helper()
	pods, err := workerPods(t.Context(), c.ns, job)
	if err != nil {
		t.Fatal(err)
	}
	alloc := c.nodeGPUs(t)
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		var asks []string
		for _, ct := range p.Spec.Containers {
			if l, r := gpuAsk(ct); l != 0 || r != 0 {
				asks = append(asks, fmt.Sprintf("%s: limit %d, request %d", ct.Name, l, r))
			}
		}
		if want := fmt.Sprintf("limit %d, request %d", g, g); len(asks) != 1 || !strings.HasSuffix(asks[0], want) {
			t.Errorf("pod %s asks for GPUs %v, want one container with %s", p.Name, asks, want)
		}
		if n, ok := alloc[p.Spec.NodeName]; !ok || n < g {
			t.Errorf("pod %s of %d GPUs is on node %q, which has %d (the cluster's nodes: %v)", p.Name, g, p.Spec.NodeName, n, alloc)
		}
	}
}

// checkNodeGPUs fails the test if the pods bound to any of the cluster's
// nodes, and not finished, ask for more GPUs than it has.
func (c *cluster) checkNodeGPUs(t *testing.T) {
	t.Helper()
	list, err := env.Client.CoreV1().Pods(c.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]int64{}
	holders := map[string][]string{}
	for _, p := range list.Items {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, ct := range p.Spec.Containers {
			if _, r := gpuAsk(ct); r > 0 {
				used[p.Spec.NodeName] += r
				holders[p.Spec.NodeName] = append(holders[p.Spec.NodeName], fmt.Sprintf("%s:%d", p.Name, r))
			}
		}
	}
	alloc := c.nodeGPUs(t)
	for node, n := range used {
		if n > alloc[node] {
			t.Errorf("node %s: its pods ask for %d GPUs (%v), it has %d", node, n, holders[node], alloc[node])
		}
	}
}

// nodeGPUs is the allocatable GPUs of each of the cluster's nodes.
func (c *cluster) nodeGPUs(t *testing.T) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, name := range c.nodes {
		n, err := env.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q := n.Status.Allocatable[corev1.ResourceName(kube.ResourceGPU)]
		out[name] = q.Value()
	}
	return out
}

// checkPyTorchJobProcs fails the test unless the PyTorchJob Voda wrote
// for job says nprocPerNode g and the elastic range [min, max] with its
// Worker replicas inside it, and the operator gave every live worker pod's
// containers PET_NPROC_PER_NODE=g and PET_NNODES=min:max, what torchrun
// reads.
func (c *cluster) checkPyTorchJobProcs(t *testing.T, job string, g, min, max int) {
	t.Helper()
	ctx := t.Context()
	obj, err := env.Dynamic.Resource(pyTorchJob.resource).Namespace(c.ns).Get(ctx, job, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	procs, _, _ := unstructured.NestedString(obj.Object, "spec", "nprocPerNode")
	lo, _, _ := unstructured.NestedInt64(obj.Object, "spec", "elasticPolicy", "minReplicas")
	hi, _, _ := unstructured.NestedInt64(obj.Object, "spec", "elasticPolicy", "maxReplicas")
	replicas, _, _ := unstructured.NestedInt64(obj.Object, pyTorchJob.replicas...)
	if procs != fmt.Sprint(g) || lo != int64(min) || hi != int64(max) || replicas < lo || replicas > hi {
		t.Errorf("PyTorchJob %s: nprocPerNode %q, elastic range %d..%d, %d replicas; want %q, %d..%d and replicas inside",
			job, procs, lo, hi, replicas, fmt.Sprint(g), min, max)
	}
	pods, err := workerPods(ctx, c.ns, job)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"PET_NPROC_PER_NODE": fmt.Sprint(g), "PET_NNODES": fmt.Sprintf("%d:%d", min, max)}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, ct := range p.Spec.Containers {
			got := map[string]string{}
			for _, e := range ct.Env {
				if _, ok := want[e.Name]; ok {
					got[e.Name] = e.Value
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("pod %s container %s: torchrun's environment %v, want %v", p.Name, ct.Name, got, want)
			}
		}
	}
}

// waitHostfileSlots waits until an MPIJob's hostfile (the operator's
// ConfigMap) lists workers hosts, each with slots=slots.
func (c *cluster) waitHostfileSlots(t *testing.T, job string, workers, slots int) {
	t.Helper()
	vodatest.WaitFor(t, fmt.Sprintf("the hostfile of %s to list %d workers of slots=%d", job, workers, slots), 60*time.Second, func() (bool, error) {
		cm, err := env.Client.CoreV1().ConfigMaps(c.ns).Get(t.Context(), job+"-config", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		hostfile := cm.Data["hostfile"]
		hosts, withSlots := 0, 0
		for _, line := range strings.Split(strings.TrimSpace(hostfile), "\n") {
			if strings.Contains(line, job+"-worker-") {
				hosts++
				if strings.Contains(line, fmt.Sprintf("slots=%d", slots)) {
					withSlots++
				}
			}
		}
		if hosts != workers || withSlots != workers {
			return false, fmt.Errorf("hostfile %q: %d hosts, %d with slots=%d", hostfile, hosts, withSlots, slots)
		}
		return true, nil
	})
}
