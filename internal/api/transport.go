package api

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
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
	// DefaultFirstRequestGrace is how long a new connection may take to
	// send its first request before, at the cap, it counts as wasting its
	// slot. Clients send their request at once, a round trip later over
	// TLS: a second covers any link but a broken one.
	DefaultFirstRequestGrace = time.Second
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
	// no cap. A connection arriving at the cap takes the slot of another
	// (see connLimiter for which), or is refused (closed at once) when
	// its client already holds as many connections as any other and
	// none is idle or past FirstRequestGrace.
	MaxConnections int
	// FirstRequestGrace is how long a new connection may go without a
	// complete request before, at the cap, it is closed ahead of any
	// other.
	FirstRequestGrace time.Duration
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
	def(&l.FirstRequestGrace, DefaultFirstRequestGrace)
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
// state. Serve it on a listener of net.Listen; each server has a cap of
// its own.
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
		hs.ConnState = newConnLimiter(lim.MaxConnections, lim.FirstRequestGrace, time.Now).track
	}
	return hs
}

// ProbeHandler serves GET /healthz and /readyz alone, as the API does,
// for a listener of their own (voda server --probe-addr): kubelets and
// load balancers probe it without a token, and whatever clients do to the
// API's port, this one has its own accept queue and connection cap.
// Nothing else is served there, so it needs no authentication; nor does
// it check Host as the API does against DNS rebinding (checkBrowser), as
// the probes reveal no job.
func (s *Server) ProbeHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+RouteHealthz, healthz)
	mux.HandleFunc("GET "+RouteReadyz, s.readyz)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		mux.ServeHTTP(rec, r)
		s.observe(r, rec.code, start)
	})
}

// connLimiter keeps the open connections at most max, and decides whose
// slot a connection arriving at the cap takes. It learns each
// connection's state through http.Server.ConnState, which the server
// calls for a new connection in its accept loop, before serving it, so a
// refused connection is never read.
//
// A connection is new from its accept until its first request's headers
// are read (a TLS handshake included, and a client that sends nothing or
// trickles its headers), busy while a request is read and answered, and
// idle between requests. Its client is its remote IP address (IPv6: its
// /64, what one host is commonly given). At the cap, the slot comes from:
//
//  1. a new connection older than the grace, oldest first, else an idle
//     one, longest idle first: neither is doing anything for its client,
//     whoever that is; a client whose idle connection is closed opens
//     another when it needs one.
//  2. otherwise the client holding the most connections: its oldest new
//     connection, else its longest-busy one, provided the arriving
//     connection's client holds fewer. When that client holds as many,
//     the arriving connection is refused. Among clients holding equally
//     many, a new connection goes before a busy one, then the oldest.
//
// A client can thus take others' working slots only while it holds fewer
// than they do: however many connections one client opens, silent,
// trickling or slow to read, a client holding none always gets one.
type connLimiter struct {
	max   int
	grace time.Duration
	now   func() time.Time

	mu      sync.Mutex
	conns   map[net.Conn]*tracked
	clients map[string]*client
	lists   [numClasses]list.List // of *tracked, oldest first
	seq     uint64                // counts entries into a class
	// holding[k] is how many clients hold k connections, and top the most
	// any client holds; counts change by one, so top is kept in O(1).
	holding map[int]int
	top     int
}

// connClass is what a connection is doing, for the cap.
type connClass int

const (
	classNew connClass = iota
	classIdle
	classBusy
	numClasses
)

// tracked is one open connection.
type tracked struct {
	conn   net.Conn
	client *client
	class  connClass
	since  time.Time // entered its class
	seq    uint64    // order of entering its class, among all connections
	// all and own are its elements in the limiter's and its client's
	// list of its class.
	all, own *list.Element
}

// client is the connections of one remote address.
type client struct {
	addr  string
	n     int
	lists [numClasses]list.List // of *tracked, oldest first
}

func newConnLimiter(max int, grace time.Duration, now func() time.Time) *connLimiter {
	return &connLimiter{max: max, grace: grace, now: now,
		conns: map[net.Conn]*tracked{}, clients: map[string]*client{}, holding: map[int]int{}}
}

// track is the http.Server.ConnState hook.
func (l *connLimiter) track(c net.Conn, state http.ConnState) {
	var drop net.Conn
	l.mu.Lock()
	switch state {
	case http.StateNew:
		drop = l.admit(c)
	case http.StateActive:
		l.move(c, classBusy)
	case http.StateIdle:
		l.move(c, classIdle)
	case http.StateHijacked, http.StateClosed:
		if t := l.conns[c]; t != nil { // not evicted before
			l.remove(t)
		}
	}
	l.mu.Unlock()
	if drop != nil {
		closeConn(drop)
	}
}

// admit adds c, and returns the connection to close to make room for it:
// another one, or c itself when it is refused. Closing is safe: the
// server's goroutine of a closed connection sees its read or write fail
// and ends it. A request that arrives on an idle connection just as it is
// closed fails as one would at the idle timeout; clients retry such
// requests on a new connection (Go's transport does for idempotent ones).
func (l *connLimiter) admit(c net.Conn) net.Conn {
	addr := clientAddr(c)
	var drop net.Conn
	if len(l.conns) >= l.max {
		v := l.victim(l.clients[addr])
		if v == nil {
			return c
		}
		l.remove(v)
		drop = v.conn
	}
	cl := l.clients[addr] // after remove, which may have dropped it
	if cl == nil {
		cl = &client{addr: addr}
		l.clients[addr] = cl
	}
	t := &tracked{conn: c, client: cl}
	l.conns[c] = t
	l.count(cl, cl.n+1)
	l.enter(t, classNew)
	return drop
}

// victim picks the connection whose slot a new connection of cl (nil: a
// client holding none) takes, or nil when the new one is refused.
func (l *connLimiter) victim(cl *client) *tracked {
	if t := front(&l.lists[classNew]); t != nil && l.now().Sub(t.since) >= l.grace {
		return t
	}
	if t := front(&l.lists[classIdle]); t != nil {
		return t
	}
	// Every connection is new within the grace or busy.
	if cl != nil && cl.n >= l.top {
		return nil
	}
	var best *tracked
	for _, o := range l.clients {
		if o.n != l.top {
			continue
		}
		t := front(&o.lists[classNew])
		if t == nil {
			t = front(&o.lists[classBusy])
		}
		if t != nil && (best == nil || t.class < best.class || t.class == best.class && t.seq < best.seq) {
			best = t
		}
	}
	return best
}

func front(ls *list.List) *tracked {
	if e := ls.Front(); e != nil {
		return e.Value.(*tracked)
	}
	return nil
}

// enter appends t to the lists of class.
func (l *connLimiter) enter(t *tracked, class connClass) {
	l.seq++
	t.class, t.since, t.seq = class, l.now(), l.seq
	t.all = l.lists[class].PushBack(t)
	t.own = t.client.lists[class].PushBack(t)
}

func (l *connLimiter) leave(t *tracked) {
	l.lists[t.class].Remove(t.all)
	t.client.lists[t.class].Remove(t.own)
}

// move puts c, unless it was closed to make room meanwhile, in class.
func (l *connLimiter) move(c net.Conn, class connClass) {
	if t := l.conns[c]; t != nil {
		l.leave(t)
		l.enter(t, class)
	}
}

func (l *connLimiter) remove(t *tracked) {
	l.leave(t)
	delete(l.conns, t.conn)
	l.count(t.client, t.client.n-1)
	if t.client.n == 0 {
		delete(l.clients, t.client.addr)
	}
}

// count sets how many connections cl holds, one more or one fewer.
func (l *connLimiter) count(cl *client, n int) {
	if cl.n > 0 {
		if l.holding[cl.n]--; l.holding[cl.n] == 0 {
			delete(l.holding, cl.n)
		}
	}
	if n > 0 {
		l.holding[n]++
	}
	cl.n = n
	l.top = max(l.top, n)
	for l.top > 0 && l.holding[l.top] == 0 {
		l.top--
	}
}

// clientAddr names the client of c: its remote IP address, or for IPv6
// its /64, so that one host cannot pose as many clients by using many of
// its addresses.
func clientAddr(c net.Conn) string {
	ra := c.RemoteAddr()
	a, ok := ra.(*net.TCPAddr)
	if !ok {
		if ra == nil {
			return ""
		}
		return ra.String()
	}
	return clientOf(a.AddrPort().Addr())
}

// clientOf names the client at address ip: ip itself, or for IPv6 its
// /64.
func clientOf(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// closeConn closes c at once. Under a TLS connection it closes the
// connection underneath: tls.Conn.Close first sends an alert, which can
// wait 5 s for a peer that does not read, and this runs in the server's
// accept loop.
func closeConn(c net.Conn) {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	_ = c.Close()
}
