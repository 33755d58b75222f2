package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vodascheduler/voda/internal/model"
)

// nodeNameField is the field a node affinity term matches a node's name
// with.
const nodeNameField = "metadata.name"

// worker is one live worker pod of a job.
type worker struct {
	pod   *corev1.Pod
	index int
	node  string // where it runs or is bound to go; "" while gated
	gated bool
}

// placePods makes a job's worker pods match want: pods on nodes holding
// more workers than want says are deleted (the operator recreates them,
// gated), and gated pods get a node with room and lose their gate. Pods
// with an index at or above want's worker count are left to the
// operator, which deletes them on a shrink.
func (pool *Pool) placePods(ctx context.Context, job string, want model.JobPlacement) error {
	n := want.Workers()
	desired := map[string]int{}
	for _, nw := range want {
		desired[nw.Node] += nw.Workers
	}
	count := map[string]int{}
	var live []worker
	for _, p := range pool.client.workerPods(job) {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		idx, err := strconv.Atoi(p.Labels[LabelReplicaIndex])
		if err != nil || idx >= n {
			continue
		}
		w := worker{pod: p, index: idx, gated: hasGate(p)}
		if !w.gated {
			w.node = boundNode(p)
			count[w.node]++
		}
		live = append(live, w)
	}
	sort.Slice(live, func(a, b int) bool { return live[a].index < live[b].index })
	pool.log.Debug("placing workers", "job", job, "want", want, "live", len(live), "onNodes", count)

	var errs []error
	// Surplus first: delete the highest-index workers where a node holds
	// more than the plan (a migration, or a node that left the plan).
	for i := len(live) - 1; i >= 0; i-- {
		w := live[i]
		if w.gated || count[w.node] <= desired[w.node] {
			continue
		}
		if err := pool.deletePod(ctx, w.pod); err != nil {
			errs = append(errs, err)
			continue
		}
		count[w.node]--
		pool.log.Info("moving worker off a node the plan no longer gives it", "job", job, "pod", w.pod.Name, "node", w.node)
	}
	// Then gated workers, lowest index first, onto the plan's nodes in
	// rank order.
	next := 0
	for _, w := range live {
		if !w.gated {
			continue
		}
		for next < len(want) && count[want[next].Node] >= desired[want[next].Node] {
			next++
		}
		if next == len(want) {
			break // the rest wait for surplus pods to go
		}
		node := want[next].Node
		if err := pool.bindTo(ctx, w.pod, node); err != nil {
			errs = append(errs, err)
			continue
		}
		count[node]++
	}
	return errors.Join(errs...)
}

func hasGate(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == SchedulingGate {
			return true
		}
	}
	return false
}

// boundNode is the node a pod runs on, or the node its required affinity
// names when kube-scheduler has not bound it yet.
func boundNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == nodeNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// bindTo requires the pod to run on node and removes Voda's gate;
// kube-scheduler then binds it. A gated pod's affinity may only be
// narrowed, so the node requirement is added to every existing term.
func (pool *Pool) bindTo(ctx context.Context, p *corev1.Pod, node string) error {
	p = p.DeepCopy()
	req := corev1.NodeSelectorRequirement{Key: nodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{req}}},
		}
	} else {
		terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		for i := range terms {
			terms[i].MatchFields = append(terms[i].MatchFields, req)
		}
	}
	gates := []corev1.PodSchedulingGate{}
	for _, g := range p.Spec.SchedulingGates {
		if g.Name != SchedulingGate {
			gates = append(gates, g)
		}
	}
	// A JSON merge patch replaces both lists whole and carries no
	// resourceVersion, so the status updates kube-scheduler makes to a
	// gated pod do not make it conflict. The UID test keeps it from
	// landing on a recreated pod of the same name.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": p.UID},
		"spec":     map[string]any{"affinity": p.Spec.Affinity, "schedulingGates": gates},
	})
	if err != nil {
		return fmt.Errorf("encode placement of pod %s: %w", p.Name, err)
	}
	_, err = pool.client.clientset.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: managedBy})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deletePod deletes a worker pod. A pod on a node that is gone or not
// ready is deleted at once, since no kubelet will confirm it.
func (pool *Pool) deletePod(ctx context.Context, p *corev1.Pod) error {
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}
	if p.Spec.NodeName != "" {
		obj, ok, _ := pool.client.nodes.GetStore().GetByKey(p.Spec.NodeName)
		if !ok || !nodeReady(obj.(*corev1.Node)) {
			opts.GracePeriodSeconds = ptrTo(int64(0))
		}
	}
	err := pool.client.clientset.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
