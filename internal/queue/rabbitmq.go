package queue

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

const (
	// amqpPrefetch bounds the unacknowledged messages one consumer holds.
	amqpPrefetch = 128
	// amqpDialTimeout bounds one TCP connect plus AMQP handshake, unless
	// the URL's connection_timeout says otherwise.
	amqpDialTimeout = 5 * time.Second
	amqpHeartbeat   = 10 * time.Second
	// Reconnection and retry waits double from backoffMin up to backoffMax.
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
	// softRetries bounds retries of a publish or the first subscription
	// after a channel-level failure on a live connection (a broker
	// refusal such as a queue declared with other arguments). Connection
	// losses are retried until the caller's context ends.
	softRetries = 3
)

var (
	// errNacked: the broker refused the message (publisher confirm nack).
	errNacked = errors.New("broker nacked the message")
	// errReturned: the message found no queue (it was deleted after we
	// declared it); the publish is retried after declaring it again.
	errReturned = errors.New("message returned unroutable")
)

// rabbitMQ is the Queue on a RabbitMQ broker. One supervisor goroutine
// owns the connection: it watches NotifyClose and redials with capped
// backoff, publishing each new connection as a session. Publishers share
// one confirm-mode channel per session; each consumer has its own channel
// and a goroutine that resubscribes on every new session.
type rabbitMQ struct {
	url         string // holds the password: never logged
	where       string // url without the password, for logs and errors
	dialTimeout time.Duration
	log         *slog.Logger
	idBase      string // message ids are idBase-N
	nextID      atomic.Uint64

	// ctx ends at Close; it cancels redials and waits.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	sess   *amqpSession  // nil while disconnected
	up     chan struct{} // closed when sess is set
}

var _ Queue = (*rabbitMQ)(nil)

func openRabbitMQ(ctx context.Context, rawURL string, log *slog.Logger) (*rabbitMQ, error) {
	uri, err := amqp.ParseURI(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// ue quotes the whole URL, password included.
			err = fmt.Errorf("%v (percent-encode reserved characters in the user name and password)", ue.Err)
		}
		return nil, fmt.Errorf("queue: open: invalid AMQP URL: %w", err)
	}
	// The URL without its password, in the canonical AMQP form.
	where := fmt.Sprintf("%s://%s@%s/%s", uri.Scheme, url.PathEscape(uri.Username),
		net.JoinHostPort(uri.Host, strconv.Itoa(uri.Port)), url.QueryEscape(uri.Vhost))
	var id [6]byte
	_, _ = crand.Read(id[:]) // never fails
	r := &rabbitMQ{
		url:         rawURL,
		where:       where,
		dialTimeout: amqpDialTimeout,
		log:         log.With("broker", where),
		idBase:      hex.EncodeToString(id[:]),
	}
	if uri.ConnectionTimeout > 0 {
		r.dialTimeout = time.Duration(uri.ConnectionTimeout) * time.Millisecond
	}
	conn, err := r.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue: connect to %s: %w", r.where, err)
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	s := newSession(conn)
	r.sess, r.up = s, make(chan struct{})
	close(r.up)
	r.wg.Add(1)
	go r.supervise(s)
	r.log.Info("queue: connected to RabbitMQ")
	return r, nil
}

// dial connects once. ctx bounds the TCP connect and, through a deadline
// on the socket, the handshake.
func (r *rabbitMQ) dial(ctx context.Context) (*amqp.Connection, error) {
	timeout := r.dialTimeout
	var stop func() bool
	cfg := amqp.Config{
		Heartbeat: amqpHeartbeat,
		Locale:    "en_US",
		Properties: amqp.Table{
			"connection_name": "voda",
			"product":         "voda",
		},
		Dial: func(network, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: timeout}
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// Cleared by amqp091 once the handshake is done.
			if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
				c.Close()
				return nil, err
			}
			stop = context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
			return c, nil
		},
	}
	conn, err := amqp.DialConfig(r.url, cfg)
	if stop != nil && !stop() && err == nil {
		// ctx ended around the end of the handshake and may have broken
		// the socket: do not hand out a connection in doubt.
		conn.Close()
		return nil, ctx.Err()
	}
	return conn, err
}

// supervise owns the connection: it waits for s to close, then redials
// until it succeeds or the queue is closed.
func (r *rabbitMQ) supervise(s *amqpSession) {
	defer r.wg.Done()
	for {
		lost := s.conn.NotifyClose(make(chan *amqp.Error, 1))
		select {
		case <-r.ctx.Done():
			_ = s.conn.CloseDeadline(time.Now().Add(amqpDialTimeout))
			r.setSession(nil)
			close(s.dead)
			return
		case err := <-lost:
			r.log.Warn("queue: connection to RabbitMQ lost", "err", err)
		}
		r.setSession(nil)
		close(s.dead)

		delay := backoffMin
		for attempt := 1; ; attempt++ {
			conn, err := r.dial(r.ctx)
			if err == nil {
				s = newSession(conn)
				r.setSession(s)
				r.log.Info("queue: reconnected to RabbitMQ", "attempts", attempt)
				break
			}
			if r.ctx.Err() != nil {
				return
			}
			wait := jitter(delay)
			r.log.Warn("queue: reconnecting to RabbitMQ failed", "attempt", attempt, "retry_in", wait, "err", err)
			if !r.sleep(r.ctx, wait) {
				return
			}
			delay = min(2*delay, backoffMax)
		}
	}
}

func (r *rabbitMQ) setSession(s *amqpSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case s != nil && r.sess == nil:
		close(r.up)
	case s == nil && r.sess != nil:
		r.up = make(chan struct{})
	}
	r.sess = s
}

// session returns the live session, waiting for a reconnection if there
// is none.
func (r *rabbitMQ) session(ctx context.Context) (*amqpSession, error) {
	for {
		r.mu.Lock()
		closed, s, up := r.closed, r.sess, r.up
		r.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case s != nil:
			return s, nil
		}
		select {
		case <-up:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.ctx.Done():
			return nil, ErrClosed
		}
	}
}

// currentSession returns the live session or nil, without waiting.
func (r *rabbitMQ) currentSession() *amqpSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sess
}

func (r *rabbitMQ) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// waitDead waits until the supervisor has seen s's connection close, so
// that the next session() call does not hand s out again.
func (r *rabbitMQ) waitDead(ctx context.Context, s *amqpSession) error {
	select {
	case <-s.dead:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-r.ctx.Done():
		return ErrClosed
	}
}

// Publish stores body in the durable queue name as a persistent
// message and waits for the broker's confirm. While the broker is
// unreachable it waits (up to ctx) for the reconnection, and it publishes
// again when a connection died before the confirm came: a message can be
// stored twice (at least once).
func (r *rabbitMQ) Publish(ctx context.Context, name string, body []byte) error {
	if name == "" {
		return fmt.Errorf("queue: publish: %w", errEmptyName)
	}
	msg := amqp.Publishing{
		DeliveryMode: amqp.Persistent,
		ContentType:  "application/octet-stream",
		MessageId:    r.idBase + "-" + strconv.FormatUint(r.nextID.Add(1), 10),
		Timestamp:    time.Now(),
		Body:         body,
	}
	soft, delay := 0, backoffMin
	for {
		s, err := r.session(ctx)
		if err != nil {
			return fmt.Errorf("queue: publish to %s: %w", name, err)
		}
		err = s.publish(ctx, name, msg)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("queue: publish to %s: %w", name, ctx.Err())
		case r.isClosed():
			return fmt.Errorf("queue: publish to %s: %w", name, ErrClosed)
		case errors.Is(err, errNacked):
			return fmt.Errorf("queue: publish to %s: %w", name, err)
		case s.conn.IsClosed():
			r.log.Debug("queue: publish interrupted by connection loss, retrying", "queue", name, "err", err)
			if err := r.waitDead(ctx, s); err != nil {
				return fmt.Errorf("queue: publish to %s: %w", name, err)
			}
			continue
		}
		if errors.Is(err, errReturned) {
			s.forget(name)
		}
		soft++
		if soft > softRetries {
			return fmt.Errorf("queue: publish to %s: %w", name, err)
		}
		r.log.Debug("queue: publish failed, retrying", "queue", name, "err", err)
		if !r.sleep(ctx, delay) {
			if r.isClosed() {
				return fmt.Errorf("queue: publish to %s: %w", name, ErrClosed)
			}
			return fmt.Errorf("queue: publish to %s: %w", name, ctx.Err())
		}
		delay = min(2*delay, backoffMax)
	}
}

// Consume subscribes to the durable queue name with manual
// acknowledgement and a prefetch of amqpPrefetch. The returned channel
// survives reconnections: a goroutine resubscribes on each new
// connection. A broker refusal of the first subscription is returned;
// if the broker is unreachable at the time, Consume returns at once and
// the subscription starts when it is back.
func (r *rabbitMQ) Consume(ctx context.Context, name string) (<-chan Delivery, error) {
	if name == "" {
		return nil, fmt.Errorf("queue: consume: %w", errEmptyName)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("queue: consume %s: %w", name, ErrClosed)
	}
	r.wg.Add(1)
	r.mu.Unlock()

	out := make(chan Delivery)
	first := make(chan error, 1)
	go r.consume(ctx, name, out, first)
	if err := <-first; err != nil {
		return nil, fmt.Errorf("queue: consume %s: %w", name, err)
	}
	return out, nil
}

// consume keeps one subscription to q alive until ctx ends or the queue is
// closed. It reports the outcome of the first attempt on first.
func (r *rabbitMQ) consume(ctx context.Context, q string, out chan<- Delivery, first chan<- error) {
	defer r.wg.Done()
	defer close(out)
	report := func(err error) {
		if first != nil {
			first <- err
			first = nil
		}
	}
	defer report(nil) // ctx ended before the first attempt: out just closes

	soft, delay := 0, backoffMin
	for {
		if r.currentSession() == nil {
			report(nil) // not now: the subscription starts after reconnecting
		}
		s, err := r.session(ctx)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				report(err)
			}
			return
		}
		ch, deliveries, err := s.subscribe(q)
		if err != nil {
			if s.conn.IsClosed() {
				report(nil)
				if r.waitDead(ctx, s) != nil {
					return
				}
				continue
			}
			soft++
			if first != nil && soft > softRetries {
				report(err)
				return
			}
			r.log.Warn("queue: subscribing failed, retrying", "queue", q, "err", err)
			if !r.sleep(ctx, jitter(delay)) {
				return
			}
			delay = min(2*delay, backoffMax)
			continue
		}
		report(nil)
		soft, delay = 0, backoffMin

		done := r.pump(ctx, deliveries, out)
		// Closing the channel gives every unacknowledged message back.
		_ = ch.Close()
		if done {
			return
		}
		r.log.Warn("queue: subscription interrupted, resubscribing", "queue", q)
		if s.conn.IsClosed() {
			if r.waitDead(ctx, s) != nil {
				return
			}
		} else if !r.sleep(ctx, jitter(backoffMin)) {
			// The connection lives: the broker cancelled the consumer
			// (queue deleted?) or closed the channel.
			return
		}
	}
}

// pump forwards deliveries to out. It returns true when ctx or the queue
// ended, false when the subscription broke.
func (r *rabbitMQ) pump(ctx context.Context, deliveries <-chan amqp.Delivery, out chan<- Delivery) bool {
	for {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return false
			}
			select {
			case out <- &amqpDelivery{d: d}:
			case <-ctx.Done():
				return true
			case <-r.ctx.Done():
				return true
			}
		case <-ctx.Done():
			return true
		case <-r.ctx.Done():
			return true
		}
	}
}

// Close stops the supervisor and the consumers and closes the connection.
func (r *rabbitMQ) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return fmt.Errorf("queue: close: %w", ErrClosed)
	}
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	return nil
}

// amqpSession is one connection and what was set up on it.
type amqpSession struct {
	conn *amqp.Connection
	dead chan struct{} // closed once the supervisor has seen conn close

	mu       sync.Mutex
	declared map[string]bool
	pub      *amqpPublisher
}

func newSession(conn *amqp.Connection) *amqpSession {
	return &amqpSession{conn: conn, dead: make(chan struct{}), declared: map[string]bool{}}
}

// declare declares q durable once per session, on a channel of its own so
// that a refusal (the queue exists with other arguments) closes only that.
func (s *amqpSession) declare(q string) error {
	s.mu.Lock()
	ok := s.declared[q]
	s.mu.Unlock()
	if ok {
		return nil
	}
	ch, err := s.conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare queue %s: %w", q, err)
	}
	s.mu.Lock()
	s.declared[q] = true
	s.mu.Unlock()
	return nil
}

func (s *amqpSession) forget(q string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.declared, q)
}

// amqpPublisher is the session's confirm-mode channel. amqp091 numbers
// and sends publishes under the channel's lock, so concurrent publishers
// can share it and wait for their confirms in parallel.
type amqpPublisher struct {
	ch      *amqp.Channel
	returns chan amqp.Return

	mu       sync.Mutex
	returned map[string]struct{} // message ids returned unroutable
}

// publisher returns the session's confirm channel, opening a new one if
// the broker closed the last.
func (s *amqpSession) publisher() (*amqpPublisher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pub != nil && !s.pub.ch.IsClosed() {
		return s.pub, nil
	}
	ch, err := s.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("confirm mode: %w", err)
	}
	p := &amqpPublisher{
		ch:       ch,
		returns:  ch.NotifyReturn(make(chan amqp.Return, 64)),
		returned: map[string]struct{}{},
	}
	s.pub = p
	return p, nil
}

// publish sends msg to q (mandatory, so an unroutable message comes back
// instead of vanishing) and waits for its confirm.
func (s *amqpSession) publish(ctx context.Context, q string, msg amqp.Publishing) error {
	if err := s.declare(q); err != nil {
		return err
	}
	p, err := s.publisher()
	if err != nil {
		return err
	}
	dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, "", q, true, false, msg)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	acked, err := dc.WaitContext(ctx)
	switch {
	case err != nil:
		return err
	case p.wasReturned(msg.MessageId):
		return errReturned
	case !acked && p.ch.IsClosed():
		// amqp091 nacks what is pending when a channel closes.
		return errors.New("channel closed before the confirm")
	case !acked:
		return errNacked
	}
	return nil
}

// wasReturned reports whether the message came back unroutable. The
// broker sends basic.return before the confirm and amqp091 hands it to
// the buffered returns channel before resolving the confirm, so once the
// confirm is in, the return (if any) is in the channel or, drained by
// another publisher, in p.returned.
func (p *amqpPublisher) wasReturned(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		select {
		case ret := <-p.returns:
			p.returned[ret.MessageId] = struct{}{}
			continue
		default:
		}
		break
	}
	_, ok := p.returned[id]
	delete(p.returned, id)
	return ok
}

// subscribe opens a channel consuming q with manual acknowledgement.
func (s *amqpSession) subscribe(q string) (*amqp.Channel, <-chan amqp.Delivery, error) {
	ch, err := s.conn.Channel()
	if err != nil {
		return nil, nil, fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Qos(amqpPrefetch, 0, false); err != nil {
		_ = ch.Close()
		return nil, nil, fmt.Errorf("set prefetch: %w", err)
	}
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		_ = ch.Close()
		return nil, nil, fmt.Errorf("declare queue %s: %w", q, err)
	}
	deliveries, err := ch.Consume(q, "", false, false, false, false, nil)
	if err != nil {
		_ = ch.Close()
		return nil, nil, fmt.Errorf("consume %s: %w", q, err)
	}
	return ch, deliveries, nil
}

// amqpDelivery settles at most once: a second basic.ack of one tag would
// make the broker close the channel, and with it every other delivery.
type amqpDelivery struct {
	d       amqp.Delivery
	settled atomic.Bool
}

var _ Delivery = (*amqpDelivery)(nil)

func (d *amqpDelivery) Body() []byte      { return d.d.Body }
func (d *amqpDelivery) Redelivered() bool { return d.d.Redelivered }

// Ack fails if the delivery's channel is gone (connection lost, consumer
// ended); the broker then delivers the message again.
func (d *amqpDelivery) Ack() error {
	if !d.settled.CompareAndSwap(false, true) {
		return fmt.Errorf("queue: ack: %w", ErrAcknowledged)
	}
	if err := d.d.Ack(false); err != nil {
		return fmt.Errorf("queue: ack (the broker will redeliver): %w", err)
	}
	return nil
}

// Nack fails like Ack when the channel is gone.
func (d *amqpDelivery) Nack(requeue bool) error {
	if !d.settled.CompareAndSwap(false, true) {
		return fmt.Errorf("queue: nack: %w", ErrAcknowledged)
	}
	if err := d.d.Nack(false, requeue); err != nil {
		return fmt.Errorf("queue: nack (the broker will redeliver): %w", err)
	}
	return nil
}

// jitter spreads d by ±20% so that clients do not redial in lockstep.
func jitter(d time.Duration) time.Duration {
	return d - d/5 + rand.N(2*d/5+1)
}

// sleep waits d, unless ctx ends or the queue is closed first; it reports
// whether d passed.
func (r *rabbitMQ) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-r.ctx.Done():
		return false
	}
}
