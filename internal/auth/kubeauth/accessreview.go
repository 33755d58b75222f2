package kubeauth

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/vodascheduler/voda/internal/auth"
)

// DefaultAccessCacheEntries is the default of
// AccessReviewOptions.MaxEntries.
const DefaultAccessCacheEntries = 8192

// openAPIPath is the API's description, which any authenticated caller
// may read.
const openAPIPath = "/api/v1/openapi.yaml"

// jobResources names the Kubernetes resource of each job kind Voda runs:
// RBAC grants a job as the object it is in the cluster.
var jobResources = map[string]struct{ group, resource string }{
	"MPIJob":     {"kubeflow.org", "mpijobs"},
	"PyTorchJob": {"kubeflow.org", "pytorchjobs"},
}

// JobResource returns the Kubernetes API group and resource of a job
// kind (MPIJob: kubeflow.org, mpijobs); ok is false for a kind Voda does
// not run.
func JobResource(kind string) (group, resource string, ok bool) {
	r, ok := jobResources[kind]
	return r.group, r.resource, ok
}

// AccessReviewOptions tune an AccessReviewer. The zero value is the
// defaults.
type AccessReviewOptions struct {
	// AllowedTTL and DeniedTTL are how long an allowed and a denied
	// answer are reused; DefaultTTL when not positive.
	AllowedTTL time.Duration
	DeniedTTL  time.Duration
	// MaxEntries bounds the cache; DefaultAccessCacheEntries when not
	// positive. The least recently used answer makes room.
	MaxEntries int
	// Clock expires the cache's answers; the real clock when nil.
	Clock Clock
	// Timeout bounds one review; DefaultTimeout when not positive.
	Timeout time.Duration
}

// AccessReviewer authorizes actions by asking the cluster, with a
// SubjectAccessReview of the user (name, UID, groups and extra as the
// TokenReview gave them), so that RBAC decides who may do what.
//
//   - A job is the Kubernetes resource of its kind, in its namespace:
//     creating an MPIJob in team-a needs "create mpijobs.kubeflow.org"
//     there. Changing a job's priority is updating the job (mpijobs have
//     no priority subresource). A job of a kind JobResource does not
//     know is refused without asking.
//   - Schedulers and algorithms are cluster-scoped resources of the API
//     group vodascheduler.io (auth.APIGroup), named by GPU type: changing
//     a scheduler's algorithm needs "update schedulers/algorithm".
//   - Teams (their quotas) are a cluster-scoped resource of the same
//     group, named by team (a namespace): setting team-a's quota needs
//     "update teams" (name team-a), reading the quotas "list teams".
//     Reading them is asked about: it names namespaces.
//   - Other paths are non-resource URLs: GET /metrics needs "get
//     /metrics", as kube-apiserver's own does.
//
// Reads of cluster-level information need only authentication and are
// allowed without asking: getting and listing the schedulers and the
// algorithms, and the API's description (GET /api/v1/openapi.yaml).
// Kubernetes likewise lets every authenticated user read its discovery
// documents and public information (the system:discovery and
// system:public-info-viewer roles); none of it says anything of another
// user's jobs.
//
// Answers are kept for AllowedTTL or DeniedTTL, keyed by the whole
// question, and concurrent identical questions make one review.
type AccessReviewer struct {
	client     authorizationv1client.SubjectAccessReviewsGetter
	allowedTTL time.Duration
	deniedTTL  time.Duration
	memo       *memo[accessAnswer]
}

var _ auth.Authorizer = (*AccessReviewer)(nil)

// accessAnswer is what a review said of a question.
type accessAnswer struct {
	allowed bool
	reason  string
}

// NewAccessReviewer returns an AccessReviewer that creates
// SubjectAccessReviews with client (a clientset's AuthorizationV1()).
func NewAccessReviewer(client authorizationv1client.SubjectAccessReviewsGetter, opts AccessReviewOptions) *AccessReviewer {
	return &AccessReviewer{
		client:     client,
		allowedTTL: orDefault(opts.AllowedTTL, DefaultTTL),
		deniedTTL:  orDefault(opts.DeniedTTL, DefaultTTL),
		memo:       newMemo[accessAnswer](orDefault(opts.MaxEntries, DefaultAccessCacheEntries), opts.Clock, opts.Timeout),
	}
}

// Authorize asks the cluster whether u may perform a, unless a needs
// only authentication or cannot be put to the cluster. A denial's reason
// ends with the kubectl command that asks the same question.
func (r *AccessReviewer) Authorize(ctx context.Context, u auth.User, a auth.Attributes) (bool, string, error) {
	if needsOnlyAuthentication(a) {
		return true, "", nil
	}
	spec, refusal := reviewSpec(a)
	if refusal != "" {
		return false, refusal, nil
	}
	key, err := accessKey(u, a)
	if err != nil {
		return false, "", err
	}
	ans, err := r.memo.get(ctx, key, func(ctx context.Context) (accessAnswer, time.Duration, error) {
		return r.review(ctx, u, spec)
	})
	return ans.allowed, ans.reason, err
}

func (r *AccessReviewer) review(ctx context.Context, u auth.User, spec authorizationv1.SubjectAccessReviewSpec) (accessAnswer, time.Duration, error) {
	spec.User = u.Name
	spec.UID = u.UID
	spec.Groups = u.Groups
	if len(u.Extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			spec.Extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: spec}
	got, err := r.client.SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return accessAnswer{}, 0, fmt.Errorf("creating a SubjectAccessReview of %q: %w", u.Name, err)
	}
	if got.Status.Allowed {
		return accessAnswer{allowed: true}, r.allowedTTL, nil
	}
	// status.evaluationError is left out: it speaks of the cluster's
	// authorizers (roles not found, a webhook failing), not to the
	// caller, and without allowed it is a denial all the same.
	reason := "the cluster denies it"
	if got.Status.Reason != "" {
		reason += ": " + got.Status.Reason
	}
	reason += "; ask it as that user with: " + canIHint(spec)
	return accessAnswer{reason: reason}, r.deniedTTL, nil
}

// needsOnlyAuthentication reports whether a is a read of cluster-level
// information, allowed to any authenticated caller (see AccessReviewer).
func needsOnlyAuthentication(a auth.Attributes) bool {
	read := a.Verb == auth.VerbGet || a.Verb == auth.VerbList
	switch a.Resource {
	case "":
		return a.Verb == auth.VerbGet && a.Path == openAPIPath
	case auth.ResourceSchedulers, auth.ResourceAlgorithms:
		return read && a.Subresource == ""
	}
	return false
}

// reviewSpec puts a to the cluster: a SubjectAccessReview's spec without
// its user. refusal says why a cannot be put (an unknown job kind or
// resource); then there is no spec.
func reviewSpec(a auth.Attributes) (spec authorizationv1.SubjectAccessReviewSpec, refusal string) {
	switch a.Resource {
	case "":
		if a.Path == "" {
			return spec, "an action with neither a resource nor a path"
		}
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	case auth.ResourceJobs:
		group, resource, ok := JobResource(a.Kind)
		if !ok {
			return spec, fmt.Sprintf("unknown job kind %q; Voda runs %s", a.Kind, strings.Join(slices.Sorted(maps.Keys(jobResources)), ", "))
		}
		sub := a.Subresource
		if sub == auth.SubresourcePriority {
			sub = "" // a job's priority is part of the job
		}
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace:   a.Namespace,
			Verb:        a.Verb,
			Group:       group,
			Resource:    resource,
			Subresource: sub,
			Name:        a.Name,
		}
	case auth.ResourceSchedulers, auth.ResourceAlgorithms, auth.ResourceTeams:
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Verb:        a.Verb,
			Group:       auth.APIGroup,
			Resource:    a.Resource,
			Subresource: a.Subresource,
			Name:        a.Name,
		}
	default:
		return spec, fmt.Sprintf("unknown resource %q", a.Resource)
	}
	return spec, ""
}

// canIHint is the kubectl command that asks spec's question of the
// cluster as the user running it. A resource without a namespace gets
// --all-namespaces, because kubectl would otherwise ask in the current
// context's namespace, a different question.
func canIHint(spec authorizationv1.SubjectAccessReviewSpec) string {
	if n := spec.NonResourceAttributes; n != nil {
		return "kubectl auth can-i " + n.Verb + " " + n.Path
	}
	ra := spec.ResourceAttributes
	target := ra.Resource + "." + ra.Group
	if ra.Name != "" {
		target += "/" + ra.Name
	}
	cmd := "kubectl auth can-i " + ra.Verb + " " + target
	if ra.Subresource != "" {
		cmd += " --subresource=" + ra.Subresource
	}
	if ra.Namespace != "" {
		return cmd + " -n " + ra.Namespace
	}
	return cmd + " --all-namespaces"
}

// accessKey is the cache key of a question: every field of the user and
// the action, as JSON so that no two questions share a key, with the
// groups and extra values sorted so that their order does not matter.
func accessKey(u auth.User, a auth.Attributes) (string, error) {
	k := struct {
		Name   string
		UID    string
		Groups []string
		Extra  map[string][]string // encoding/json sorts the keys
		A      auth.Attributes
	}{u.Name, u.UID, sortedCopy(u.Groups), u.Extra, a}
	if len(u.Extra) > 0 {
		k.Extra = make(map[string][]string, len(u.Extra))
		for name, v := range u.Extra {
			k.Extra[name] = sortedCopy(v)
		}
	}
	b, err := json.Marshal(k)
	if err != nil {
		return "", fmt.Errorf("cache key of a SubjectAccessReview: %w", err)
	}
	return string(b), nil
}

// sortedCopy is s sorted, copied only when it is not already: the
// caller's slice is left as it is.
func sortedCopy(s []string) []string {
	if slices.IsSorted(s) {
		return s
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
