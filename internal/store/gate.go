package store

import (
	"context"
	"sync"
)

// gate admits calls until the store is closed and then fails them with
// ErrClosed. Close waits for calls in flight, so it never pulls the
// database out from under one.
//
// A call holds the read lock for its whole duration, so methods must not
// call each other while inside the gate: a pending close would deadlock.
type gate struct {
	mu     sync.RWMutex
	closed bool
}

// enter admits a call, or returns why not: ctx's error (checked first, so
// a cancelled call never touches the database) or ErrClosed. On success
// the caller must call leave.
func (g *gate) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (g *gate) leave() { g.mu.RUnlock() }

// close shuts the gate once calls in flight have left; it reports false if
// the gate was already closed.
func (g *gate) close() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.closed = true
	return true
}
