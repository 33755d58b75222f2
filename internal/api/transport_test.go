package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
