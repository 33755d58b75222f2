package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

// procFDs counts a process's open file descriptors.
func procFDs(t testing.TB, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// procRSSKiB is a process's resident set size.
func procRSSKiB(t testing.TB, pid int) int { return procStatusKiB(t, pid, "VmRSS") }

// procStatusKiB reads a field in kB of /proc/PID/status: VmRSS, or its
// parts RssAnon (the heap and stacks) and RssFile (mapped files: the
// store's, which the kernel may drop and read again).
func procStatusKiB(t testing.TB, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kib, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kib
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func needProc(t testing.TB) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc (Linux)")
	}
}

// idleClients opens keep-alive connections that each make one request
// and then sit idle; a connection the server closes is closed here too.
type idleClients struct {
	addr   string
	open   atomic.Int64
	served int
	wg     sync.WaitGroup
}

// add opens one connection, makes its request and leaves it idle.
func (c *idleClients) add() error {
	conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		return err
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	_, err = io.WriteString(conn, "GET "+api.RouteHealthz+" HTTP/1.1\r\nHost: voda\r\n\r\n")
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(r, nil)
	}
	if err != nil {
		conn.Close()
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = conn.SetDeadline(time.Time{})
	c.served++
	c.open.Add(1)
	c.wg.Add(1)
	go func() { // wait for the server to close it
		defer c.wg.Done()
		_, _ = io.Copy(io.Discard, r)
		conn.Close()
		c.open.Add(-1)
	}()
	return nil
}

// fresh makes a request on a new connection and returns how long it took.
func fresh(addr string) (time.Duration, error) {
	start := time.Now()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get("http://" + addr + api.RouteHealthz)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return time.Since(start), nil
}

// TestAPIConnectionCap: idle keep-alive clients, several times the cap,
// neither exhaust the server's file descriptors nor keep a new client
// out. Before the cap, every one of them held a descriptor for good.
func TestAPIConnectionCap(t *testing.T) {
	needProc(t)
	const max, clients = 50, 250
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--max-connections", strconv.Itoa(max), "--log-level", "warn")
	base := procFDs(t, srv.PID())
	idle := &idleClients{addr: srv.Addr}
	for i := range clients {
		if err := idle.add(); err != nil {
			t.Fatalf("idle client %d: %v", i, err)
		}
	}
	took, err := fresh(srv.Addr)
	if err != nil || took > 3*time.Second {
		t.Fatalf("a new client behind %d idle ones: %v after %v", clients, err, took)
	}
	waitFor(t, "the server to close the evicted connections", 10*time.Second, func() (bool, error) {
		return idle.open.Load() <= max, fmt.Errorf("%d client connections still open", idle.open.Load())
	})
	if fds := procFDs(t, srv.PID()); fds > base+max+5 {
		t.Errorf("the server holds %d descriptors, %d at start: more than the cap of %d connections added", fds, base, max)
	}
}

// TestAPIOriginalClients replays against the binary what the original
// Voda's CLI sends (net/http, no Content-Type, raw YAML and names) and
// the curl calls of its documentation (JSON strings, curl's form
// Content-Type).
func TestAPIOriginalClients(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--log-level", "warn")
	base := "http://" + srv.Addr
	send := func(method, path, ctype, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
			req.Header.Set("User-Agent", "curl/8.5.0")
			req.Header.Set("Accept", "*/*")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const form = "application/x-www-form-urlencoded"
	created := func(text string) string {
		name, _ := strings.CutPrefix(strings.TrimSpace(text), "Training job created: ")
		return name
	}
	// The original's CLI.
	code, text := send("POST", api.RouteLegacyJobs, "", string(manifest("cli", 1, 2, 3)))
	cli := created(text)
	if code != http.StatusCreated || !strings.HasPrefix(cli, "cli-") {
		t.Fatalf("CLI create: %d %q", code, text)
	}
	if code, text := send("GET", api.RouteLegacyJobs, "", ""); code != http.StatusOK || !strings.Contains(text, cli) {
		t.Errorf("CLI list: %d %q", code, text)
	}
	if code, text := send("DELETE", api.RouteLegacyJobs, "", cli); code != http.StatusOK || text != "Training job deleted: "+cli+"\n" {
		t.Errorf("CLI delete: %d %q", code, text)
	}
	// curl -X POST host/training --data-binary @job.yaml
	code, text = send("POST", api.RouteLegacyJobs, form, string(manifest("curl", 1, 2, 3)))
	viaCurl := created(text)
	if code != http.StatusCreated || !strings.HasPrefix(viaCurl, "curl-") {
		t.Fatalf("curl create: %d %q", code, text)
	}
	for _, c := range []struct{ method, path, body, want string }{
		{"DELETE", api.RouteLegacyJobs, `"` + viaCurl + `"`, "Training job deleted: " + viaCurl + "\n"},
		{"PUT", api.RouteLegacyAlgo, `"ElasticFIFO"`, "Algorithm of v100 set to ElasticFIFO\n"},
		{"PUT", api.RouteLegacyAlgo, `"ElasticSRJF"`, "Algorithm of v100 set to ElasticSRJF\n"},
		{"PUT", api.RouteLegacyLimit, "30", "Rate limit of v100 set to 30s\n"},
	} {
		if code, text := send(c.method, c.path, form, c.body); code != http.StatusOK || text != c.want {
			t.Errorf("curl -X %s %s --data '%s': %d %q, want %q", c.method, c.path, c.body, code, text, c.want)
		}
	}
}

// TestAPIAnswersOfTheBinary checks the production server's answers to a
// wrong method, a body declared too large, a key in the wrong case, and
// a dry run.
func TestAPIAnswersOfTheBinary(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--log-level", "warn")
	base := "http://" + srv.Addr

	req, _ := http.NewRequest("DELETE", base+api.RouteJobs, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("DELETE %s: %d Allow %q, want 405 Allow GET, HEAD, POST", api.RouteJobs, resp.StatusCode, resp.Header.Get("Allow"))
	}

	conn, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: voda\r\nContent-Type: application/yaml\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", api.RouteJobs, 100<<20)
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 413 ") {
		t.Errorf("100 MB declared with Expect: 100-continue: first line %q (%v), want 413", line, err)
	}

	c := srv.Client()
	ctx := ctxT(t)
	job, err := c.ValidateJob(ctx, manifest("dry", 1, 2, 3))
	if err != nil || !strings.HasPrefix(job.Name, "dry-") {
		t.Fatalf("dry run: %+v, %v", job, err)
	}
	if jobs, err := c.ListJobs(ctx, client.ListOptions{}); err != nil || len(jobs) != 0 {
		t.Errorf("after a dry run: %d jobs (%v), want none", len(jobs), err)
	}
	created, err := c.CreateJob(ctx, manifest("real", 1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest("PUT", base+"/api/v1/jobs/"+created.Name+"/priority", strings.NewReader(`{"PRIORITY": 1}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var e api.Error
	_ = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || e.Error.Field != "PRIORITY" {
		t.Errorf(`{"PRIORITY": 1}: %d %+v, want 400 naming PRIORITY`, resp.StatusCode, e)
	}
}

// TestAPINamesFromWallClockAfterFastRun: a server restarted at normal
// speed on the state of a fast run keeps its schedulers' clock ahead of
// the wall clock; it named jobs from that clock, hours off. Names come
// from the wall clock now; submitTime stays on the schedulers' clock.
func TestAPINamesFromWallClockAfterFastRun(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, "--data-dir", dir, "--sim-nodes", "v100=1x4", "--speed", "3600", "--log-level", "warn")
	c := srv.Client()
	ahead := time.Now().Add(time.Hour)
	waitFor(t, "the fast run's clock to be an hour ahead", 30*time.Second, func() (bool, error) {
		s, err := c.GetScheduler(ctxT(t), "v100")
		if err != nil || s.Now == nil {
			return false, err
		}
		return s.Now.After(ahead), fmt.Errorf("scheduler clock at %v", s.Now)
	})
	// The restarted server's clock starts at the latest time a scheduler
	// recorded, which an idle one does not: a job makes it cycle and
	// record its time.
	if _, err := c.CreateJob(ctxT(t), manifest("tick", 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a cycle an hour ahead", 30*time.Second, func() (bool, error) {
		s, err := c.GetScheduler(ctxT(t), "v100")
		if err != nil || s.LastCycle == nil {
			return false, err
		}
		return s.LastCycle.After(ahead), fmt.Errorf("scheduler's last cycle at %v", s.LastCycle)
	})
	srv.Stop()
	srv.Args = []string{"--data-dir", dir, "--sim-nodes", "v100=1x4", "--log-level", "warn"}
	srv.Start()
	before := time.Now().UTC().Truncate(time.Second)
	job, err := srv.Client().CreateJob(ctxT(t), manifest("wall", 1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UTC()
	stamp, err := time.Parse("20060102-150405", strings.TrimPrefix(job.Name, "wall-"))
	if err != nil {
		t.Fatalf("name %s: %v", job.Name, err)
	}
	if stamp.Before(before) || stamp.After(after) {
		t.Errorf("name %s is not stamped with the wall clock in UTC (between %v and %v)", job.Name, before, after)
	}
	if !job.SubmitTime.After(ahead) {
		t.Errorf("submitTime %v, want the schedulers' clock, after %v", job.SubmitTime, ahead)
	}
}

// BenchmarkIdleConnections measures, rather than asserts, what idle
// keep-alive clients cost the server: its open file descriptors and
// resident memory after VODA_IDLE_CONNS (default 20,000) connections
// have each made a request and stayed idle, and the time a new client
// then waits. The server runs on its defaults plus VODA_IDLE_SERVER_ARGS
// (e.g. "--max-connections -1" for the behaviour without a cap). The
// test process holds a descriptor per connection the server keeps, so
// raise `ulimit -n` above the count when there is no cap:
//
//	go test ./test/e2e -run '^$' -bench BenchmarkIdleConnections -benchtime 1x
func BenchmarkIdleConnections(b *testing.B) {
	needProc(b)
	n := 20000
	if v := os.Getenv("VODA_IDLE_CONNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("VODA_IDLE_CONNS: %v", err)
		}
	}
	args := append([]string{"--data-dir", b.TempDir(), "--log-level", "error"}, strings.Fields(os.Getenv("VODA_IDLE_SERVER_ARGS"))...)
	bin := buildForBench(b)
	for b.Loop() {
		srv := startBenchServer(b, bin, args)
		base, baseRSS := procFDs(b, srv.PID()), procRSSKiB(b, srv.PID())
		idle := &idleClients{addr: srv.Addr}
		start := time.Now()
		var failed error
		for i := 0; i < n && failed == nil; i++ {
			if err := idle.add(); err != nil {
				failed = fmt.Errorf("connection %d: %w", i+1, err)
			}
		}
		opened := time.Since(start)
		time.Sleep(500 * time.Millisecond) // let closes settle
		fds, rss := procFDs(b, srv.PID()), procRSSKiB(b, srv.PID())
		took, err := fresh(srv.Addr)
		b.Logf("server %v: %d of %d connections served in %v (stopped: %v); server fds %d -> %d, RSS %d -> %d KiB; "+
			"client connections still open %d; a new client: %v (%v)",
			args, idle.served, n, opened.Round(time.Millisecond), failed, base, fds, baseRSS, rss, idle.open.Load(), took.Round(time.Millisecond), err)
		b.ReportMetric(float64(idle.served), "served")
		b.ReportMetric(float64(fds), "server-fds")
		b.ReportMetric(float64(rss)/1024, "server-RSS-MiB")
		b.ReportMetric(float64(took.Milliseconds()), "new-client-ms")
		srv.stop()
	}
}

// benchServer is a `voda server` process for a benchmark (vodatest's
// helpers take a *testing.T).
type benchServer struct {
	cmd  *exec.Cmd
	Addr string
}

func (s *benchServer) PID() int { return s.cmd.Process.Pid }

func (s *benchServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

func buildForBench(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "voda")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/vodascheduler/voda/cmd/voda").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func startBenchServer(b *testing.B, bin string, args []string) *benchServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &benchServer{cmd: exec.Command(bin, append([]string{"server", "--addr", addr}, args...)...), Addr: addr}
	s.cmd.Stderr = os.Stderr
	if err := s.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.stop)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := fresh(addr); err == nil {
			return s
		}
	}
	b.Fatal("the server was not ready after 60 s")
	return nil
}
