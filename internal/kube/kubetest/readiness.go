package kubetest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// NotReadyLabel, set to "true" on a kwok node, makes kwok's node-not-ready
// stage (hack/kwok/stages.yaml) set the node's Ready condition False and
// keep it so; kwok's heartbeats leave such a node alone.
const NotReadyLabel = "node-not-ready.stage.kwok.x-k8s.io"

// SetNodeReady makes a kwok node NotReady (ready false: its Ready
// condition False, held so by kwok until SetNodeReady(ready true)) or
// Ready again, through NotReadyLabel, and waits until the node's Ready
// condition says so. A NotReady node keeps its pods; kube-controller-
// manager taints it node.kubernetes.io/not-ready (and removes the taint
// after it is Ready again).
func (e *Env) SetNodeReady(ctx context.Context, name string, ready bool) error {
	var value any = "true" // a JSON merge patch removes a label set to null
	if ready {
		value = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{NotReadyLabel: value}}})
	if err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	if _, err := e.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("kubetest: labelling node %s: %w", name, err)
	}
	want := corev1.ConditionFalse
	if ready {
		want = corev1.ConditionTrue
	}
	var got corev1.ConditionStatus
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		node, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = ""
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				got = c.Status
			}
		}
		return got == want, nil
	})
	if err != nil {
		return fmt.Errorf("kubetest: node %s Ready condition %q, want %q (kwok log: %s): %w", name, got, want, e.LogPath("kwok"), err)
	}
	return nil
}

// SetNodeCordoned cordons a node (spec.unschedulable true), as kubectl
// cordon does, or uncordons it.
func (e *Env) SetNodeCordoned(ctx context.Context, name string, cordoned bool) error {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, cordoned)
	if _, err := e.Client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("kubetest: setting node %s unschedulable=%t: %w", name, cordoned, err)
	}
	return nil
}
