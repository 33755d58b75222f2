package kube

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	ctx := t.Context()

	a := submit(t, vc, mpiJobManifest("wide", c.gpuType, 4, 1, 2, time.Hour))
	ja := c.waitPlaced(t, vc, mpiJob, a, 2)
	if ja.GPUsPerWorker != 4 || ja.GPUs != 8 {
		t.Errorf("job %s: %d GPUs per worker, %d GPUs; want 4 and 8", a, ja.GPUsPerWorker, ja.GPUs)
	}
	c.waitHostfileSlots(t, a, 2, 4)
	pods, err := workerPods(ctx, c.ns, a)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]int64{}
	for _, p := range pods {
		q := p.Spec.Containers[0].Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]
		if q.Value() != 4 {
			t.Errorf("pod %s asks for %s GPUs, want 4", p.Name, q.String())
		}
		used[p.Spec.NodeName] += q.Value()
	}
	for node, n := range used {
		if n > 8 {
			t.Errorf("node %s: %d GPUs asked by %s's pods, it has 8", node, n, a)
		}
	}

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
