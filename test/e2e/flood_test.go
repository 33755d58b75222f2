package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/test/vodatest"
)

// The flood's clients: each is a loopback address of its own, as clients
// on other hosts would be; the clients measured connect from 127.0.0.1.
const (
	floodSource = "127.0.0.2"
	// keep-alive clients use 127.0.0.3, 127.0.0.4, ...: one per helper.
	keepAliveSourceBase = 3
	// A helper process holds at most this many connections, well within
	// the 20,000 descriptors a process may commonly open.
	perHelper = 10000
)

// TestFloodCannotLockOut runs the binary while one client holds many
// connections to the API, reopening each one the server closes: silent
// ones, while another client opens idle keep-alive connections, or ones
// busy with slow requests. Meanwhile a new client must be answered within
// a second, 20 times out of 20, for /healthz on the API's port and on
// --probe-addr, and for an authenticated GET /api/v1/jobs. Before, 1,100
// silent connections kept every new client out until they ended.
//
// The flood runs in helper processes (this test binary again, see
// TestFloodHelper), so that the clients measured here do not share its
// runtime and its descriptors. The sizes are VODA_FLOOD_SILENT (default
// 2,000), VODA_FLOOD_KEEPALIVES (default 5,000) and VODA_FLOOD_SLOW
// (default 2,000); the full size, whose figures docs/server.md quotes, is
//
//	VODA_FLOOD_SILENT=5000 VODA_FLOOD_KEEPALIVES=20000 VODA_FLOOD_SLOW=5000 go test ./test/e2e -run TestFloodCannotLockOut -count=1 -v
func TestFloodCannotLockOut(t *testing.T) {
	needProc(t)
	tests := []struct {
		name string
		// held connections of kind (silent or slow) come from floodSource,
		// while keepAlives open.
		kind             string
		held, keepAlives int
	}{
		{"silent connections and keep-alives", "silent", envInt(t, "VODA_FLOOD_SILENT", 2000), envInt(t, "VODA_FLOOD_KEEPALIVES", 5000)},
		{"slow requests", "slow", envInt(t, "VODA_FLOOD_SLOW", 2000), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { testFlood(t, tc.kind, tc.held, tc.keepAlives) })
	}
}

func testFlood(t *testing.T, kind string, held, keepAlives int) {
	const tries, limit = 20, time.Second
	probeAddr := vodatest.FreeAddr(t)
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--log-level", "error",
		"--token-auth-file", tokenFile(t), "--probe-addr", probeAddr)
	baseFDs := procFDs(t, srv.PID())

	var flood []*floodHelper
	for i := 0; i < held; i += perHelper {
		flood = append(flood, startFlood(t, kind, srv.Addr, floodSource, min(perHelper, held-i)))
	}
	dials := func() int64 { return sumStats(flood, func(s floodStats) int64 { return s.dials }) }
	// The flood is at full strength once the server holds a full cap of
	// connections and the helpers have opened all theirs.
	waitFor(t, "the flood to fill the server's cap", 60*time.Second, func() (bool, error) {
		fds, n := procFDs(t, srv.PID()), dials()
		return fds >= baseFDs+api.DefaultMaxConnections*9/10 && n >= int64(held),
			fmt.Errorf("server descriptors %d (%d at start), %d of %d %s connections opened", fds, baseFDs, n, held, kind)
	})
	dialsBefore := dials()
	var keepAliveFlood []*floodHelper
	for i := 0; i < keepAlives; i += perHelper {
		src := fmt.Sprintf("127.0.0.%d", keepAliveSourceBase+len(keepAliveFlood))
		keepAliveFlood = append(keepAliveFlood, startFlood(t, "keepalive", srv.Addr, src, min(perHelper, keepAlives-i)))
	}

	fresh := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	type target struct {
		name, url, token string
		took             []time.Duration
	}
	targets := []*target{
		{name: "GET /healthz on --addr", url: "http://" + srv.Addr + api.RouteHealthz},
		{name: "GET /healthz on --probe-addr", url: "http://" + probeAddr + api.RouteHealthz},
		{name: "GET /api/v1/jobs with a token", url: "http://" + srv.Addr + api.RouteJobs, token: "user-token-0123456789"},
	}
	var maxRSS int64
	var failures []string
	kaDone := func() int64 {
		return sumStats(keepAliveFlood, func(s floodStats) int64 { return s.served + s.failed })
	}
	start := time.Now()
	for i := range tries {
		// The tries are spread over the keep-alives' opening and over the
		// held flood's reopening: before each try the flood has reopened
		// at least one more connection the server closed, so it is shown
		// to press while the clients are measured, however fast the tries
		// are (20 tries can take 65 ms, in which a flood of slow requests,
		// closed at the server's 30 s read timeout, may reopen nothing).
		waitFor(t, "the flood to go on", 60*time.Second, func() (bool, error) {
			done, n := kaDone(), dials()-dialsBefore
			return done >= int64(i*keepAlives/tries) && n >= int64(i),
				fmt.Errorf("%d of %d keep-alives opened; the %s flood reopened %d connections since it filled the cap, want %d", done, keepAlives, kind, n, i)
		})
		for _, tg := range targets {
			took, err := timedGet(fresh, tg.url, tg.token)
			tg.took = append(tg.took, took)
			if err != nil || took > limit {
				failures = append(failures, fmt.Sprintf("%s, try %d: %v after %v", tg.name, i+1, err, took.Round(time.Millisecond)))
			}
		}
		if rss, err := srv.RSS(); err == nil {
			maxRSS = max(maxRSS, rss)
		}
	}
	fds := procFDs(t, srv.PID())
	dialsDuring, measured := dials()-dialsBefore, time.Since(start)
	kaServed, kaDoneAll := sumStats(keepAliveFlood, func(s floodStats) int64 { return s.served }), kaDone()
	for _, tg := range targets {
		t.Logf("%s: %s", tg.name, latencies(tg.took))
	}
	t.Logf("flood: %d %s connections (opened %d times more in the %v of the tries), %d keep-alives (%d served, %d refused by then); "+
		"server: %d descriptors (%d before the flood), RSS at most %.0f MiB",
		held, kind, dialsDuring, measured.Round(time.Millisecond), keepAlives, kaServed, kaDoneAll-kaServed, fds, baseFDs, float64(maxRSS)/(1<<20))
	for _, f := range failures {
		t.Error(f)
	}
	// The flood was at full strength throughout: it kept reopening what
	// the server closed (the waits above), and the server kept the cap.
	if fds > baseFDs+api.DefaultMaxConnections+64 {
		t.Errorf("the server holds %d descriptors, %d before the flood: more than the cap of %d connections", fds, baseFDs, api.DefaultMaxConnections)
	}
}

// timedGet makes a GET on a new connection, with a bearer token if
// given, and returns how long it took to get a 200 and read the body.
func timedGet(hc *http.Client, url, token string) (time.Duration, error) {
	start := time.Now()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return time.Since(start), err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return time.Since(start), err
}

// latencies summarises durations: min, median, 90th percentile, max.
func latencies(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1))].Round(100 * time.Microsecond) }
	return fmt.Sprintf("%d tries: min %v, median %v, p90 %v, max %v", len(s), at(0), at(0.5), at(0.9), at(1))
}

func envInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, v)
	}
	return n
}

// floodStats are what a flood helper reports, cumulative.
type floodStats struct {
	dials, served, failed, open int64
}

// floodHelper is a running flood process.
type floodHelper struct {
	mu    sync.Mutex
	stats floodStats
}

func (h *floodHelper) get() floodStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

func sumStats(hs []*floodHelper, f func(floodStats) int64) int64 {
	var n int64
	for _, h := range hs {
		n += f(h.get())
	}
	return n
}

// startFlood runs this test binary as a flood helper of kind against
// addr from the address src, holding n connections, until the test ends.
func startFlood(t *testing.T, kind, addr, src string, n int) *floodHelper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFloodHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("VODA_FLOOD=kind=%s addr=%s src=%s n=%d", kind, addr, src, n))
	stdin, err := cmd.StdinPipe() // the helper stops when it closes
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr vodatest.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &floodHelper{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var s floodStats
			if _, err := fmt.Sscanf(sc.Text(), "flood dials=%d served=%d failed=%d open=%d", &s.dials, &s.served, &s.failed, &s.open); err == nil {
				h.mu.Lock()
				h.stats = s
				h.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s flood helper: %v\n%s", kind, err, stderr.String())
		}
	})
	return h
}

// TestFloodHelper is no test of its own: TestFloodCannotLockOut runs the
// test binary again with VODA_FLOOD set, and this then floods a server
// until its standard input closes, printing its counts every 100 ms.
//
//   - kind=silent: n connections that send nothing; each one the server
//     closes is opened again at once.
//   - kind=slow: n connections, each reopened as silent ones are, that
//     send a submission's headers and then its body a byte a second: the
//     server answers 401 at once (no token), then reads the body until
//     its read timeout, 30 s.
//   - kind=keepalive: n connections, opened 64 at a time, that each make
//     one request and then stay idle until the server closes them.
func TestFloodHelper(t *testing.T) {
	spec := os.Getenv("VODA_FLOOD")
	if spec == "" {
		return
	}
	opts := map[string]string{}
	for _, f := range strings.Fields(spec) {
		k, v, _ := strings.Cut(f, "=")
		opts[k] = v
	}
	n, err := strconv.Atoi(opts["n"])
	if err != nil {
		t.Fatalf("VODA_FLOOD %q: n: %v", spec, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	f := &flood{addr: opts["addr"], dialer: net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(opts["src"])}}}
	var wg sync.WaitGroup
	switch opts["kind"] {
	case "silent":
		for range n {
			wg.Go(func() { f.silent(ctx) })
		}
	case "slow":
		for range n {
			wg.Go(func() { f.slow(ctx) })
		}
	case "keepalive":
		var next atomic.Int64
		for range 64 {
			wg.Go(func() {
				for next.Add(1) <= int64(n) && ctx.Err() == nil {
					f.keepAlive(ctx, &wg)
				}
			})
		}
	default:
		t.Fatalf("VODA_FLOOD %q: kind is silent, slow or keepalive", spec)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		fmt.Printf("flood dials=%d served=%d failed=%d open=%d\n", f.dials.Load(), f.served.Load(), f.failed.Load(), f.open.Load())
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-tick.C:
		}
	}
}

// flood is one helper's connections to addr.
type flood struct {
	addr                        string
	dialer                      net.Dialer
	dials, served, failed, open atomic.Int64
}

// dial opens a connection, or waits a little after a failure (the
// kernel's queue of the server's port was full, say) before the caller
// tries again.
func (f *flood) dial(ctx context.Context) (net.Conn, bool) {
	c, err := f.dialer.DialContext(ctx, "tcp", f.addr)
	if err != nil {
		f.failed.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
		return nil, false
	}
	f.dials.Add(1)
	f.open.Add(1)
	return c, true
}

// hold keeps c open until the server closes it or ctx ends.
func (f *flood) hold(ctx context.Context, c net.Conn, r io.Reader) {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	_, _ = io.Copy(io.Discard, r)
	stop()
	_ = c.Close()
	f.open.Add(-1)
}

// silent holds one connection that sends nothing, reopening it whenever
// the server closes it.
func (f *flood) silent(ctx context.Context) {
	for ctx.Err() == nil {
		if c, ok := f.dial(ctx); ok {
			f.hold(ctx, c, c)
		}
	}
}

// slow holds one connection busy with a request whose body trickles,
// reopening it whenever the server closes it.
func (f *flood) slow(ctx context.Context) {
	for ctx.Err() == nil {
		c, ok := f.dial(ctx)
		if !ok {
			continue
		}
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			f.hold(ctx, c, c) // the 401, then nothing until the server closes
		}()
		_, err := io.WriteString(c, "POST "+api.RouteJobs+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/yaml\r\nContent-Length: 100000\r\n\r\n")
		tick := time.NewTicker(time.Second)
		for err == nil {
			select {
			case <-closed:
				err = net.ErrClosed
			case <-tick.C:
				_, err = io.WriteString(c, "x")
			}
		}
		tick.Stop()
		_ = c.Close()
		<-closed
	}
}

// keepAlive opens one connection, makes a request and leaves the
// connection idle, held by a goroutine of wg.
func (f *flood) keepAlive(ctx context.Context, wg *sync.WaitGroup) {
	c, ok := f.dial(ctx)
	if !ok {
		return
	}
	r := bufio.NewReader(c)
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	_, err := io.WriteString(c, "GET "+api.RouteHealthz+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(r, nil)
	}
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	_ = c.SetDeadline(time.Time{})
	if err != nil || resp.StatusCode != http.StatusOK {
		_ = c.Close()
		f.open.Add(-1)
		if !errors.Is(err, net.ErrClosed) {
			f.failed.Add(1)
		}
		return
	}
	f.served.Add(1)
	wg.Go(func() { f.hold(ctx, c, r) })
}
