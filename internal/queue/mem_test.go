package queue_test

import (
	"testing"

	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/queue/queuetest"
)

func openMem(t testing.TB) queue.Queue {
	t.Helper()
	q, err := queue.Open(t.Context(), "mem://", nil)
	if err != nil {
		t.Fatalf("Open(mem://): %v", err)
	}
	return q
}

func TestMem(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queue.Queue { return openMem(t) })
}
