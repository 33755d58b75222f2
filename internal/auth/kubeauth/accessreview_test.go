package kubeauth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vodascheduler/voda/internal/auth"
)

// sarStatus answers every SubjectAccessReview with status, and records
// the specs asked.
type sarStatus struct {
	mu     sync.Mutex
	specs  []authorizationv1.SubjectAccessReviewSpec
	status authorizationv1.SubjectAccessReviewStatus
	err    error
}

func (s *sarStatus) respond(obj runtime.Object) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sar := obj.(*authorizationv1.SubjectAccessReview).DeepCopy()
	s.specs = append(s.specs, sar.Spec)
	if s.err != nil {
		return nil, s.err
	}
	sar.Status = s.status
	return sar, nil
}

func newAccessReviewer(t testing.TB, s *sarStatus, opts AccessReviewOptions) (*AccessReviewer, *reviews) {
	c := newReviews(t, "subjectaccessreviews", s.respond)
	return NewAccessReviewer(c.AuthorizationV1(), opts), c
}

// aliceSpec is the spec of a review of aliceUser.
func aliceSpec(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) *authorizationv1.SubjectAccessReviewSpec {
	return &authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes:    ra,
		NonResourceAttributes: nra,
		User:                  aliceUser.Name,
		UID:                   aliceUser.UID,
		Groups:                aliceUser.Groups,
		Extra:                 map[string]authorizationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"trainer-0"}},
	}
}

// mappingCase is an action, and the review it makes of aliceUser.
type mappingCase struct {
	name string
	a    auth.Attributes
	// want is the review asked; nil for none.
	want *authorizationv1.SubjectAccessReviewSpec
	// wantReason is a part of a refusal's reason; none for an action
	// allowed (every review in these tests allows).
	wantReason string
}

func TestAccessReviewerMapping(t *testing.T) {
	tests := []mappingCase{
		{
			name: "create an MPIJob",
			a:    auth.Attributes{Verb: auth.VerbCreate, Resource: auth.ResourceJobs, Kind: "MPIJob", Namespace: "team-a"},
			want: aliceSpec(&authorizationv1.ResourceAttributes{Verb: "create", Group: "kubeflow.org", Resource: "mpijobs", Namespace: "team-a"}, nil),
		},
		{
			name: "get a PyTorchJob",
			a:    auth.Attributes{Verb: auth.VerbGet, Resource: auth.ResourceJobs, Kind: "PyTorchJob", Namespace: "team-a", Name: "bert"},
			want: aliceSpec(&authorizationv1.ResourceAttributes{Verb: "get", Group: "kubeflow.org", Resource: "pytorchjobs", Namespace: "team-a", Name: "bert"}, nil),
		},
		{
			name: "list MPIJobs in all namespaces",
			a:    auth.Attributes{Verb: auth.VerbList, Resource: auth.ResourceJobs, Kind: "MPIJob"},
			want: aliceSpec(&authorizationv1.ResourceAttributes{Verb: "list", Group: "kubeflow.org", Resource: "mpijobs"}, nil),
		},
		{
			name: "delete an MPIJob",
			a:    auth.Attributes{Verb: auth.VerbDelete, Resource: auth.ResourceJobs, Kind: "MPIJob", Namespace: "team-a", Name: "resnet"},
			want: aliceSpec(&authorizationv1.ResourceAttributes{Verb: "delete", Group: "kubeflow.org", Resource: "mpijobs", Namespace: "team-a", Name: "resnet"}, nil),
		},
		{
			name: "a job's priority is an update of the job",
			a:    auth.Attributes{Verb: auth.VerbUpdate, Resource: auth.ResourceJobs, Subresource: auth.SubresourcePriority, Kind: "MPIJob", Namespace: "team-a", Name: "resnet"},
			want: aliceSpec(&authorizationv1.ResourceAttributes{Verb: "update", Group: "kubeflow.org", Resource: "mpijobs", Namespace: "team-a", Name: "resnet"}, nil),
		},
		{
			name:       "unknown job kind, refused without asking",
			a:          auth.Attributes{Verb: auth.VerbCreate, Resource: auth.ResourceJobs, Kind: "TFJob", Namespace: "team-a"},
			wantReason: `unknown job kind "TFJob"; Voda runs MPIJob, PyTorchJob`,
		},
		{
			name:       "empty job kind, refused without asking",
			a:          auth.Attributes{Verb: auth.VerbList, Resource: auth.ResourceJobs},
			wantReason: `unknown job kind ""`,
		},
		{
			name:       "unknown resource, refused without asking",
			a:          auth.Attributes{Verb: auth.VerbGet, Resource: "nodes"},
			wantReason: `unknown resource "nodes"`,
		},
		{
			name:       "neither resource nor path, refused without asking",
			a:          auth.Attributes{Verb: auth.VerbGet},
			wantReason: "neither a resource nor a path",
		},
		{
			name: "update a scheduler's algorithm",
			a:    auth.Attributes{Verb: auth.VerbUpdate, Resource: auth.ResourceSchedulers, Subresource: auth.SubresourceAlgorithm, Name: "v100"},
			want: aliceSpec(&authorizationv1.ResourceAttributes{Verb: "update", Group: auth.APIGroup, Resource: "schedulers", Subresource: "algorithm", Name: "v100"}, nil),
		},
		{
			name: "update a scheduler's rate limit",
			a:    auth.Attributes{Verb: auth.VerbUpdate, Resource: auth.ResourceSchedulers, Subresource: auth.SubresourceRateLimit, Name: "a100"},
			want: aliceSpec(&authorizationv1.ResourceAttributes{Verb: "update", Group: auth.APIGroup, Resource: "schedulers", Subresource: "ratelimit", Name: "a100"}, nil),
		},
		{
			name: "list the teams: asked, since it names namespaces",
			a:    auth.Attributes{Verb: auth.VerbList, Resource: auth.ResourceTeams},
			want: aliceSpec(&authorizationv1.ResourceAttributes{Verb: "list", Group: auth.APIGroup, Resource: "teams"}, nil),
		},
		{
			name: "update a team's quota",
			a:    auth.Attributes{Verb: auth.VerbUpdate, Resource: auth.ResourceTeams, Name: "team-a"},
			want: aliceSpec(&authorizationv1.ResourceAttributes{Verb: "update", Group: auth.APIGroup, Resource: "teams", Name: "team-a"}, nil),
		},
		{
			name: "delete a team's quota",
			a:    auth.Attributes{Verb: auth.VerbDelete, Resource: auth.ResourceTeams, Name: "team-b"},
			want: aliceSpec(&authorizationv1.ResourceAttributes{Verb: "delete", Group: auth.APIGroup, Resource: "teams", Name: "team-b"}, nil),
		},
		{
			name: "the metrics are a non-resource URL",
			a:    auth.Attributes{Verb: auth.VerbGet, Path: "/metrics"},
			want: aliceSpec(nil, &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/metrics"}),
		},
	}
	// Reads of cluster-level information: allowed with no review.
	for _, a := range []auth.Attributes{
		{Verb: auth.VerbGet, Resource: auth.ResourceSchedulers, Name: "v100"},
		{Verb: auth.VerbList, Resource: auth.ResourceSchedulers},
		{Verb: auth.VerbGet, Resource: auth.ResourceAlgorithms, Name: "ffdl-optimizer"},
		{Verb: auth.VerbList, Resource: auth.ResourceAlgorithms},
		{Verb: auth.VerbGet, Path: "/api/v1/openapi.yaml"},
	} {
		tests = append(tests, mappingCase{name: a.String() + " needs only authentication", a: a})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &sarStatus{status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}
			ar, _ := newAccessReviewer(t, s, AccessReviewOptions{})
			allowed, reason, err := ar.Authorize(context.Background(), aliceUser, tt.a)
			if err != nil {
				t.Fatal(err)
			}
			if wantAllowed := tt.wantReason == ""; allowed != wantAllowed || !strings.Contains(reason, tt.wantReason) {
				t.Errorf("allowed %v, reason %q; want %v, %q", allowed, reason, wantAllowed, tt.wantReason)
			}
			var want []authorizationv1.SubjectAccessReviewSpec
			if tt.want != nil {
				want = append(want, *tt.want)
			}
			if diff := cmp.Diff(want, s.specs); diff != "" {
				t.Errorf("reviews asked (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAccessReviewerDenial(t *testing.T) {
	tests := []struct {
		name   string
		a      auth.Attributes
		status authorizationv1.SubjectAccessReviewStatus
		want   string
	}{
		{
			name:   "no reason, a job in a namespace",
			a:      auth.Attributes{Verb: auth.VerbCreate, Resource: auth.ResourceJobs, Kind: "MPIJob", Namespace: "team-a"},
			status: authorizationv1.SubjectAccessReviewStatus{},
			want:   "the cluster denies it; ask it as that user with: kubectl auth can-i create mpijobs.kubeflow.org -n team-a",
		},
		{
			name:   "a reason, a named job",
			a:      auth.Attributes{Verb: auth.VerbUpdate, Resource: auth.ResourceJobs, Subresource: auth.SubresourcePriority, Kind: "PyTorchJob", Namespace: "team-b", Name: "bert"},
			status: authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "frozen by policy"},
			want:   "the cluster denies it: frozen by policy; ask it as that user with: kubectl auth can-i update pytorchjobs.kubeflow.org/bert -n team-b",
		},
		{
			name: "jobs across namespaces",
			a:    auth.Attributes{Verb: auth.VerbList, Resource: auth.ResourceJobs, Kind: "MPIJob"},
			want: "the cluster denies it; ask it as that user with: kubectl auth can-i list mpijobs.kubeflow.org --all-namespaces",
		},
		{
			name: "a scheduler's subresource",
			a:    auth.Attributes{Verb: auth.VerbUpdate, Resource: auth.ResourceSchedulers, Subresource: auth.SubresourceAlgorithm, Name: "v100"},
			want: "the cluster denies it; ask it as that user with: kubectl auth can-i update schedulers.vodascheduler.io/v100 --subresource=algorithm --all-namespaces",
		},
		{
			name:   "an evaluation error alone is a denial, and is not shown",
			a:      auth.Attributes{Verb: auth.VerbGet, Path: "/metrics"},
			status: authorizationv1.SubjectAccessReviewStatus{EvaluationError: `clusterrole.rbac.authorization.k8s.io "monitoring" not found`},
			want:   "the cluster denies it; ask it as that user with: kubectl auth can-i get /metrics",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ar, _ := newAccessReviewer(t, &sarStatus{status: tt.status}, AccessReviewOptions{})
			allowed, reason, err := ar.Authorize(context.Background(), aliceUser, tt.a)
			if err != nil || allowed {
				t.Fatalf("allowed %v, err %v; want a denial", allowed, err)
			}
			if reason != tt.want {
				t.Errorf("reason\n%q, want\n%q", reason, tt.want)
			}
		})
	}
}

func TestAccessReviewerAPIError(t *testing.T) {
	s := &sarStatus{err: errors.New("connection refused")}
	ar, c := newAccessReviewer(t, s, AccessReviewOptions{})
	a := auth.Attributes{Verb: auth.VerbGet, Path: "/metrics"}
	allowed, _, err := ar.Authorize(context.Background(), aliceUser, a)
	if err == nil || allowed {
		t.Fatalf("allowed %v, err %v; want an error", allowed, err)
	}
	if !strings.Contains(err.Error(), "SubjectAccessReview") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q should name the SubjectAccessReview and its cause", err)
	}

	s.err = nil
	s.status.Allowed = true
	if allowed, _, err := ar.Authorize(context.Background(), aliceUser, a); !allowed || err != nil {
		t.Fatalf("after the API recovered: allowed %v, err %v", allowed, err)
	}
	c.wantCalls(t, 2)
}

func TestAccessReviewerCache(t *testing.T) {
	clock := newFakeClock()
	s := &sarStatus{status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}
	ar, c := newAccessReviewer(t, s, AccessReviewOptions{AllowedTTL: 30e9, DeniedTTL: 5e9, Clock: clock})
	ctx := context.Background()
	create := auth.Attributes{Verb: auth.VerbCreate, Resource: auth.ResourceJobs, Kind: "MPIJob", Namespace: "team-a"}
	authorize := func(u auth.User, a auth.Attributes, want bool) {
		t.Helper()
		allowed, _, err := ar.Authorize(ctx, u, a)
		if err != nil || allowed != want {
			t.Fatalf("%s: allowed %v, err %v; want %v", a, allowed, err, want)
		}
	}

	authorize(aliceUser, create, true)
	authorize(aliceUser, create, true)
	c.wantCalls(t, 1)

	// The groups' order and the extra values' order make no other
	// question.
	shuffled := cloneUser(aliceUser)
	shuffled.Groups = []string{aliceUser.Groups[2], aliceUser.Groups[0], aliceUser.Groups[1]}
	authorize(shuffled, create, true)
	c.wantCalls(t, 1)

	// Another namespace, another user, another group: other questions.
	other := create
	other.Namespace = "team-b"
	authorize(aliceUser, other, true)
	bob := cloneUser(aliceUser)
	bob.Name = "bob"
	authorize(bob, create, true)
	admin := cloneUser(aliceUser)
	admin.Groups = append(admin.Groups, "voda:admins")
	authorize(admin, create, true)
	extra := cloneUser(aliceUser)
	extra.Extra["authentication.kubernetes.io/pod-name"] = []string{"trainer-1"}
	authorize(extra, create, true)
	c.wantCalls(t, 5)
	if n := len(ar.memo.cache.Keys()); n != 5 {
		t.Errorf("%d cache entries, want 5", n)
	}

	// A denial is kept for DeniedTTL, an allowance for AllowedTTL.
	s.status.Allowed = false
	metrics := auth.Attributes{Verb: auth.VerbGet, Path: "/metrics"}
	authorize(aliceUser, metrics, false)
	authorize(aliceUser, metrics, false)
	c.wantCalls(t, 6)
	clock.Step(5e9 + 1)
	authorize(aliceUser, metrics, false)
	authorize(aliceUser, create, true) // still allowed from the cache
	c.wantCalls(t, 7)
	clock.Step(25e9)
	authorize(aliceUser, create, false)
	c.wantCalls(t, 8)
}

func TestAccessKeyIsUnambiguous(t *testing.T) {
	// Fields that would run together in a key made by joining strings.
	a := auth.Attributes{Verb: auth.VerbGet, Resource: auth.ResourceJobs, Kind: "MPIJob", Namespace: "a", Name: "b/c"}
	b := auth.Attributes{Verb: auth.VerbGet, Resource: auth.ResourceJobs, Kind: "MPIJob", Namespace: "a/b", Name: "c"}
	ka, _ := accessKey(auth.User{Name: "x", Groups: []string{"g,h"}}, a)
	kb, _ := accessKey(auth.User{Name: "x", Groups: []string{"g", "h"}}, a)
	kc, _ := accessKey(auth.User{Name: "x", Groups: []string{"g,h"}}, b)
	if ka == kb || ka == kc {
		t.Errorf("two questions share a key:\n%s\n%s\n%s", ka, kb, kc)
	}
}

func TestJobResource(t *testing.T) {
	for kind, want := range map[string][2]string{
		"MPIJob":     {"kubeflow.org", "mpijobs"},
		"PyTorchJob": {"kubeflow.org", "pytorchjobs"},
		"":           {"", ""},
		"mpijob":     {"", ""},
	} {
		group, resource, ok := JobResource(kind)
		if [2]string{group, resource} != want || ok != (want[0] != "") {
			t.Errorf("JobResource(%q) = %q, %q, %v; want %q", kind, group, resource, ok, want)
		}
	}
}

func BenchmarkAccessReviewerCached(b *testing.B) {
	s := &sarStatus{status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}
	ar, _ := newAccessReviewer(b, s, AccessReviewOptions{AllowedTTL: 1 << 62})
	ctx := context.Background()
	a := auth.Attributes{Verb: auth.VerbCreate, Resource: auth.ResourceJobs, Kind: "MPIJob", Namespace: "team-a"}
	if allowed, _, err := ar.Authorize(ctx, aliceUser, a); !allowed || err != nil {
		b.Fatalf("allowed %v, err %v", allowed, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if allowed, _, _ := ar.Authorize(ctx, aliceUser, a); !allowed {
			b.Fatal("denied")
		}
	}
}
