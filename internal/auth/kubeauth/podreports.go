package kubeauth

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/vodascheduler/voda/internal/auth"
)

// The extra a TokenReview gives of a ServiceAccount token bound to a pod
// (a projected token: the kubelet asks for one per pod).
const (
	ExtraPodName = "authentication.kubernetes.io/pod-name"
	ExtraPodUID  = "authentication.kubernetes.io/pod-uid"
)

// serviceAccountPrefix starts a ServiceAccount's user name:
// system:serviceaccount:<namespace>:<name>.
const serviceAccountPrefix = "system:serviceaccount:"

// PodReportsOptions tune a PodReports. The zero value is the defaults.
type PodReportsOptions struct {
	// TTL is how long a pod's answer is reused; DefaultTTL when not
	// positive.
	TTL time.Duration
	// MaxEntries bounds the cache; DefaultAccessCacheEntries when not
	// positive.
	MaxEntries int
	Clock      Clock
	Timeout    time.Duration
}

// PodReports authorizes progress reports (update jobs/progress) from a
// job's own pods and nothing else: the caller must be a ServiceAccount
// token bound to a pod (a TokenReview of a projected token says which
// pod), in the job's namespace, and that pod must still exist, with the
// same UID, and carry the job's label. Pods are read with the scheduler's
// own permission to get pods in the job namespaces; an answer is reused
// for TTL.
type PodReports struct {
	pods  corev1client.PodsGetter
	label string
	ttl   time.Duration
	memo  *memo[podAnswer]
}

var _ auth.Authorizer = (*PodReports)(nil)

// podAnswer is what a pod's lookup said: the job its label names, if it
// exists with the UID asked about.
type podAnswer struct {
	job    string
	reason string // why not, when job is empty
}

// NewPodReports returns a PodReports that reads pods with client and
// checks their label jobLabel.
func NewPodReports(client corev1client.PodsGetter, jobLabel string, opts PodReportsOptions) *PodReports {
	return &PodReports{
		pods:  client,
		label: jobLabel,
		ttl:   orDefault(opts.TTL, DefaultTTL),
		memo:  newMemo[podAnswer](orDefault(opts.MaxEntries, DefaultAccessCacheEntries), opts.Clock, opts.Timeout),
	}
}

// Authorize allows a progress report of job a.Name in a.Namespace from
// one of its pods.
func (p *PodReports) Authorize(ctx context.Context, u auth.User, a auth.Attributes) (bool, string, error) {
	if a.Resource != auth.ResourceJobs || a.Subresource != auth.SubresourceProgress || a.Verb != auth.VerbUpdate {
		return false, "a pod's token may only report its job's progress", nil
	}
	ns, _, ok := strings.Cut(strings.TrimPrefix(u.Name, serviceAccountPrefix), ":")
	if !ok || !strings.HasPrefix(u.Name, serviceAccountPrefix) {
		return false, "not a ServiceAccount token; progress comes from the job's pods (VODA_TOKEN_FILE)", nil
	}
	pod, uid := first(u.Extra[ExtraPodName]), first(u.Extra[ExtraPodUID])
	if pod == "" || uid == "" {
		return false, "the token is bound to no pod; send the projected token Voda mounts (VODA_TOKEN_FILE)", nil
	}
	if ns != a.Namespace {
		return false, fmt.Sprintf("pod %s/%s is not in the job's namespace %s", ns, pod, a.Namespace), nil
	}
	ans, err := p.memo.get(ctx, ns+"/"+pod+"/"+uid, func(ctx context.Context) (podAnswer, time.Duration, error) {
		return p.lookup(ctx, ns, pod, uid)
	})
	if err != nil {
		return false, "", err
	}
	if ans.job == "" {
		return false, ans.reason, nil
	}
	if ans.job != a.Name {
		return false, fmt.Sprintf("pod %s/%s belongs to job %s, not %s", ns, pod, ans.job, a.Name), nil
	}
	return true, "", nil
}

func (p *PodReports) lookup(ctx context.Context, ns, name, uid string) (podAnswer, time.Duration, error) {
	pod, err := p.pods.Pods(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return podAnswer{reason: fmt.Sprintf("pod %s/%s no longer exists", ns, name)}, p.ttl, nil
	case err != nil:
		return podAnswer{}, 0, fmt.Errorf("get pod %s/%s: %w", ns, name, err)
	case string(pod.UID) != uid:
		return podAnswer{reason: fmt.Sprintf("pod %s/%s of the token no longer exists (another pod has its name)", ns, name)}, p.ttl, nil
	}
	job := pod.Labels[p.label]
	if job == "" {
		return podAnswer{reason: fmt.Sprintf("pod %s/%s is not a worker of a Voda job (no %s label)", ns, name, p.label)}, p.ttl, nil
	}
	return podAnswer{job: job}, p.ttl, nil
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
