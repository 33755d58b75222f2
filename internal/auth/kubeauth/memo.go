package kubeauth

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/util/cache"
)

// Clock tells the time the caches expire their answers by; tests pass a
// fake one (k8s.io/utils/clock/testing's FakeClock is one).
type Clock interface {
	Now() time.Time
}

// Defaults of the options.
const (
	// DefaultTTL is how long an answer is reused: 10s, as kube's
	// delegated authentication and authorization do. A revoked token or
	// role binding takes effect at most this late.
	DefaultTTL = 10 * time.Second
	// DefaultTimeout bounds one review.
	DefaultTimeout = 10 * time.Second
)

// memo keeps the answers of a remote review for a while, and makes one
// review at a time per key: the callers that ask the same question
// meanwhile wait for its answer. Errors are not kept, so the next caller
// asks again.
type memo[V any] struct {
	cache   *cache.LRUExpireCache
	flights singleflight.Group
	timeout time.Duration
}

func newMemo[V any](maxEntries int, clock Clock, timeout time.Duration) *memo[V] {
	if clock == nil {
		clock = realClock{}
	}
	return &memo[V]{
		cache:   cache.NewLRUExpireCacheWithClock(maxEntries, clock),
		timeout: orDefault(timeout, DefaultTimeout),
	}
}

// get returns the answer kept for key, or asks review for it. review
// runs detached from ctx, bounded by the memo's timeout, because other
// callers may be waiting for it: one caller giving up must not fail the
// others. The caller itself stops waiting when ctx ends.
func (m *memo[V]) get(ctx context.Context, key string, review func(context.Context) (V, time.Duration, error)) (V, error) {
	if v, ok := m.cache.Get(key); ok {
		return v.(V), nil
	}
	detached := context.WithoutCancel(ctx)
	ch := m.flights.DoChan(key, func() (any, error) {
		// A review that ended between our look and this flight has
		// kept its answer: don't ask twice.
		if v, ok := m.cache.Get(key); ok {
			return v, nil
		}
		ctx, cancel := context.WithTimeout(detached, m.timeout)
		defer cancel()
		v, ttl, err := review(ctx)
		if err != nil {
			return nil, err
		}
		m.cache.Add(key, v, ttl)
		return v, nil
	})
	var zero V
	select {
	case res := <-ch:
		if res.Err != nil {
			return zero, res.Err
		}
		return res.Val.(V), nil
	case <-ctx.Done():
		return zero, fmt.Errorf("waiting for a review: %w", ctx.Err())
	}
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// orDefault is d, or def when d is not positive (an option left unset).
func orDefault[T int | time.Duration](d, def T) T {
	if d <= 0 {
		return def
	}
	return d
}
