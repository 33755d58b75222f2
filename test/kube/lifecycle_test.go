package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/test/vodatest"
)

// TestMPIJobLifecycle and TestPyTorchJobLifecycle drive one job kind
// through every flow Voda handles on a real control plane with the real
// operator: start at the decided size on the chosen nodes, shrink for a
// newcomer, grow when the other job completes, re-place workers of a
// deleted node, and free the GPUs of a job deleted by hand.
func TestMPIJobLifecycle(t *testing.T)     { testLifecycle(t, mpiJob, "mpi-gpu") }
func TestPyTorchJobLifecycle(t *testing.T) { testLifecycle(t, pyTorchJob, "pt-gpu") }

func testLifecycle(t *testing.T, k kind, gpuType string) {
	c := newCluster(t, gpuType, 2, 4)
	srv := c.start()
	vc := srv.Client()
	ctx := t.Context()

	// One job alone gets all 8 GPUs (ElasticFIFO gives up to max).
	start := time.Now()
	a := submit(t, vc, k.manifest("first", gpuType, 2, 8, 30*time.Second))
	ja := c.waitPlaced(t, vc, k, a, 8)
	t.Logf("%s: submit to 8 workers bound and running: %v", a, time.Since(start).Round(time.Millisecond))
	if len(ja.Placement) != 2 {
		t.Errorf("placement %v: want both nodes", ja.Placement)
	}

	// A second job arrives: the first shrinks to make room for it (how
	// far is the algorithm's choice; ElasticFIFO splits evenly).
	b := submit(t, vc, k.manifest("second", gpuType, 2, 8, time.Hour))
	vodatest.WaitFor(t, "the first job shrunk and the second started, both placed", 90*time.Second, func() (bool, error) {
		ja, ok, err := c.placed(ctx, vc, k, a, -1)
		if !ok {
			return false, err
		}
		jb, ok, err := c.placed(ctx, vc, k, b, -1)
		if !ok {
			return false, err
		}
		if ja.Workers >= 8 || jb.Workers < 2 || ja.Workers+jb.Workers != 8 {
			return false, fmt.Errorf("workers %d and %d", ja.Workers, jb.Workers)
		}
		return true, nil
	})

	// The first job's pod completes (kwok's stage): its GPUs go to the
	// second.
	ja = waitStatus(t, vc, a, "Completed")
	if ja.FinishTime == nil {
		t.Errorf("completed job %s has no finish time", a)
	}
	jb := c.waitPlaced(t, vc, k, b, 8)
	if k.name == mpiJob.name {
		c.waitHostsNudged(t, b, 8)
	}

	// A node goes away: the second job keeps what it has elsewhere and the
	// workers are re-placed on what is left.
	var gone string
	for n := range jb.Placement {
		gone = n
		break
	}
	if err := env.DeleteNode(ctx, gone); err != nil {
		t.Fatal(err)
	}
	jb = c.waitPlaced(t, vc, k, b, 4)
	if _, ok := jb.Placement[gone]; ok {
		t.Errorf("placement %v still uses deleted node %s", jb.Placement, gone)
	}

	// The object deleted by hand: Voda notices, ends the job and frees
	// its GPUs for the next one.
	if err := env.Dynamic.Resource(k.resource).Namespace(c.ns).Delete(ctx, b, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, vc, b, "Canceled")
	d := submit(t, vc, k.manifest("third", gpuType, 1, 4, time.Hour))
	c.waitPlaced(t, vc, k, d, 4)
	vodatest.WaitFor(t, "scheduler status to show only the third job's GPUs in use", 30*time.Second, func() (bool, error) {
		s, err := vc.GetScheduler(ctx, gpuType)
		return err == nil && s.GPUsInUse == 4 && s.GPUs == 4, err
	})

	// Voda deletes what it halts: cancel the third job through the API.
	if _, err := vc.DeleteJob(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, vc, d, "Canceled")
	vodatest.WaitFor(t, "the canceled job's object to be deleted", 30*time.Second, func() (bool, error) {
		return !slices.Contains(objects(t, k, c.ns), d), nil
	})
	vodatest.WaitFor(t, "no pod left gated or pending", 30*time.Second, func() (bool, error) {
		return noStrandedPods(ctx, c.ns)
	})
}

// waitHostsNudged waits until an MPIJob's discover_hosts.sh lists its
// workers running workers and its launcher pod carries the script's
// digest, Voda's nudge for the kubelet to refresh the mounted script.
func (c *cluster) waitHostsNudged(t *testing.T, job string, workers int) {
	t.Helper()
	vodatest.WaitFor(t, "the launcher of "+job+" told of its "+fmt.Sprint(workers)+" workers", 30*time.Second, func() (bool, error) {
		cm, err := env.Client.CoreV1().ConfigMaps(c.ns).Get(t.Context(), job+"-config", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		script := cm.Data["discover_hosts.sh"]
		if n := strings.Count(script, job+"-worker-"); n != workers {
			return false, fmt.Errorf("discover_hosts.sh lists %d workers", n)
		}
		pods, err := env.Client.CoreV1().Pods(c.ns).List(t.Context(), metav1.ListOptions{
			LabelSelector: "training.kubeflow.org/job-name=" + job + ",training.kubeflow.org/job-role=launcher"})
		if err != nil || len(pods.Items) == 0 {
			return false, fmt.Errorf("launcher pod: %v (%d found)", err, len(pods.Items))
		}
		sum := sha256.Sum256([]byte(script))
		want := hex.EncodeToString(sum[:8])
		if got := pods.Items[0].Annotations[kube.AnnotationHosts]; got != want {
			return false, fmt.Errorf("launcher annotation %s=%q, want %q", kube.AnnotationHosts, got, want)
		}
		return true, nil
	})
}
