package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vodascheduler/voda/internal/store"
)

func cmpSorted() cmp.Option {
	return cmpopts.SortSlices(func(a, b string) bool { return a < b })
}

func TestOpenErrors(t *testing.T) {
	ctx := t.Context()
	cases := []struct {
		name, uri, dir, want string
	}{
		{"unknown scheme", "postgres://db:5432/voda", t.TempDir(), `"postgres"`},
		{"no scheme", "localhost:27017", t.TempDir(), "scheme"},
		{"no data directory", "", "", "data directory"},
		{"bad mongodb uri", "mongodb://", "", "mongodb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := store.Open(ctx, c.uri, c.dir)
			if err == nil {
				_ = s.Close(ctx)
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open error %q does not mention %s", err, c.want)
			}
		})
	}
}

// TestOpenUnreachableMongo checks Open fails within ctx, not on the first
// request, when nothing listens.
func TestOpenUnreachableMongo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	s, err := store.Open(ctx, "mongodb://127.0.0.1:1/voda", "")
	if err == nil {
		_ = s.Close(t.Context())
		t.Fatal("Open of an unreachable server succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open took %v to fail", d)
	}
}

// TestOpenErrorsHidePasswords: a uri's password never shows in Open's
// errors, which name the server without it.
func TestOpenErrorsHidePasswords(t *testing.T) {
	for _, c := range []struct{ uri, want string }{
		{"mongodb://voda:s3cret@127.0.0.1:1/voda", "mongodb://voda@127.0.0.1:1"},
		{"mongodb://voda:s3cret@127.0.0.1:1,127.0.0.1:2/voda?tlsCertificateKeyFilePassword=s3cret", "mongodb://voda@127.0.0.1:1,127.0.0.1:2"},
		{"mongodb://voda:s3cret@127.0.0.1:99999/voda", "port"},
		{"mongodb://voda:s3:cret@127.0.0.1:1/voda", "colon"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		s, err := store.Open(ctx, c.uri, "")
		cancel()
		if err == nil {
			_ = s.Close(t.Context())
			t.Fatalf("Open(%q) succeeded", c.uri)
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3") {
			t.Errorf("Open(%q) = %v, want an error naming %s and no password", c.uri, err, c.want)
		}
	}
}
