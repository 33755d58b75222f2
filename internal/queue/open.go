package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// errEmptyName rejects the empty queue name, which RabbitMQ would take as
// "make up a name for me".
var errEmptyName = errors.New("empty queue name")

// Open returns the Queue that url names: "" or "mem://" is an in-process
// queue (messages live as long as the process), "amqp://" or "amqps://" a
// RabbitMQ broker (see amqp091.ParseURI for the form). For RabbitMQ, Open
// connects before returning, so a wrong address or password fails here;
// later connection losses are repaired in the background. A nil log
// discards the queue's logs.
func Open(ctx context.Context, url string, log *slog.Logger) (Queue, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if url == "" || url == "mem://" {
		return newMem(), nil
	}
	scheme, _, ok := strings.Cut(url, "://")
	switch {
	case !ok:
		// No scheme: say nothing more, the string may hold a password.
		return nil, errors.New("queue: open: URL has no scheme (want mem:// or amqp://)")
	case scheme == "amqp" || scheme == "amqps":
		return openRabbitMQ(ctx, url, log)
	case scheme == "mem":
		return nil, errors.New("queue: open: mem:// takes no host or path")
	default:
		return nil, fmt.Errorf("queue: open: unsupported scheme %q (want mem:// or amqp://)", scheme)
	}
}
