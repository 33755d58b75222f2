package queue_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/queue"
)

func TestOpenErrors(t *testing.T) {
	cases := []struct {
		name, url string
		wantIn    string // the error mentions this
	}{
		{"unknown scheme", "kafka://broker:9092", `"kafka"`},
		{"no scheme", "broker:5672", "no scheme"},
		{"mem with host", "mem://elsewhere", "mem://"},
		{"bad amqp URL", "amqp://user:s3cret%zz@host/", "invalid AMQP URL"},
		{"unreachable broker", "amqp://user:s3cret@127.0.0.1:1/", "connect to amqp://user@127.0.0.1:1/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			q, err := queue.Open(t.Context(), c.url, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			if err == nil {
				q.Close()
				t.Fatalf("Open(%q) = nil error, want one mentioning %s", c.url, c.wantIn)
			}
			if !strings.Contains(err.Error(), c.wantIn) {
				t.Errorf("Open(%q) = %v, want it to mention %s", c.url, err, c.wantIn)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("Open(%q) = %v: the error shows the password", c.url, err)
			}
			if strings.Contains(logs.String(), "s3cret") {
				t.Errorf("Open(%q) logged the password:\n%s", c.url, logs.String())
			}
		})
	}
}

func TestOpenAMQPHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if q, err := queue.Open(ctx, "amqp://127.0.0.1:5672/", nil); err == nil {
		q.Close()
		t.Fatal("Open with a cancelled context = nil error, want one")
	}
}

func TestOpenMem(t *testing.T) {
	for _, url := range []string{"", "mem://"} {
		q, err := queue.Open(t.Context(), url, nil)
		if err != nil {
			t.Fatalf("Open(%q): %v", url, err)
		}
		if err := q.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}
