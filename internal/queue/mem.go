package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// memQueue is the in-process Queue: one FIFO list per name behind one
// mutex. Publish appends and wakes the list's consumers without ever
// waiting for them; each Consume runs one goroutine that hands out one
// message at a time and remembers what it handed out until it is settled.
// Messages live only as long as the process.
type memQueue struct {
	done chan struct{} // closed by Close
	wg   sync.WaitGroup

	mu     sync.Mutex
	closed bool
	seq    uint64 // last message number given; orders requeued messages
	lists  map[string]*memList
}

var _ Queue = (*memQueue)(nil)

// memList is one named queue. ready is ordered by message number from
// ready[head] on, so a requeued message goes back to the place it was
// published at, ahead of everything published after it.
type memList struct {
	ready     []*memMsg
	head      int
	consumers map[*memConsumer]struct{}
}

type memMsg struct {
	seq         uint64
	body        []byte
	redelivered bool
}

// memConsumer is one Consume call. Its fields are guarded by memQueue.mu.
type memConsumer struct {
	wake    chan struct{} // capacity 1: a pending "look again"
	unacked map[*memDelivery]struct{}
	gone    bool // the consumer ended and gave its messages back
}

type memDelivery struct {
	q       *memQueue
	list    *memList
	c       *memConsumer
	msg     *memMsg
	settled bool // guarded by q.mu
}

var _ Delivery = (*memDelivery)(nil)

func newMem() *memQueue {
	return &memQueue{done: make(chan struct{}), lists: map[string]*memList{}}
}

// list returns the named list, creating it. Lists are never removed: an
// unsettled delivery may still need to put its message back into one.
// The caller holds q.mu.
func (q *memQueue) list(name string) *memList {
	l, ok := q.lists[name]
	if !ok {
		l = &memList{consumers: map[*memConsumer]struct{}{}}
		q.lists[name] = l
	}
	return l
}

// Publish copies body to the tail of the named list. It never blocks.
func (q *memQueue) Publish(ctx context.Context, name string, body []byte) error {
	if name == "" {
		return fmt.Errorf("queue: publish: %w", errEmptyName)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("queue: publish to %s: %w", name, err)
	}
	m := &memMsg{body: slices.Clone(body)}
	if m.body == nil {
		m.body = []byte{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return fmt.Errorf("queue: publish to %s: %w", name, ErrClosed)
	}
	q.seq++
	m.seq = q.seq
	l := q.list(name)
	l.ready = append(l.ready, m)
	l.wakeAll()
	return nil
}

// Consume starts a goroutine that hands out the named list's messages
// until ctx ends or the queue is closed.
func (q *memQueue) Consume(ctx context.Context, name string) (<-chan Delivery, error) {
	if name == "" {
		return nil, fmt.Errorf("queue: consume: %w", errEmptyName)
	}
	c := &memConsumer{wake: make(chan struct{}, 1), unacked: map[*memDelivery]struct{}{}}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil, fmt.Errorf("queue: consume %s: %w", name, ErrClosed)
	}
	l := q.list(name)
	l.consumers[c] = struct{}{}
	q.wg.Add(1)
	q.mu.Unlock()

	out := make(chan Delivery)
	go q.consume(ctx, l, c, out)
	return out, nil
}

func (q *memQueue) consume(ctx context.Context, l *memList, c *memConsumer, out chan<- Delivery) {
	defer q.wg.Done()
	defer close(out)
	defer q.release(l, c)
	for {
		q.mu.Lock()
		var d *memDelivery
		if m := l.pop(); m != nil {
			d = &memDelivery{q: q, list: l, c: c, msg: m}
			c.unacked[d] = struct{}{}
		}
		q.mu.Unlock()
		if d == nil {
			select {
			case <-c.wake:
				continue
			case <-ctx.Done():
				return
			case <-q.done:
				return
			}
		}
		select {
		case out <- d:
		case <-ctx.Done():
			return
		case <-q.done:
			return
		}
	}
}

// release ends consumer c: its unsettled messages go back to the list in
// their original order, and its deliveries can no longer be settled.
func (q *memQueue) release(l *memList, c *memConsumer) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c.gone = true
	delete(l.consumers, c)
	if len(c.unacked) == 0 {
		return
	}
	for d := range c.unacked {
		d.msg.redelivered = true
		l.insert(d.msg)
	}
	c.unacked = nil
	l.wakeAll()
}

// Close ends every consumer and waits for their goroutines.
func (q *memQueue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return fmt.Errorf("queue: close: %w", ErrClosed)
	}
	q.closed = true
	close(q.done)
	q.mu.Unlock()
	q.wg.Wait()
	return nil
}

// wakeAll tells every consumer of l to look again. The caller holds q.mu.
func (l *memList) wakeAll() {
	for c := range l.consumers {
		select {
		case c.wake <- struct{}{}:
		default: // one wake-up is already pending
		}
	}
}

// pop removes and returns the head message, or nil.
func (l *memList) pop() *memMsg {
	if l.head == len(l.ready) {
		return nil
	}
	m := l.ready[l.head]
	l.ready[l.head] = nil
	l.head++
	switch {
	case l.head == len(l.ready):
		l.ready, l.head = l.ready[:0], 0
	case l.head >= 1024 && l.head > len(l.ready)/2:
		n := copy(l.ready, l.ready[l.head:])
		clear(l.ready[n:])
		l.ready, l.head = l.ready[:n], 0
	}
	return m
}

// insert puts a requeued message back at its place by message number,
// which is the head unless an older message is also waiting.
func (l *memList) insert(m *memMsg) {
	waiting := l.ready[l.head:]
	i := sort.Search(len(waiting), func(i int) bool { return waiting[i].seq > m.seq })
	if i == 0 && l.head > 0 {
		l.head--
		l.ready[l.head] = m
		return
	}
	l.ready = slices.Insert(l.ready, l.head+i, m)
}

func (d *memDelivery) Body() []byte      { return d.msg.body }
func (d *memDelivery) Redelivered() bool { return d.msg.redelivered }

// Ack forgets the message.
func (d *memDelivery) Ack() error {
	return d.settle("ack", func() {})
}

// Nack drops the message or, with requeue, puts it back at its place.
func (d *memDelivery) Nack(requeue bool) error {
	return d.settle("nack", func() {
		if requeue {
			d.msg.redelivered = true
			d.list.insert(d.msg)
			d.list.wakeAll()
		}
	})
}

// errConsumerGone says a delivery outlived its consumer; like RabbitMQ
// after a channel closes, the message was already given back.
var errConsumerGone = errors.New("consumer ended, message was requeued")

// settle runs then under q.mu if d can still be settled.
func (d *memDelivery) settle(op string, then func()) error {
	d.q.mu.Lock()
	defer d.q.mu.Unlock()
	switch {
	case d.settled:
		return fmt.Errorf("queue: %s: %w", op, ErrAcknowledged)
	case d.q.closed:
		d.settled = true
		return fmt.Errorf("queue: %s: %w", op, ErrClosed)
	case d.c.gone:
		d.settled = true
		return fmt.Errorf("queue: %s: %w", op, errConsumerGone)
	}
	d.settled = true
	delete(d.c.unacked, d)
	then()
	return nil
}
