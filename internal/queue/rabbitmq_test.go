package queue_test

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/vodascheduler/voda/internal/queue"
	"github.com/vodascheduler/voda/internal/queue/queuetest"
	"github.com/vodascheduler/voda/internal/queue/rabbittest"
)

// The broker starts with the first RabbitMQ test (about 4 s) and stops
// after the last.
func TestMain(m *testing.M) { rabbittest.Main(m) }

// openRabbit opens a Queue on the test broker, logging to the test's
// output (not a benchmark's), and deletes the broker queues it used when
// the test ends.
func openRabbit(t testing.TB) queue.Queue {
	t.Helper()
	url := rabbittest.Start(t)
	var log *slog.Logger
	if _, bench := t.(*testing.B); !bench {
		log = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	q, err := queue.Open(t.Context(), url, log)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	rq := &recordingQueue{Queue: q, names: map[string]bool{}}
	t.Cleanup(func() {
		// Runs after the clean-ups registered later, which close q.
		conn, err := amqp.Dial(url)
		if err != nil {
			t.Errorf("delete test queues: %v", err)
			return
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			t.Errorf("delete test queues: %v", err)
			return
		}
		for name := range rq.names {
			if _, err := ch.QueueDelete(name, false, false, false); err != nil {
				t.Errorf("delete queue %s: %v", name, err)
				return
			}
		}
	})
	return rq
}

// recordingQueue notes the names a test uses, for the clean-up.
type recordingQueue struct {
	queue.Queue
	mu    sync.Mutex
	names map[string]bool
}

func (q *recordingQueue) note(name string) {
	if name == "" {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.names[name] = true
}

func (q *recordingQueue) Publish(ctx context.Context, name string, body []byte) error {
	q.note(name)
	return q.Queue.Publish(ctx, name, body)
}

func (q *recordingQueue) Consume(ctx context.Context, name string) (<-chan queue.Delivery, error) {
	q.note(name)
	return q.Queue.Consume(ctx, name)
}

func TestRabbitMQ(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queue.Queue { return openRabbit(t) })
}

// uniqueName returns a queue name of the test's own, so that runs sharing
// a broker (VODA_TEST_AMQP_URL) do not meet.
func uniqueName(t testing.TB) string {
	return "queue_test." + t.Name() + "." + strings.ToLower(rand.Text()[:10])
}

// closeQuietly closes q when the test ends; the test may have closed it.
func closeQuietly(t *testing.T, q queue.Queue) {
	t.Cleanup(func() {
		if err := q.Close(); err != nil && !errors.Is(err, queue.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
}

func receive(t *testing.T, ch <-chan queue.Delivery) queue.Delivery {
	t.Helper()
	select {
	case d, ok := <-ch:
		if !ok {
			t.Fatal("consumer channel closed")
		}
		return d
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery within 30s")
	}
	return nil
}

func TestRabbitMQMessagesSurviveRestart(t *testing.T) {
	rabbittest.RequireOwnBroker(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	name := uniqueName(t)
	before := openRabbit(t)
	closeQuietly(t, before)
	for _, b := range []string{"m1", "m2", "m3"} {
		if err := before.Publish(ctx, name, []byte(b)); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}

	rabbittest.RestartApp(t)

	// The Queue opened before the restart reconnects and publishes again.
	if err := before.Publish(ctx, name, []byte("m4")); err != nil {
		t.Fatalf("Publish after the restart: %v", err)
	}
	after := openRabbit(t)
	closeQuietly(t, after)
	ch, err := after.Consume(ctx, name)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	var got []string
	for range 4 {
		d := receive(t, ch)
		got = append(got, string(d.Body()))
		if err := d.Ack(); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	if diff := cmp.Diff([]string{"m1", "m2", "m3", "m4"}, got); diff != "" {
		t.Errorf("bodies after the restart (-want +got):\n%s", diff)
	}
}

func TestRabbitMQRecoversFromConnectionLoss(t *testing.T) {
	rabbittest.RequireOwnBroker(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	name := uniqueName(t)
	q := openRabbit(t)
	closeQuietly(t, q)
	ch, err := q.Consume(ctx, name)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	if err := q.Publish(ctx, name, []byte("before")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if d := receive(t, ch); string(d.Body()) != "before" {
		t.Fatalf("got %q, want %q", d.Body(), "before")
	} else if err := d.Ack(); err != nil {
		t.Fatalf("Ack: %v", err)
	}

	rabbittest.CloseConnections(t)

	// Publish waits for the reconnection; the same Go channel goes on.
	if err := q.Publish(ctx, name, []byte("after")); err != nil {
		t.Fatalf("Publish after the connection loss: %v", err)
	}
	d := receive(t, ch)
	if string(d.Body()) != "after" {
		t.Fatalf("got %q, want %q", d.Body(), "after")
	}
	if err := d.Ack(); err != nil {
		t.Fatalf("Ack: %v", err)
	}
}

func TestRabbitMQUnackedRedeliveredAfterConnectionLoss(t *testing.T) {
	rabbittest.RequireOwnBroker(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	name := uniqueName(t)
	q := openRabbit(t)
	closeQuietly(t, q)
	if err := q.Publish(ctx, name, []byte("m")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	ch, err := q.Consume(ctx, name)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	held := receive(t, ch)

	rabbittest.CloseConnections(t)

	again := receive(t, ch)
	if string(again.Body()) != "m" || !again.Redelivered() {
		t.Fatalf("after the connection loss got %q (redelivered %v), want %q redelivered", again.Body(), again.Redelivered(), "m")
	}
	if err := held.Ack(); err == nil {
		t.Error("Ack of a delivery from the lost connection = nil, want an error")
	}
	if err := again.Ack(); err != nil {
		t.Fatalf("Ack of the redelivery: %v", err)
	}
	select {
	case d := <-ch:
		t.Errorf("unexpected delivery %q after the ack", d.Body())
	case <-time.After(300 * time.Millisecond):
	}
}

func TestRabbitMQPublishWaitsForBroker(t *testing.T) {
	rabbittest.RequireOwnBroker(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	name := uniqueName(t)
	q := openRabbit(t)
	closeQuietly(t, q)
	if err := q.Publish(ctx, name, []byte("first")); err != nil {
		t.Fatalf("Publish: %v", err)
	}

	rabbittest.Ctl(t, "stop_app")
	restarted := false
	defer func() {
		if !restarted {
			rabbittest.Ctl(t, "start_app")
		}
	}()
	done := make(chan error, 1)
	go func() { done <- q.Publish(ctx, name, []byte("second")) }()
	select {
	case err := <-done:
		t.Fatalf("Publish returned %v while the broker was stopped, want it to wait", err)
	case <-time.After(time.Second):
	}
	rabbittest.Ctl(t, "start_app")
	restarted = true
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Publish after the broker came back: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Publish still waiting 30s after the broker came back")
	}

	ch, err := q.Consume(ctx, name)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	var got []string
	for range 2 {
		d := receive(t, ch)
		got = append(got, string(d.Body()))
		if err := d.Ack(); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	if diff := cmp.Diff([]string{"first", "second"}, got); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
}

// An operator deleting a queue must not make Publish drop messages: the
// broker returns the unroutable message, and Publish declares the queue
// again and retries; the consumer, cancelled by the broker, resubscribes.
func TestRabbitMQQueueDeletedBehindItsBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	name := uniqueName(t)
	q := openRabbit(t)
	closeQuietly(t, q)
	ch, err := q.Consume(ctx, name)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	if err := q.Publish(ctx, name, []byte("before")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if d := receive(t, ch); string(d.Body()) != "before" {
		t.Fatalf("got %q, want %q", d.Body(), "before")
	} else if err := d.Ack(); err != nil {
		t.Fatalf("Ack: %v", err)
	}

	conn, err := amqp.Dial(rabbittest.Start(t))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	admin, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	if _, err := admin.QueueDelete(name, false, false, false); err != nil {
		t.Fatalf("QueueDelete: %v", err)
	}

	if err := q.Publish(ctx, name, []byte("after")); err != nil {
		t.Fatalf("Publish after the queue was deleted: %v", err)
	}
	d := receive(t, ch)
	if string(d.Body()) != "after" {
		t.Fatalf("got %q, want %q", d.Body(), "after")
	}
	if err := d.Ack(); err != nil {
		t.Fatalf("Ack: %v", err)
	}
}
