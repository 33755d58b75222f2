package kubeauth

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/vodascheduler/voda/internal/auth"
)

func TestPodReports(t *testing.T) {
	pod := func(name, uid, job string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: typesUID(uid)}}
		if job != "" {
			p.Labels = map[string]string{"vodascheduler/job": job}
		}
		return p
	}
	cs := fake.NewClientset(pod("mnist-worker-0", "u1", "mnist"), pod("bert-worker-0", "u2", "bert"), pod("plain", "u3", ""))
	var gets atomic.Int32
	cs.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets.Add(1)
		return false, nil, nil
	})
	pr := NewPodReports(cs.CoreV1(), "vodascheduler/job", PodReportsOptions{})
	podUser := func(ns, sa, pod, uid string) auth.User {
		u := auth.User{Name: "system:serviceaccount:" + ns + ":" + sa}
		if pod != "" {
			u.Extra = map[string][]string{ExtraPodName: {pod}, ExtraPodUID: {uid}}
		}
		return u
	}
	report := func(job string) auth.Attributes {
		return auth.Attributes{Verb: auth.VerbUpdate, Resource: auth.ResourceJobs, Subresource: auth.SubresourceProgress, Name: job, Namespace: "team-a", Kind: "MPIJob"}
	}
	for _, c := range []struct {
		name   string
		u      auth.User
		a      auth.Attributes
		want   bool
		reason string
	}{
		{"the job's pod", podUser("team-a", "default", "mnist-worker-0", "u1"), report("mnist"), true, ""},
		{"another job's pod", podUser("team-a", "default", "bert-worker-0", "u2"), report("mnist"), false, "belongs to job bert, not mnist"},
		{"a pod of no job", podUser("team-a", "default", "plain", "u3"), report("mnist"), false, "not a worker of a Voda job"},
		{"a pod since replaced", podUser("team-a", "default", "mnist-worker-0", "old"), report("mnist"), false, "no longer exists (another pod has its name)"},
		{"a pod gone", podUser("team-a", "default", "gone", "u9"), report("mnist"), false, "no longer exists"},
		{"a pod of another namespace", podUser("team-b", "default", "mnist-worker-0", "u1"), report("mnist"), false, "not in the job's namespace team-a"},
		{"a token bound to no pod", podUser("team-a", "default", "", ""), report("mnist"), false, "bound to no pod"},
		{"a user", auth.User{Name: "alice"}, report("mnist"), false, "not a ServiceAccount token"},
		{"anything but a report", podUser("team-a", "default", "mnist-worker-0", "u1"), auth.Attributes{Verb: auth.VerbDelete, Resource: auth.ResourceJobs, Name: "mnist", Namespace: "team-a"}, false, "may only report"},
	} {
		ok, reason, err := pr.Authorize(context.Background(), c.u, c.a)
		if err != nil || ok != c.want || !strings.Contains(reason, c.reason) {
			t.Errorf("%s: %v %q %v, want %v %q", c.name, ok, reason, err, c.want, c.reason)
		}
	}
	// Answers are kept: asking again reads no pod.
	before := gets.Load()
	if ok, _, _ := pr.Authorize(context.Background(), podUser("team-a", "default", "mnist-worker-0", "u1"), report("mnist")); !ok || gets.Load() != before {
		t.Errorf("a repeated question: allowed %v, %d more pod reads; want allowed and none", ok, gets.Load()-before)
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
