package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Horovod elastic finds its workers by running discover_hosts.sh, which
// the mpi-operator keeps in the job's ConfigMap (<job>-config) listing the
// running workers. The kubelet refreshes a mounted ConfigMap only on its
// periodic sync, up to a minute or more later, unless the pod changes:
// updating one of its annotations makes the kubelet sync it, and the
// script, at once. So when a job's running workers change and the
// operator has rewritten the script, Voda sets the launcher's annotation
// AnnotationHosts to the script's digest.
const (
	AnnotationHosts     = "vodascheduler/discover-hosts"
	discoverHostsScript = "discover_hosts.sh"
	labelJobName        = "training.kubeflow.org/job-name"
	labelJobRole        = "training.kubeflow.org/job-role"
)

// hostsRetry is how soon a job is looked at again while the operator has
// not yet rewritten the script.
const hostsRetry = time.Second

// nudgeLauncher tells an MPIJob's launcher pod that its host list changed.
func (pool *Pool) nudgeLauncher(ctx context.Context, job string, tracked trackedJob) error {
	var running []string
	for _, p := range pool.client.workerPods(job) {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			running = append(running, p.Name)
		}
	}
	sort.Strings(running)
	sig := strings.Join(running, ",")
	if sig == tracked.hosts {
		return nil
	}
	cm, err := pool.client.clientset.CoreV1().ConfigMaps(tracked.namespace).Get(ctx, job+"-config", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		pool.queue.AddAfter(job, hostsRetry)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read host list: %w", err)
	}
	script := cm.Data[discoverHostsScript]
	for _, w := range running {
		if !strings.Contains(script, w+".") {
			pool.queue.AddAfter(job, hostsRetry) // the operator has not caught up
			return nil
		}
	}
	if strings.Count(script, job+"-worker-") != len(running) {
		pool.queue.AddAfter(job, hostsRetry)
		return nil
	}
	launchers, err := pool.client.clientset.CoreV1().Pods(tracked.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labelJobName + "=" + job + "," + labelJobRole + "=launcher",
	})
	if err != nil {
		return fmt.Errorf("find launcher: %w", err)
	}
	sum := sha256.Sum256([]byte(script))
	digest := hex.EncodeToString(sum[:8])
	for _, p := range launchers.Items {
		if p.DeletionTimestamp != nil || p.Annotations[AnnotationHosts] == digest {
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationHosts, digest)
		if _, err := pool.client.clientset.CoreV1().Pods(tracked.namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: managedBy}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("annotate launcher %s: %w", p.Name, err)
		}
	}
	if len(launchers.Items) == 0 {
		pool.queue.AddAfter(job, hostsRetry) // created after the workers
		return nil
	}
	pool.mu.Lock()
	if j, ok := pool.jobs[job]; ok {
		j.hosts = sig
	}
	pool.mu.Unlock()
	return nil
}
