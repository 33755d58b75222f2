package api

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of Limits, for a server that takes manifests of up to 1 MiB.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading a whole request: 1 MiB in 30 s is
	// 35 KB/s, far below any link a client submits from.
	DefaultReadTimeout    = 30 * time.Second
	DefaultWriteTimeout   = 60 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxConnections caps the open client connections: plenty for
	// the CLI, scripts and dashboards, and well within the file
	// descriptors a process may open (Go raises its soft limit to the
	// hard one, commonly 4096 or more).
	DefaultMaxConnections = 1024
)

// Limits bound what clients can hold of the HTTP server. A zero field
// takes its default.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers; a client that
	// trickles them is cut off.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of reading the headers
	// to the end of writing the answer.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no new
	// request for this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (431 beyond).
	MaxHeaderBytes int
	// MaxConnections caps the open client connections; negative means
	// no cap. A connection arriving at the cap closes the connection that
	// has been idle longest to make room, or is refused (closed at once)
	// when every connection is busy with a request.
	MaxConnections int
}

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.WriteTimeout, DefaultWriteTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxConnections == 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	return l
}

// NewHTTPServer returns the production HTTP server of h: lim's timeouts
// and header limit, and its connection cap enforced as connections change
// state. Serve it on a listener of net.Listen.
func NewHTTPServer(h http.Handler, lim Limits) *http.Server {
	lim = lim.withDefaults()
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
	}
	if lim.MaxConnections > 0 {
		hs.ConnState = newConnLimiter(lim.MaxConnections).track
	}
	return hs
}

// connLimiter keeps the open connections at most max: it tracks each
// connection's state through http.Server.ConnState, which the server
// calls for a new connection in its accept loop, before serving it.
type connLimiter struct {
	max int
	now func() time.Time

	mu    sync.Mutex
	conns map[net.Conn]connInfo
}

type connInfo struct {
	state http.ConnState
	since time.Time // when it went idle
}

func newConnLimiter(max int) *connLimiter {
	return &connLimiter{max: max, now: time.Now, conns: map[net.Conn]connInfo{}}
}

// track is the http.Server.ConnState hook.
func (l *connLimiter) track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateNew:
		l.admit(c)
	case http.StateActive, http.StateIdle:
		if _, ok := l.conns[c]; ok { // not evicted meanwhile
			l.conns[c] = connInfo{state: state, since: l.now()}
		}
	case http.StateHijacked, http.StateClosed:
		delete(l.conns, c)
	}
}

// admit adds a new connection, making room at the cap by closing the
// longest-idle connection, or refusing c when none is idle. Closing is
// safe here: the server's goroutine of a closed connection sees its read
// fail and ends it. A request that arrives on the idle connection just as
// it is closed fails as one would at the idle timeout; clients retry such
// requests on a new connection (Go's transport does for idempotent ones).
func (l *connLimiter) admit(c net.Conn) {
	if len(l.conns) >= l.max {
		victim, ok := l.longestIdle()
		if !ok {
			_ = c.Close()
			return
		}
		delete(l.conns, victim)
		_ = victim.Close()
	}
	l.conns[c] = connInfo{state: http.StateNew, since: l.now()}
}

func (l *connLimiter) longestIdle() (net.Conn, bool) {
	var victim net.Conn
	var oldest time.Time
	for c, info := range l.conns {
		if info.state == http.StateIdle && (victim == nil || info.since.Before(oldest)) {
			victim, oldest = c, info.since
		}
	}
	return victim, victim != nil
}
