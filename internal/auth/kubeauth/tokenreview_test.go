package kubeauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vodascheduler/voda/internal/auth"
)

func requestWith(token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/jobs", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// tokenStatus answers every TokenReview with status, after checking the
// review's spec.
func tokenStatus(t testing.TB, wantAudiences []string, status authenticationv1.TokenReviewStatus) func(runtime.Object) (runtime.Object, error) {
	return func(obj runtime.Object) (runtime.Object, error) {
		tr := obj.(*authenticationv1.TokenReview)
		if diff := cmp.Diff(wantAudiences, tr.Spec.Audiences); diff != "" {
			t.Errorf("spec.audiences (-want +got):\n%s", diff)
		}
		tr = tr.DeepCopy()
		tr.Status = status
		return tr, nil
	}
}

var alice = authenticationv1.UserInfo{
	Username: "system:serviceaccount:team-a:trainer",
	UID:      "4b1c",
	Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"},
	Extra: map[string]authenticationv1.ExtraValue{
		"authentication.kubernetes.io/pod-name": {"trainer-0"},
	},
}

var aliceUser = auth.User{
	Name:   "system:serviceaccount:team-a:trainer",
	UID:    "4b1c",
	Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"},
	Extra:  map[string][]string{"authentication.kubernetes.io/pod-name": {"trainer-0"}},
}

func TestTokenReviewerMapping(t *testing.T) {
	tests := []struct {
		name      string
		token     string
		audiences []string
		status    authenticationv1.TokenReviewStatus
		want      auth.User
		wantOK    bool
		wantCalls int32
	}{
		{
			name:      "authenticated",
			token:     "good",
			status:    authenticationv1.TokenReviewStatus{Authenticated: true, User: alice},
			want:      aliceUser,
			wantOK:    true,
			wantCalls: 1,
		},
		{
			name:      "authenticated without extra",
			token:     "good",
			status:    authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "bob", Groups: []string{"devs"}}},
			want:      auth.User{Name: "bob", Groups: []string{"devs"}},
			wantOK:    true,
			wantCalls: 1,
		},
		{
			name:      "unauthenticated, with an error, is a refusal",
			token:     "expired",
			status:    authenticationv1.TokenReviewStatus{Error: "token has expired"},
			wantCalls: 1,
		},
		{
			name:      "authenticated without a user name",
			token:     "odd",
			status:    authenticationv1.TokenReviewStatus{Authenticated: true},
			wantCalls: 1,
		},
		{
			name:      "audiences overlap",
			token:     "good",
			audiences: []string{"voda", "other"},
			status:    authenticationv1.TokenReviewStatus{Authenticated: true, User: alice, Audiences: []string{"voda"}},
			want:      aliceUser,
			wantOK:    true,
			wantCalls: 1,
		},
		{
			name:      "audiences do not overlap",
			token:     "good",
			audiences: []string{"voda"},
			status:    authenticationv1.TokenReviewStatus{Authenticated: true, User: alice, Audiences: []string{"https://kubernetes.default.svc"}},
			wantCalls: 1,
		},
		{
			name:      "audiences asked for, none returned",
			token:     "good",
			audiences: []string{"voda"},
			status:    authenticationv1.TokenReviewStatus{Authenticated: true, User: alice},
			wantCalls: 1,
		},
		{
			name:      "audiences returned, none asked for",
			token:     "good",
			status:    authenticationv1.TokenReviewStatus{Authenticated: true, User: alice, Audiences: []string{"https://kubernetes.default.svc"}},
			want:      aliceUser,
			wantOK:    true,
			wantCalls: 1,
		},
		{
			name:   "no token",
			token:  "",
			status: authenticationv1.TokenReviewStatus{Authenticated: true, User: alice},
		},
		{
			name:   "oversize token",
			token:  strings.Repeat("x", MaxTokenBytes+1),
			status: authenticationv1.TokenReviewStatus{Authenticated: true, User: alice},
		},
		{
			name:      "token of the largest size",
			token:     strings.Repeat("x", MaxTokenBytes),
			status:    authenticationv1.TokenReviewStatus{Authenticated: true, User: alice},
			want:      aliceUser,
			wantOK:    true,
			wantCalls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newReviews(t, "tokenreviews", tokenStatus(t, tt.audiences, tt.status))
			tr := NewTokenReviewer(c.AuthenticationV1(), TokenReviewOptions{Audiences: tt.audiences})
			u, ok, err := tr.Authenticate(requestWith(tt.token))
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, u); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
			c.wantCalls(t, tt.wantCalls)
		})
	}
}

func TestTokenReviewerSendsToken(t *testing.T) {
	var got string
	c := newReviews(t, "tokenreviews", func(obj runtime.Object) (runtime.Object, error) {
		got = obj.(*authenticationv1.TokenReview).Spec.Token
		return obj, nil
	})
	tr := NewTokenReviewer(c.AuthenticationV1(), TokenReviewOptions{})
	if _, ok, err := tr.Authenticate(requestWith("s3cret")); ok || err != nil {
		t.Fatalf("ok %v, err %v; want a refusal", ok, err)
	}
	if got != "s3cret" {
		t.Errorf("spec.token = %q, want the request's", got)
	}
}

func TestTokenReviewerAPIError(t *testing.T) {
	fail := true
	c := newReviews(t, "tokenreviews", func(obj runtime.Object) (runtime.Object, error) {
		if fail {
			return nil, errors.New("connection refused")
		}
		return tokenStatus(t, nil, authenticationv1.TokenReviewStatus{Authenticated: true, User: alice})(obj)
	})
	tr := NewTokenReviewer(c.AuthenticationV1(), TokenReviewOptions{})
	_, ok, err := tr.Authenticate(requestWith("s3cret"))
	if err == nil || ok {
		t.Fatalf("ok %v, err %v; want an error", ok, err)
	}
	if !strings.Contains(err.Error(), "TokenReview") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q should name the TokenReview and its cause", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q holds the token", err)
	}
	if n := len(tr.memo.cache.Keys()); n != 0 {
		t.Errorf("%d cache entries after an error, want none", n)
	}

	fail = false
	if _, ok, err := tr.Authenticate(requestWith("s3cret")); !ok || err != nil {
		t.Fatalf("after the API recovered: ok %v, err %v", ok, err)
	}
	c.wantCalls(t, 2)
}

func TestTokenReviewerCache(t *testing.T) {
	clock := newFakeClock()
	c := newReviews(t, "tokenreviews", func(obj runtime.Object) (runtime.Object, error) {
		tr := obj.(*authenticationv1.TokenReview).DeepCopy()
		if tr.Spec.Token == "good" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: alice}
		}
		return tr, nil
	})
	tr := NewTokenReviewer(c.AuthenticationV1(), TokenReviewOptions{TTL: DefaultTTL, Clock: clock})
	authenticate := func(token string, wantOK bool) {
		t.Helper()
		_, ok, err := tr.Authenticate(requestWith(token))
		if err != nil || ok != wantOK {
			t.Fatalf("token %s: ok %v, err %v; want ok %v", token, ok, err, wantOK)
		}
	}

	authenticate("good", true)
	authenticate("good", true)
	c.wantCalls(t, 1)

	authenticate("bad", false) // a refusal is kept too
	authenticate("bad", false)
	c.wantCalls(t, 2)

	clock.Step(DefaultTTL)
	authenticate("good", true)
	c.wantCalls(t, 2) // still within the TTL

	clock.Step(1)
	authenticate("good", true)
	authenticate("bad", false)
	c.wantCalls(t, 4)

	keys := tr.memo.cache.Keys()
	if len(keys) != 2 {
		t.Fatalf("%d cache entries, want one a token", len(keys))
	}
	for _, k := range keys {
		s := k.(string)
		if s != tokenKey("good") && s != tokenKey("bad") {
			t.Errorf("cache key %q is not a token's hash", s)
		}
		if strings.Contains(s, "good") || strings.Contains(s, "bad") {
			t.Errorf("cache key %q holds a token", s)
		}
	}
}

func TestTokenReviewerReturnsCopies(t *testing.T) {
	c := newReviews(t, "tokenreviews", tokenStatus(t, nil, authenticationv1.TokenReviewStatus{Authenticated: true, User: alice}))
	tr := NewTokenReviewer(c.AuthenticationV1(), TokenReviewOptions{})
	u, _, _ := tr.Authenticate(requestWith("good"))
	u.Groups[0] = "system:masters"
	u.Extra["authentication.kubernetes.io/pod-name"][0] = "other"
	u.Extra["new"] = []string{"x"}

	again, _, _ := tr.Authenticate(requestWith("good"))
	if diff := cmp.Diff(aliceUser, again); diff != "" {
		t.Errorf("a caller changed the cached user (-want +got):\n%s", diff)
	}
}

// TestTokenReviewerSingleflight: a burst of requests with one token that
// is not in the cache makes one review.
func TestTokenReviewerSingleflight(t *testing.T) {
	const callers = 50
	var started sync.WaitGroup
	started.Add(callers)
	allStarted := make(chan struct{})
	go func() { started.Wait(); close(allStarted) }()

	c := newReviews(t, "tokenreviews", func(obj runtime.Object) (runtime.Object, error) {
		<-allStarted
		return tokenStatus(t, nil, authenticationv1.TokenReviewStatus{Authenticated: true, User: alice})(obj)
	})
	tr := NewTokenReviewer(c.AuthenticationV1(), TokenReviewOptions{})

	var done sync.WaitGroup
	for range callers {
		done.Go(func() {
			started.Done()
			u, ok, err := tr.Authenticate(requestWith("cold"))
			if err != nil || !ok || u.Name != alice.Username {
				t.Errorf("got %q, ok %v, err %v", u.Name, ok, err)
			}
		})
	}
	done.Wait()
	c.wantCalls(t, 1)
}

// TestTokenReviewerCallerGivesUp: a caller whose request ends stops
// waiting, and the review it started still answers the others.
func TestTokenReviewerCallerGivesUp(t *testing.T) {
	asked, release := make(chan struct{}), make(chan struct{})
	c := newReviews(t, "tokenreviews", func(obj runtime.Object) (runtime.Object, error) {
		close(asked)
		<-release
		return tokenStatus(t, nil, authenticationv1.TokenReviewStatus{Authenticated: true, User: alice})(obj)
	})
	tr := NewTokenReviewer(c.AuthenticationV1(), TokenReviewOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error)
	go func() {
		_, _, err := tr.Authenticate(requestWith("slow").WithContext(ctx))
		first <- err
	}()
	<-asked
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that gave up got %v, want context.Canceled", err)
	}

	close(release)
	if _, ok, err := tr.Authenticate(requestWith("slow")); !ok || err != nil {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	c.wantCalls(t, 1)
}

func BenchmarkTokenReviewerCached(b *testing.B) {
	c := newReviews(b, "tokenreviews", tokenStatus(b, nil, authenticationv1.TokenReviewStatus{Authenticated: true, User: alice}))
	tr := NewTokenReviewer(c.AuthenticationV1(), TokenReviewOptions{TTL: 1 << 62})
	r := requestWith("eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.a-service-account-token-of-typical-length.signature")
	if _, ok, err := tr.Authenticate(r); !ok || err != nil {
		b.Fatalf("ok %v, err %v", ok, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, _ := tr.Authenticate(r); !ok {
			b.Fatal("refused")
		}
	}
}
