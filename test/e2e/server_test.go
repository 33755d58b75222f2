package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/vodascheduler/voda/test/vodatest"
)

type server = vodatest.Server

func binary(t *testing.T) string { return vodatest.Binary(t) }

func startServer(t *testing.T, args ...string) *server { return vodatest.StartServer(t, args...) }

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	vodatest.WaitFor(t, what, timeout, cond)
}

// manifest is a Horovod elastic MPIJob of the original's format.
func manifest(name string, min, max, epochs int) []byte {
	return vodatest.Manifest(name, min, max, epochs)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
