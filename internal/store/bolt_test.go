package store_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/store"
	"github.com/vodascheduler/voda/internal/store/storetest"
)

// boltFactory gives each test a data directory that does not exist yet,
// so Open's creating it is exercised too.
func boltFactory(t *testing.T) storetest.Opener {
	dir := filepath.Join(t.TempDir(), "data")
	return func(ctx context.Context) (store.Store, error) {
		return store.Open(ctx, "", dir)
	}
}

func TestBolt(t *testing.T) {
	storetest.Run(t, boltFactory)
}

// TestBoltSecondOpen checks a second server on the same data directory
// fails promptly and says why, rather than hanging on the file lock.
func TestBoltSecondOpen(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	first, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatalf("first Open: %v", err)
	}
	start := time.Now()
	second, err := store.Open(ctx, "", dir)
	elapsed := time.Since(start)
	if err == nil {
		_ = second.Close(ctx)
		t.Fatal("second Open of the same directory succeeded")
	}
	if elapsed > 5*time.Second {
		t.Errorf("second Open took %v to fail", elapsed)
	}
	if msg := err.Error(); !strings.Contains(msg, "locked") || !strings.Contains(msg, dir) {
		t.Errorf("second Open error %q does not say the file in %s is locked", msg, dir)
	}

	if err := first.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	third, err := store.Open(ctx, "", dir)
	if err != nil {
		t.Fatalf("Open after the first closed: %v", err)
	}
	if err := third.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
