package kubeauth

import (
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

// reviews is a fake clientset whose creations of one resource answer
// with respond, counted.
type reviews struct {
	*fake.Clientset
	calls atomic.Int32
}

// newReviews returns a fake clientset answering creations of resource
// (tokenreviews, subjectaccessreviews) with respond, which gets the
// object created.
func newReviews(t testing.TB, resource string, respond func(obj runtime.Object) (runtime.Object, error)) *reviews {
	t.Helper()
	r := &reviews{Clientset: fake.NewClientset()}
	r.PrependReactor("create", resource, func(action k8stesting.Action) (bool, runtime.Object, error) {
		r.calls.Add(1)
		obj, err := respond(action.(k8stesting.CreateAction).GetObject())
		return true, obj, err
	})
	return r
}

func newFakeClock() *testingclock.FakeClock {
	return testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

func (r *reviews) wantCalls(t *testing.T, want int32) {
	t.Helper()
	if got := r.calls.Load(); got != want {
		t.Fatalf("%d reviews, want %d", got, want)
	}
}
