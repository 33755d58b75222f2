// Package queuetest is the contract suite that every queue.Queue
// implementation passes: the in-process queue and RabbitMQ run the same
// cases, so the schedulers can rely on one behaviour.
package queuetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/queue"
)

const (
	// patience bounds the wait for anything that should happen.
	patience = 15 * time.Second
	// quiet is how long a test watches for a message that must not come.
	quiet = 300 * time.Millisecond
	// testTimeout bounds each case's context.
	testTimeout = 60 * time.Second
)

// Run runs the contract suite as subtests of t. open returns a new Queue
// of the implementation under test; the suite closes every Queue it opens
// (open may add its own clean-up with t.Cleanup, such as deleting the
// broker queues the test used, which it can learn by wrapping the Queue).
// Queue names are unique per test and per run, so a shared broker needs no
// reset between tests. The cases do not run in parallel.
func Run(t *testing.T, open func(t *testing.T) queue.Queue) {
	cases := []struct {
		name string
		run  func(t *testing.T, s *suite)
	}{
		{"ConsumeInPublishOrder", testConsumeInPublishOrder},
		{"KeepsMessagesWithoutConsumer", testKeepsMessagesWithoutConsumer},
		{"AckRemoves", testAckRemoves},
		{"NackRequeueRedelivers", testNackRequeueRedelivers},
		{"NackWithoutRequeueDrops", testNackWithoutRequeueDrops},
		{"SettleTwiceFails", testSettleTwiceFails},
		{"CancelledConsumerGivesBack", testCancelledConsumerGivesBack},
		{"CompetingConsumers", testCompetingConsumers},
		{"ConcurrentPublishers", testConcurrentPublishers},
		{"SeparateNames", testSeparateNames},
		{"BodiesRoundTrip", testBodiesRoundTrip},
		{"ConsumeEndsWithContext", testConsumeEndsWithContext},
		{"ConsumeEndsWithClose", testConsumeEndsWithClose},
		{"ClosedQueueFails", testClosedQueueFails},
		{"EmptyNameFails", testEmptyNameFails},
		{"PublishHonoursContext", testPublishHonoursContext},
		{"NoGoroutineLeak", testNoGoroutineLeak},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			c.run(t, &suite{ctx: ctx, open: open})
		})
	}
}

type suite struct {
	ctx  context.Context // ends with the case
	open func(t *testing.T) queue.Queue
}

// queue opens a Queue that is closed when the case ends.
func (s *suite) queue(t *testing.T) queue.Queue {
	t.Helper()
	q := s.open(t)
	t.Cleanup(func() {
		if err := q.Close(); err != nil && !errors.Is(err, queue.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return q
}

// name returns a queue name unique to this case and run.
func name(t *testing.T, label string) string {
	base := t.Name()
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	return fmt.Sprintf("queuetest.%s.%s.%s", base, label, strings.ToLower(rand.Text()[:10]))
}

func publish(t *testing.T, ctx context.Context, q queue.Queue, name string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if err := q.Publish(ctx, name, []byte(b)); err != nil {
			t.Fatalf("Publish(%s, %q): %v", name, b, err)
		}
	}
}

func consume(t *testing.T, ctx context.Context, q queue.Queue, name string) <-chan queue.Delivery {
	t.Helper()
	ch, err := q.Consume(ctx, name)
	if err != nil {
		t.Fatalf("Consume(%s): %v", name, err)
	}
	return ch
}

// recv returns the next delivery, failing if none comes in time.
func recv(t *testing.T, ch <-chan queue.Delivery) queue.Delivery {
	t.Helper()
	select {
	case d, ok := <-ch:
		if !ok {
			t.Fatal("consumer channel closed, want a delivery")
		}
		return d
	case <-time.After(patience):
		t.Fatalf("no delivery within %v", patience)
	}
	return nil
}

// recvBodies receives n deliveries, acks them when ack is set, and
// returns their bodies.
func recvBodies(t *testing.T, ch <-chan queue.Delivery, n int, ack bool) []string {
	t.Helper()
	var got []string
	for range n {
		d := recv(t, ch)
		got = append(got, string(d.Body()))
		if ack {
			if err := d.Ack(); err != nil {
				t.Fatalf("Ack(%q): %v", d.Body(), err)
			}
		}
	}
	return got
}

// expectNothing fails if a delivery arrives within quiet.
func expectNothing(t *testing.T, ch <-chan queue.Delivery) {
	t.Helper()
	select {
	case d, ok := <-ch:
		if ok {
			t.Fatalf("unexpected delivery %q (redelivered %v)", d.Body(), d.Redelivered())
		}
		t.Fatal("consumer channel closed, want it open and idle")
	case <-time.After(quiet):
	}
}

// expectClosed drains ch (leaving what it drains unsettled) and fails if
// it is not closed in time.
func expectClosed(t *testing.T, ch <-chan queue.Delivery) {
	t.Helper()
	timeout := time.After(patience)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("consumer channel still open %v later", patience)
		}
	}
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

func testConsumeInPublishOrder(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	ch := consume(t, s.ctx, q, n)
	want := numbered("m", 10)
	publish(t, s.ctx, q, n, want...)
	if diff := cmp.Diff(want, recvBodies(t, ch, len(want), true)); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
	expectNothing(t, ch)
}

func testKeepsMessagesWithoutConsumer(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	want := numbered("m", 10)
	publish(t, s.ctx, q, n, want...)
	ch := consume(t, s.ctx, q, n)
	if diff := cmp.Diff(want, recvBodies(t, ch, len(want), true)); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
	expectNothing(t, ch)
}

func testAckRemoves(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	publish(t, s.ctx, q, n, "acked")
	ctx1, cancel1 := context.WithCancel(s.ctx)
	ch1 := consume(t, ctx1, q, n)
	recvBodies(t, ch1, 1, true)
	cancel1()
	expectClosed(t, ch1)

	// An acked message is gone for the next consumer: it gets the marker
	// published after it first.
	publish(t, s.ctx, q, n, "marker")
	ch2 := consume(t, s.ctx, q, n)
	if diff := cmp.Diff([]string{"marker"}, recvBodies(t, ch2, 1, true)); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
	expectNothing(t, ch2)
}

func testNackRequeueRedelivers(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	publish(t, s.ctx, q, n, "again")
	ch := consume(t, s.ctx, q, n)
	d := recv(t, ch)
	if d.Redelivered() {
		t.Error("first delivery: Redelivered() = true, want false")
	}
	if err := d.Nack(true); err != nil {
		t.Fatalf("Nack(true): %v", err)
	}
	d = recv(t, ch)
	if got := string(d.Body()); got != "again" {
		t.Fatalf("after Nack(true) got %q, want %q", got, "again")
	}
	if !d.Redelivered() {
		t.Error("after Nack(true): Redelivered() = false, want true")
	}
	if err := d.Ack(); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	expectNothing(t, ch)
}

func testNackWithoutRequeueDrops(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	publish(t, s.ctx, q, n, "dropped")
	ch := consume(t, s.ctx, q, n)
	if err := recv(t, ch).Nack(false); err != nil {
		t.Fatalf("Nack(false): %v", err)
	}
	publish(t, s.ctx, q, n, "marker")
	if diff := cmp.Diff([]string{"marker"}, recvBodies(t, ch, 1, true)); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
	expectNothing(t, ch)
}

func testSettleTwiceFails(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	publish(t, s.ctx, q, n, "acked", "nacked")
	ch := consume(t, s.ctx, q, n)

	d := recv(t, ch)
	if err := d.Ack(); err != nil {
		t.Fatalf("first Ack: %v", err)
	}
	if err := d.Ack(); !errors.Is(err, queue.ErrAcknowledged) {
		t.Errorf("second Ack = %v, want ErrAcknowledged", err)
	}
	if err := d.Nack(true); !errors.Is(err, queue.ErrAcknowledged) {
		t.Errorf("Nack after Ack = %v, want ErrAcknowledged", err)
	}

	d = recv(t, ch)
	if err := d.Nack(false); err != nil {
		t.Fatalf("first Nack: %v", err)
	}
	if err := d.Ack(); !errors.Is(err, queue.ErrAcknowledged) {
		t.Errorf("Ack after Nack = %v, want ErrAcknowledged", err)
	}
	if err := d.Nack(true); !errors.Is(err, queue.ErrAcknowledged) {
		t.Errorf("second Nack = %v, want ErrAcknowledged", err)
	}
	// The refused second settlements must not have disturbed the queue
	// (on RabbitMQ a double ack would close the channel).
	publish(t, s.ctx, q, n, "marker")
	if diff := cmp.Diff([]string{"marker"}, recvBodies(t, ch, 1, true)); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
}

func testCancelledConsumerGivesBack(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	want := numbered("m", 5)
	publish(t, s.ctx, q, n, want...)

	ctx1, cancel1 := context.WithCancel(s.ctx)
	ch1 := consume(t, ctx1, q, n)
	held := recvBodies(t, ch1, 3, false)
	if diff := cmp.Diff(want[:3], held); diff != "" {
		t.Fatalf("first consumer (-want +got):\n%s", diff)
	}
	cancel1()
	expectClosed(t, ch1)

	ch2 := consume(t, s.ctx, q, n)
	var got []string
	for i := range want {
		d := recv(t, ch2)
		got = append(got, string(d.Body()))
		if i < len(held) && !d.Redelivered() {
			t.Errorf("%q given back by a cancelled consumer: Redelivered() = false, want true", d.Body())
		}
		if err := d.Ack(); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second consumer, in original order (-want +got):\n%s", diff)
	}
	expectNothing(t, ch2)
}

func testCompetingConsumers(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	ch1 := consume(t, s.ctx, q, n)
	ch2 := consume(t, s.ctx, q, n)
	want := numbered("m", 100)
	publish(t, s.ctx, q, n, want...)

	seen := map[string]int{}
	timeout := time.After(patience)
	for received := 0; received < len(want); received++ {
		var d queue.Delivery
		var ok bool
		select {
		case d, ok = <-ch1:
		case d, ok = <-ch2:
		case <-timeout:
			t.Fatalf("received %d of %d messages within %v", received, len(want), patience)
		}
		if !ok {
			t.Fatal("a consumer channel closed")
		}
		seen[string(d.Body())]++
		if err := d.Ack(); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	wantSeen := map[string]int{}
	for _, b := range want {
		wantSeen[b] = 1
	}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("deliveries per message (-want +got):\n%s", diff)
	}
	expectNothing(t, ch1)
	expectNothing(t, ch2)
}

func testConcurrentPublishers(t *testing.T, s *suite) {
	const publishers, each = 20, 50
	q, n := s.queue(t), name(t, "q")
	ch := consume(t, s.ctx, q, n)

	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf("p%02d-%03d", p, i)
				if err := q.Publish(s.ctx, n, []byte(body)); err != nil {
					t.Errorf("Publish(%q): %v", body, err)
					return
				}
			}
		})
	}

	// Every message exactly once, and each publisher's in its order.
	got := map[string][]string{}
	for _, b := range recvBodies(t, ch, publishers*each, true) {
		p, _, _ := strings.Cut(b, "-")
		got[p] = append(got[p], b)
	}
	wg.Wait()
	want := map[string][]string{}
	for p := range publishers {
		for i := range each {
			want[fmt.Sprintf("p%02d", p)] = append(want[fmt.Sprintf("p%02d", p)], fmt.Sprintf("p%02d-%03d", p, i))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages per publisher (-want +got):\n%s", diff)
	}
	expectNothing(t, ch)
}

func testSeparateNames(t *testing.T, s *suite) {
	q := s.queue(t)
	a, b := name(t, "a"), name(t, "b")
	publish(t, s.ctx, q, a, "a1", "a2")
	publish(t, s.ctx, q, b, "b1")
	chA := consume(t, s.ctx, q, a)
	if diff := cmp.Diff([]string{"a1", "a2"}, recvBodies(t, chA, 2, true)); diff != "" {
		t.Errorf("queue a (-want +got):\n%s", diff)
	}
	expectNothing(t, chA)
	chB := consume(t, s.ctx, q, b)
	if diff := cmp.Diff([]string{"b1"}, recvBodies(t, chB, 1, true)); diff != "" {
		t.Errorf("queue b (-want +got):\n%s", diff)
	}
	expectNothing(t, chB)
}

func testBodiesRoundTrip(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	large := make([]byte, 1<<20)
	_, _ = rand.Read(large)
	want := [][]byte{{}, binary, large}
	for _, b := range want {
		buf := bytes.Clone(b)
		if err := q.Publish(s.ctx, n, buf); err != nil {
			t.Fatalf("Publish(%d bytes): %v", len(b), err)
		}
		// The caller may reuse its buffer once Publish returns.
		for i := range buf {
			buf[i] ^= 0xff
		}
	}
	ch := consume(t, s.ctx, q, n)
	for i, w := range want {
		d := recv(t, ch)
		if !bytes.Equal(d.Body(), w) {
			t.Errorf("message %d: got %d bytes, want %d bytes equal to those published", i, len(d.Body()), len(w))
		}
		if err := d.Ack(); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
}

func testConsumeEndsWithContext(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	ctx, cancel := context.WithCancel(s.ctx)
	ch := consume(t, ctx, q, n)
	publish(t, s.ctx, q, n, "m")
	recv(t, ch) // left unsettled
	cancel()
	expectClosed(t, ch)
	// The queue itself goes on working.
	ch = consume(t, s.ctx, q, n)
	if diff := cmp.Diff([]string{"m"}, recvBodies(t, ch, 1, true)); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
}

func testConsumeEndsWithClose(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	ch := consume(t, s.ctx, q, n)
	publish(t, s.ctx, q, n, "m")
	d := recv(t, ch)
	if err := q.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	expectClosed(t, ch)
	if err := d.Ack(); err == nil {
		t.Error("Ack after Close = nil, want an error")
	}
}

func testClosedQueueFails(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	publish(t, s.ctx, q, n, "m")
	if err := q.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := q.Publish(s.ctx, n, []byte("late")); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
	if _, err := q.Consume(s.ctx, n); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Consume after Close = %v, want ErrClosed", err)
	}
	if err := q.Close(); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
}

func testEmptyNameFails(t *testing.T, s *suite) {
	q := s.queue(t)
	if err := q.Publish(s.ctx, "", []byte("m")); err == nil {
		t.Error(`Publish("") = nil, want an error`)
	}
	if _, err := q.Consume(s.ctx, ""); err == nil {
		t.Error(`Consume("") = nil error, want an error`)
	}
}

func testPublishHonoursContext(t *testing.T, s *suite) {
	q, n := s.queue(t), name(t, "q")
	ctx, cancel := context.WithCancel(s.ctx)
	cancel()
	if err := q.Publish(ctx, n, []byte("m")); !errors.Is(err, context.Canceled) {
		t.Errorf("Publish with a cancelled context = %v, want context.Canceled", err)
	}
}

func testNoGoroutineLeak(t *testing.T, s *suite) {
	before := runtime.NumGoroutine()
	q, n := s.open(t), name(t, "q")
	ctx1, cancel1 := context.WithCancel(s.ctx)
	ch1 := consume(t, ctx1, q, n)
	ch2 := consume(t, s.ctx, q, n)
	publish(t, s.ctx, q, n, numbered("m", 4)...)
	select {
	case <-ch1:
	case <-ch2:
	case <-time.After(patience):
		t.Fatal("no delivery")
	}
	cancel1()
	expectClosed(t, ch1)
	if err := q.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	expectClosed(t, ch2)

	deadline := time.Now().Add(patience)
	for {
		after := runtime.NumGoroutine()
		if after <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before Open, %d after Close:\n%s", before, after, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
