package e2e

import (
	"context"
	"fmt"
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
	return []byte(fmt.Sprintf(`apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: %s
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - name: launcher
            image: horovod/horovod:0.28.1
            env:
            - {name: MIN_NUM_PROC, value: "%d"}
            - {name: MAX_NUM_PROC, value: "%d"}
            - {name: EPOCHS, value: "%d"}
    Worker:
      replicas: %d
      template:
        spec:
          nodeSelector:
            vodascheduler/accelerator: v100
          containers:
          - name: worker
            image: horovod/horovod:0.28.1
`, name, min, max, epochs, min))
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
