package kubeauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"

	"github.com/vodascheduler/voda/internal/auth"
)

// MaxTokenBytes bounds the tokens sent for review. Kubernetes' tokens
// (ServiceAccount JWTs, OIDC ID tokens) are a few KiB at most; a longer
// one cannot be valid, and refusing it at once keeps a caller from
// making the API server hash and send megabytes to kube-apiserver for
// each request.
const MaxTokenBytes = 16 << 10

// DefaultTokenCacheEntries is the default of TokenReviewOptions.MaxEntries.
const DefaultTokenCacheEntries = 4096

// TokenReviewOptions tune a TokenReviewer. The zero value is the
// defaults.
type TokenReviewOptions struct {
	// TTL is how long a review's answer, authenticated or not, is
	// reused; DefaultTTL when not positive.
	TTL time.Duration
	// MaxEntries bounds the cache; DefaultTokenCacheEntries when not
	// positive. The least recently used answer makes room.
	MaxEntries int
	// Audiences are the reviews' spec.audiences: the token must have
	// been issued for one of them. Empty means the API server's own
	// audiences, that is tokens meant for kube-apiserver.
	Audiences []string
	// Clock expires the cache's answers; the real clock when nil.
	Clock Clock
	// Timeout bounds one review; DefaultTimeout when not positive.
	Timeout time.Duration
}

// TokenReviewer authenticates bearer tokens by asking the cluster, with
// a TokenReview, whose they are. Its answers, authenticated or not, are
// kept for TTL under the SHA-256 of the token: the token itself is
// never kept, logged or put in an error. Concurrent requests with the
// same token make one review.
type TokenReviewer struct {
	client    authenticationv1client.TokenReviewsGetter
	audiences []string
	ttl       time.Duration
	memo      *memo[tokenAnswer]
}

var _ auth.Authenticator = (*TokenReviewer)(nil)

// tokenAnswer is what a review said of a token.
type tokenAnswer struct {
	user auth.User
	ok   bool
}

// NewTokenReviewer returns a TokenReviewer that creates TokenReviews
// with client (a clientset's AuthenticationV1()).
func NewTokenReviewer(client authenticationv1client.TokenReviewsGetter, opts TokenReviewOptions) *TokenReviewer {
	return &TokenReviewer{
		client:    client,
		audiences: slices.Clone(opts.Audiences),
		ttl:       orDefault(opts.TTL, DefaultTTL),
		memo:      newMemo[tokenAnswer](orDefault(opts.MaxEntries, DefaultTokenCacheEntries), opts.Clock, opts.Timeout),
	}
}

// Authenticate reviews the request's bearer token. A request without
// one, or with one longer than MaxTokenBytes, is refused without asking.
func (t *TokenReviewer) Authenticate(r *http.Request) (auth.User, bool, error) {
	token, ok := auth.BearerToken(r)
	if !ok || len(token) > MaxTokenBytes {
		return auth.User{}, false, nil
	}
	a, err := t.memo.get(r.Context(), tokenKey(token), func(ctx context.Context) (tokenAnswer, time.Duration, error) {
		a, err := t.review(ctx, token)
		return a, t.ttl, err
	})
	if err != nil || !a.ok {
		return auth.User{}, false, err
	}
	return cloneUser(a.user), true, nil
}

// tokenKey is the cache key of a token: its SHA-256, so that the cache
// holds nothing a caller could present.
func tokenKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func (t *TokenReviewer) review(ctx context.Context, token string) (tokenAnswer, error) {
	tr := &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: t.audiences},
	}
	got, err := t.client.TokenReviews().Create(ctx, tr, metav1.CreateOptions{})
	if err != nil {
		return tokenAnswer{}, fmt.Errorf("creating a TokenReview: %w", err)
	}
	return t.answer(got.Status), nil
}

// answer reads a review's status. An unauthenticated token is a refusal,
// whatever status.error says: the review was made and its answer is no.
func (t *TokenReviewer) answer(s authenticationv1.TokenReviewStatus) tokenAnswer {
	if !s.Authenticated || s.User.Username == "" || !t.audienceMatches(s.Audiences) {
		return tokenAnswer{}
	}
	u := auth.User{
		Name:   s.User.Username,
		UID:    s.User.UID,
		Groups: slices.Clone(s.User.Groups),
	}
	if len(s.User.Extra) > 0 {
		u.Extra = make(map[string][]string, len(s.User.Extra))
		for k, v := range s.User.Extra {
			u.Extra[k] = slices.Clone([]string(v))
		}
	}
	return tokenAnswer{user: u, ok: true}
}

// audienceMatches reports whether a review's status.audiences allows
// the token. When audiences were asked for, the TokenReview API says a
// client "should validate that a compatible audience identifier is
// returned in the status.audiences field to ensure that the TokenReview
// server is audience aware"; an empty list means the token is valid for
// kube-apiserver's own audiences, not necessarily ours, so it is refused.
// (k8s.io/apiserver's webhook authenticator does the same unless the
// audiences asked for are kube-apiserver's own; kube-apiserver itself has
// filled status.audiences since 1.13.)
func (t *TokenReviewer) audienceMatches(got []string) bool {
	if len(t.audiences) == 0 {
		return true
	}
	for _, a := range got {
		if slices.Contains(t.audiences, a) {
			return true
		}
	}
	return false
}

// cloneUser copies the slices and map of a cached user, which callers
// may change.
func cloneUser(u auth.User) auth.User {
	u.Groups = slices.Clone(u.Groups)
	if u.Extra != nil {
		extra := maps.Clone(u.Extra)
		for k, v := range extra {
			extra[k] = slices.Clone(v)
		}
		u.Extra = extra
	}
	return u
}
