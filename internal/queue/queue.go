package queue

import (
	"context"
	"errors"
)

// ErrClosed is returned after Close.
var ErrClosed = errors.New("queue closed")

// ErrAcknowledged is returned by a second Ack or Nack of one Delivery.
var ErrAcknowledged = errors.New("delivery already acknowledged")

// Delivery is one received message. Exactly one of Ack or Nack must be
// called; until then the message is not lost: if the consumer goes away
// (its context ends, its connection drops, the process dies) the message is
// delivered again.
type Delivery interface {
	Body() []byte
	// Redelivered reports whether the message may have been delivered
	// before (best effort; RabbitMQ's flag).
	Redelivered() bool
	// Ack removes the message for good.
	Ack() error
	// Nack gives the message back; with requeue it is delivered again,
	// without it is dropped.
	Nack(requeue bool) error
}

// Queue carries messages between the API and the schedulers: one named
// queue per GPU type. Implementations are safe for concurrent use.
type Queue interface {
	// Publish appends body to the named queue (created if needed). When it
	// returns nil the message is stored (for RabbitMQ: durable queue,
	// persistent message, publisher confirm received).
	Publish(ctx context.Context, name string, body []byte) error
	// Consume delivers the named queue's messages in publish order (as far
	// as redeliveries allow) on the returned channel until ctx ends; the
	// channel is then closed and unacknowledged messages go back to the
	// queue. Reconnection after a broker failure is the implementation's
	// job: the channel stays open across it.
	Consume(ctx context.Context, name string) (<-chan Delivery, error)
	// Close releases the queue; later calls return ErrClosed.
	Close() error
}
