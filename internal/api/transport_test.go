package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNewHTTPServerDefaults(t *testing.T) {
	t.Parallel()
	type fields struct {
		ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
		MaxHeaderBytes                                            int
		Capped                                                    bool
	}
	get := func(hs *http.Server) fields {
		return fields{hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout, hs.MaxHeaderBytes, hs.ConnState != nil}
	}
	tests := []struct {
		name string
		lim  Limits
		want fields
	}{
		{"zero is the defaults", Limits{}, fields{10 * time.Second, 30 * time.Second, 60 * time.Second, 60 * time.Second, 64 << 10, true}},
		{"set fields are kept", Limits{ReadHeaderTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 3 * time.Second, IdleTimeout: 4 * time.Second, MaxHeaderBytes: 1000, MaxConnections: 5},
			fields{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 1000, true}},
		{"negative cap is none", Limits{MaxConnections: -1}, fields{10 * time.Second, 30 * time.Second, 60 * time.Second, 60 * time.Second, 64 << 10, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, get(NewHTTPServer(http.NotFoundHandler(), tc.lim))); diff != "" {
				t.Errorf("server (-want,+got):\n%s", diff)
			}
		})
	}
}

// serveLimited serves h on 127.0.0.1 with lim, returning the address.
func serveLimited(t *testing.T, h http.Handler, lim Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHTTPServer(h, lim)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String()
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })

// keepAlive is one client connection that sends a request and keeps
// the connection open, idle, afterwards.
type keepAlive struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialKeepAlive(t *testing.T, addr string) *keepAlive {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &keepAlive{conn: c, r: bufio.NewReader(c)}
}

// get sends GET / and returns the status, or an error when the server
// closed the connection.
func (k *keepAlive) get() (int, error) {
	_ = k.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(k.conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// closedWithin reports whether the server closes the connection within d,
// whatever it sends before.
func (k *keepAlive) closedWithin(d time.Duration) bool {
	_ = k.conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, k.r) // nil at EOF
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// A client that trickles its request's headers is cut off at the header
// timeout; before, only that timeout was set, so ReadTimeout and the rest
// are checked by TestNewHTTPServerDefaults.
func TestSlowHeaderClientIsCut(t *testing.T) {
	t.Parallel()
	addr := serveLimited(t, okHandler, Limits{ReadHeaderTimeout: 300 * time.Millisecond})
	k := dialKeepAlive(t, addr)
	start := time.Now()
	_, _ = io.WriteString(k.conn, "GET / HTTP/1.1\r\n")
	cut := false
	for i := 0; i < 40 && !cut; i++ {
		if _, err := io.WriteString(k.conn, "X"); err != nil {
			cut = true
			break
		}
		cut = k.closedWithin(100 * time.Millisecond)
	}
	if !cut {
		t.Fatalf("a client sending a byte every 100 ms was still connected after %v", time.Since(start))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cut after %v, want about the 300 ms header timeout", d)
	}
}

// At the cap, a new client is served and the connection idle longest is
// closed to make room.
func TestIdleConnectionEvictedAtCap(t *testing.T) {
	t.Parallel()
	const max = 3
	addr := serveLimited(t, okHandler, Limits{MaxConnections: max})
	var idle []*keepAlive
	for i := range max {
		k := dialKeepAlive(t, addr)
		if code, err := k.get(); err != nil || code != http.StatusOK {
			t.Fatalf("client %d: %d, %v", i, code, err)
		}
		idle = append(idle, k)
		time.Sleep(20 * time.Millisecond) // distinct idle times
	}
	for i := range 2 {
		k := dialKeepAlive(t, addr)
		if code, err := k.get(); err != nil || code != http.StatusOK {
			t.Fatalf("new client %d at the cap: %d, %v", i, code, err)
		}
		if !idle[i].closedWithin(2 * time.Second) {
			t.Errorf("new client %d: the connection idle longest (%d) was not closed", i, i)
		}
		idle = append(idle, k)
	}
	for i, k := range idle[2:] {
		if code, err := k.get(); err != nil || code != http.StatusOK {
			t.Errorf("kept connection %d: %d, %v", i+2, code, err)
		}
	}
}

// At the cap with every connection busy, a new one is refused at once,
// and served again once a connection is free.
func TestBusyConnectionsRefuseNewOne(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	addr := serveLimited(t, h, Limits{MaxConnections: 2})
	var busy []*keepAlive
	for range 2 {
		k := dialKeepAlive(t, addr)
		if _, err := io.WriteString(k.conn, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		<-started
		busy = append(busy, k)
	}
	refused := dialKeepAlive(t, addr)
	start := time.Now()
	if code, err := refused.get(); err == nil {
		t.Errorf("a third connection with two busy at a cap of 2 was served (%d)", code)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusing took %v", d)
	}
	close(release)
	for _, k := range busy {
		if resp, err := http.ReadResponse(k.r, nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("busy request: %v", err)
		}
	}
	if code, err := dialKeepAlive(t, addr).get(); err != nil || code != http.StatusOK {
		t.Errorf("a new client once the others are idle: %d, %v", code, err)
	}
}

func TestHeadersOverLimitAre431(t *testing.T) {
	t.Parallel()
	addr := serveLimited(t, okHandler, Limits{})
	k := dialKeepAlive(t, addr)
	big := strings.Repeat("x", 100<<10)
	_ = k.conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(k.conn, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+big+"\r\n\r\n")
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB of headers: %v %v, want 431", resp, err)
	}
}

// A body declared larger than the API takes is refused before it is
// read: the client that asked to continue gets 413 and no 100 Continue.
func TestDeclaredTooLargeGets413Without100Continue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	k := dialKeepAlive(t, strings.TrimPrefix(f.url, "http://"))
	_, _ = fmt.Fprintf(k.conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/yaml\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", RouteJobs, 100<<20)
	_ = k.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	status, err := k.r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(status, "HTTP/1.1 413 ") {
		t.Fatalf("first answer line %q, want 413 (no 100 Continue)", status)
	}
	resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader(status), k.r)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var e Error
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error.Field != "body" {
		t.Errorf("413 body: %+v, %v", e, err)
	}
	if f.received("v100") != nil {
		t.Error("a refused submission notified the scheduler")
	}
}

// Every route answers a method it does not take with 405 and Allow; a
// path no route takes is 404 for any method.
func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	allows := map[string][]string{
		RouteJobs:        {"GET", "HEAD", "POST"},
		RouteJob:         {"GET", "HEAD", "DELETE"},
		RouteJobPriority: {"PUT"},
		RouteSchedulers:  {"GET", "HEAD"},
		RouteScheduler:   {"GET", "HEAD"},
		RouteAlgorithm:   {"PUT"},
		RouteRateLimit:   {"PUT"},
		RouteAlgorithms:  {"GET", "HEAD"},
		RouteOpenAPI:     {"GET", "HEAD"},
		RouteLegacyJobs:  {"GET", "HEAD", "POST", "DELETE"},
		RouteLegacyAlgo:  {"PUT"},
		RouteLegacyLimit: {"PUT"},
		RouteMetrics:     {"GET", "HEAD"},
		RouteHealthz:     {"GET", "HEAD"},
		RouteReadyz:      {"GET", "HEAD"},
	}
	fill := strings.NewReplacer("{name}", "nope", "{gpuType}", "v100")
	for route, allowed := range allows {
		for _, m := range probeMethods {
			if slices.Contains(allowed, m) {
				continue
			}
			code, allow, e := f.rawDo(m, fill.Replace(route))
			want := strings.Join(allowed, ", ")
			bodyOK := m == http.MethodHead || e.Error.Code == http.StatusMethodNotAllowed && e.Error.Reason == "MethodNotAllowed"
			if code != http.StatusMethodNotAllowed || allow != want || !bodyOK {
				t.Errorf("%s %s: %d Allow %q %+v; want 405 Allow %q and an Error body", m, route, code, allow, e, want)
			}
		}
	}
	for _, m := range probeMethods {
		if code, allow, _ := f.rawDo(m, "/api/v1/nothing"); code != http.StatusNotFound || allow != "" {
			t.Errorf("%s on an unknown path: %d Allow %q, want 404 and no Allow", m, code, allow)
		}
	}
}

// rawDo sends a bodiless request and returns the status, the Allow
// header and the Error body, if any.
func (f *fixture) rawDo(method, path string) (int, string, Error) {
	f.t.Helper()
	req := httptest.NewRequest(method, f.url+path, nil)
	req.RequestURI = ""
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var e Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, resp.Header.Get("Allow"), e
}

// fakeConn is a connection the limiter sees: its remote address and
// whether it was closed. The limiter calls nothing else.
type fakeConn struct {
	net.Conn
	name   string
	remote net.Addr
	closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c *fakeConn) Close() error         { c.closed = true; return nil }

// ev is one step of a limiter test: a connection called conn (from the
// client ip when it opens) enters state, after the clock moves by wait.
type ev struct {
	conn  string
	ip    string
	state http.ConnState
	wait  time.Duration
}

func open(conn, ip string) ev { return ev{conn: conn, ip: ip, state: http.StateNew} }
func busy(conn string) ev     { return ev{conn: conn, state: http.StateActive} }
func idle(conn string) ev     { return ev{conn: conn, state: http.StateIdle} }
func closed(conn string) ev   { return ev{conn: conn, state: http.StateClosed} }
func wait(d time.Duration) ev { return ev{wait: d} }

// limiterRun drives a connLimiter through steps on a fake clock.
type limiterRun struct {
	t     *testing.T
	l     *connLimiter
	now   time.Time
	conns map[string]*fakeConn
}

func newLimiterRun(t *testing.T, max int) *limiterRun {
	r := &limiterRun{t: t, now: time.Unix(1e9, 0), conns: map[string]*fakeConn{}}
	r.l = newConnLimiter(max, time.Second, func() time.Time { return r.now })
	return r
}

// do applies e and returns the connections closed by it, by name.
func (r *limiterRun) do(e ev) []string {
	r.t.Helper()
	r.now = r.now.Add(e.wait)
	if e.conn == "" {
		return nil
	}
	c := r.conns[e.conn]
	if e.state == http.StateNew {
		ip := net.ParseIP(e.ip)
		if ip == nil {
			r.t.Fatalf("open %s: bad IP %q", e.conn, e.ip)
		}
		c = &fakeConn{name: e.conn, remote: &net.TCPAddr{IP: ip, Port: 40000 + len(r.conns)}}
		r.conns[e.conn] = c
	}
	if c == nil {
		r.t.Fatalf("%v on %s, which never opened", e.state, e.conn)
	}
	was := map[string]bool{}
	for n, c := range r.conns {
		was[n] = c.closed
	}
	r.l.track(c, e.state)
	var got []string
	for n, c := range r.conns {
		if c.closed && !was[n] {
			got = append(got, n)
		}
	}
	slices.Sort(got)
	r.checkBooks()
	return got
}

// checkBooks checks that the limiter's counts agree with its lists.
func (r *limiterRun) checkBooks() {
	r.t.Helper()
	l := r.l
	total, top, listed := 0, 0, 0
	holding := map[int]int{}
	for addr, cl := range l.clients {
		own := 0
		for k := range numClasses {
			own += cl.lists[k].Len()
		}
		if own != cl.n || cl.n == 0 {
			r.t.Fatalf("client %s: n %d, %d in its lists", addr, cl.n, own)
		}
		total += cl.n
		top = max(top, cl.n)
		holding[cl.n]++
	}
	for k := range numClasses {
		listed += l.lists[k].Len()
	}
	if total != len(l.conns) || listed != len(l.conns) || top != l.top || !maps.Equal(holding, l.holding) || len(l.conns) > l.max {
		r.t.Fatalf("books: %d tracked, clients hold %d, lists %d, top %d (kept %d), holding %v (kept %v), cap %d",
			len(l.conns), total, listed, top, l.top, holding, l.holding, l.max)
	}
}

// TestConnLimiterPolicy checks whose slot a connection arriving at the
// cap takes: first a new connection past the grace or an idle one, then
// the oldest new, else longest-busy, connection of the client holding
// the most, and only for a client holding fewer.
func TestConnLimiterPolicy(t *testing.T) {
	t.Parallel()
	const (
		flood = "10.0.0.2"
		other = "10.0.0.3"
		fresh = "10.0.0.9"
	)
	tests := []struct {
		name  string
		max   int
		steps []ev
		// arrive opens a connection from this client last; want is what
		// that closes: another connection, "x" (the arriving one,
		// refused) or nothing.
		arrive string
		want   []string
	}{
		{"under the cap nothing is closed", 3,
			[]ev{open("a", flood), open("b", flood)}, flood, nil},
		{"a new connection past the grace goes before an idle one", 3,
			[]ev{open("a", flood), wait(time.Second), open("b", other), busy("b"), idle("b"), open("c", other), busy("c"), idle("c")},
			other, []string{"a"}},
		{"the oldest new connection past the grace goes first", 3,
			[]ev{open("a", flood), open("b", other), open("c", other), wait(2 * time.Second)},
			fresh, []string{"a"}},
		{"an idle connection goes before a new one within the grace", 3,
			[]ev{open("a", flood), busy("a"), idle("a"), open("b", flood), open("c", flood), wait(999 * time.Millisecond)},
			flood, []string{"a"}},
		{"the longest idle goes first", 3,
			[]ev{open("a", other), busy("a"), open("b", other), busy("b"), idle("b"), wait(time.Millisecond), idle("a"), open("c", other), busy("c")},
			other, []string{"b"}},
		{"a silent client's own connection makes room for a client holding none", 3,
			[]ev{open("a", flood), open("b", flood), open("c", other)},
			fresh, []string{"a"}},
		{"a silent client holding the most is refused", 3,
			[]ev{open("a", other), busy("a"), open("b", flood), open("c", flood)},
			flood, []string{"x"}},
		{"a busy client's longest-busy connection makes room for a client holding fewer", 4,
			[]ev{open("a", flood), open("b", flood), open("c", flood), busy("b"), wait(time.Millisecond), busy("a"), busy("c"), open("d", other), busy("d")},
			other, []string{"b"}},
		{"a client holding as many as the most is refused", 4,
			[]ev{open("a", flood), busy("a"), open("b", flood), busy("b"), open("c", other), busy("c"), open("d", other), busy("d")},
			other, []string{"x"}},
		{"among the clients holding the most, a new connection goes before a busy one", 4,
			[]ev{open("a", flood), busy("a"), open("b", flood), busy("b"), open("c", other), busy("c"), open("d", other)},
			fresh, []string{"d"}},
		{"among the clients holding the most, the longest busy goes", 4,
			[]ev{open("c", other), open("a", flood), busy("a"), open("b", flood), busy("b"), busy("c"), open("d", other), busy("d")},
			fresh, []string{"a"}},
		{"the addresses of one IPv6 /64 are one client", 3,
			[]ev{open("a", "2001:db8::1"), busy("a"), open("b", "2001:db8::2"), busy("b"), open("c", other), busy("c")},
			"2001:db8::3", []string{"x"}},
		{"IPv6 addresses of another /64 are another client", 3,
			[]ev{open("a", "2001:db8::1"), busy("a"), open("b", "2001:db8::2"), busy("b"), open("c", other), busy("c")},
			"2001:db8:0:1::1", []string{"a"}},
		{"an IPv4-mapped address is the IPv4 client", 3,
			[]ev{open("a", flood), busy("a"), open("b", flood), busy("b"), open("c", other), busy("c")},
			"::ffff:" + flood, []string{"x"}},
		{"a closed connection frees its slot", 2,
			[]ev{open("a", flood), busy("a"), open("b", flood), busy("b"), closed("a")},
			flood, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newLimiterRun(t, tc.max)
			for _, e := range tc.steps {
				if got := r.do(e); got != nil {
					t.Fatalf("set-up step %+v closed %v", e, got)
				}
			}
			got := r.do(open("x", tc.arrive))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("closed by a connection from %s (-want,+got):\n%s", tc.arrive, diff)
			}
		})
	}
}

// A connection closed to make room is forgotten: what the server reports
// of it afterwards (its goroutine was reading or writing) leaves the
// books as they are.
func TestConnLimiterForgetsClosed(t *testing.T) {
	t.Parallel()
	r := newLimiterRun(t, 2)
	for _, e := range []ev{open("a", "10.0.0.2"), busy("a"), open("b", "10.0.0.2"), busy("b")} {
		r.do(e)
	}
	if got := r.do(open("c", "10.0.0.3")); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("a client holding none closed %v, want the longest busy, a", got)
	}
	for _, e := range []ev{idle("a"), busy("a"), closed("a")} {
		if got := r.do(e); got != nil {
			t.Fatalf("%+v closed %v", e, got)
		}
	}
	if len(r.l.conns) != 2 || r.l.top != 1 {
		t.Fatalf("%d tracked, a client holding %d at most; want b and c, one each", len(r.l.conns), r.l.top)
	}
}

// dialFrom connects to addr from the loopback address src, as a client
// on another host would.
func dialFrom(t *testing.T, addr, src string) *keepAlive {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &keepAlive{conn: c, r: bufio.NewReader(c)}
}

// One client holding every connection of the cap, silent or busy with
// slow requests, does not keep another client out: the newcomer takes
// the slot of one of its connections. Before, it was refused until one
// of them ended (10 s for silent ones, up to the handler for busy ones).
func TestOneClientCannotLockOut(t *testing.T) {
	t.Parallel()
	const max, flood = 4, "127.0.0.2"
	tests := []struct {
		name string
		// hold makes the flood's max connections to addr and returns
		// them once the server has them.
		hold func(t *testing.T, addr string, started chan struct{}) []*keepAlive
	}{
		{"silent", func(t *testing.T, addr string, _ chan struct{}) []*keepAlive {
			var held []*keepAlive
			for range max {
				held = append(held, dialFrom(t, addr, flood))
			}
			return held
		}},
		{"slow", func(t *testing.T, addr string, started chan struct{}) []*keepAlive {
			var held []*keepAlive
			for range max {
				k := dialFrom(t, addr, flood)
				if _, err := io.WriteString(k.conn, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					t.Fatal(err)
				}
				<-started
				held = append(held, k)
			}
			return held
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			release, started := make(chan struct{}), make(chan struct{}, max)
			defer close(release)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/slow" {
					started <- struct{}{}
					select {
					case <-release:
					case <-r.Context().Done():
					}
				}
				_, _ = io.WriteString(w, "ok\n")
			})
			addr := serveLimited(t, h, Limits{MaxConnections: max})
			held := tc.hold(t, addr, started)
			start := time.Now()
			if code, err := dialFrom(t, addr, "127.0.0.1").get(); err != nil || code != http.StatusOK {
				t.Fatalf("a new client behind %d %s connections of another: %d, %v", max, tc.name, code, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("served after %v", d)
			}
			if !held[0].closedWithin(2 * time.Second) {
				t.Error("the flood's oldest connection was not closed to make room")
			}
		})
	}
}
