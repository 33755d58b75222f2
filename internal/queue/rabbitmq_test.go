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

// start returns a context for the steps of a test, a queue name of its own
// and a Queue on the test broker, closed when the test ends.
func start(t *testing.T) (context.Context, string, queue.Queue) {
	q := openRabbit(t)
	closeQuietly(t, q)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx, uniqueName(t), q
}

func publish(t *testing.T, ctx context.Context, q queue.Queue, name string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if err := q.Publish(ctx, name, []byte(b)); err != nil {
			t.Fatalf("Publish %q: %v", b, err)
		}
	}
}

func consume(t *testing.T, ctx context.Context, q queue.Queue, name string) <-chan queue.Delivery {
	t.Helper()
	ch, err := q.Consume(ctx, name)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	return ch
}

// receiveAcked receives and acks as many deliveries as want has bodies and
// checks that they bring those bodies, in that order.
func receiveAcked(t *testing.T, ch <-chan queue.Delivery, want ...string) {
	t.Helper()
	var got []string
	for range want {
		d := receive(t, ch)
		got = append(got, string(d.Body()))
		if err := d.Ack(); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("bodies (-want +got):\n%s", diff)
	}
}

func TestRabbitMQMessagesSurviveRestart(t *testing.T) {
	rabbittest.RequireOwnBroker(t)
	ctx, name, before := start(t)
	publish(t, ctx, before, name, "m1", "m2", "m3")

	rabbittest.RestartApp(t)

	// The Queue opened before the restart reconnects and publishes again.
	publish(t, ctx, before, name, "m4")
	_, _, after := start(t)
	receiveAcked(t, consume(t, ctx, after, name), "m1", "m2", "m3", "m4")
}

// checkGoesOn has a consumer receive a message, calls disrupt with the
// queue's name and checks that Publish goes on and that the consumer's Go
// channel brings the next message.
func checkGoesOn(t *testing.T, disrupt func(name string)) {
	ctx, name, q := start(t)
	ch := consume(t, ctx, q, name)
	publish(t, ctx, q, name, "before")
	receiveAcked(t, ch, "before")

	disrupt(name)

	publish(t, ctx, q, name, "after")
	receiveAcked(t, ch, "after")
}

func TestRabbitMQRecoversFromConnectionLoss(t *testing.T) {
	rabbittest.RequireOwnBroker(t)
	// Publish waits for the reconnection; the same Go channel goes on.
	checkGoesOn(t, func(string) { rabbittest.CloseConnections(t) })
}

func TestRabbitMQUnackedRedeliveredAfterConnectionLoss(t *testing.T) {
	rabbittest.RequireOwnBroker(t)
	ctx, name, q := start(t)
	publish(t, ctx, q, name, "m")
	ch := consume(t, ctx, q, name)
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
	ctx, name, q := start(t)
	publish(t, ctx, q, name, "first")

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

	receiveAcked(t, consume(t, ctx, q, name), "first", "second")
}

// An operator deleting a queue must not make Publish drop messages: the
// broker returns the unroutable message, and Publish declares the queue
// again and retries; the consumer, cancelled by the broker, resubscribes.
func TestRabbitMQQueueDeletedBehindItsBack(t *testing.T) {
	checkGoesOn(t, func(name string) {
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
	})
}
