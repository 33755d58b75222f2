// Package rabbittest gives tests a real RabbitMQ broker: one isolated,
// throwaway broker per test binary, started on first use and stopped when
// the tests end. A package that uses it calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { rabbittest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		url := rabbittest.Start(t)
//		...
//	}
//
// The broker is Debian's rabbitmq-server (hack/test-deps.sh installs it),
// run as the current user with every file in a temporary directory, its
// own node name, Erlang cookie and epmd, and every listener on 127.0.0.1.
// It shares nothing with a system RabbitMQ on the same machine, nor with
// the broker of another test binary running at the same time.
//
// Setting VODA_TEST_AMQP_URL points every test at that broker instead;
// the tests that need to control the broker (RequireOwnBroker, Ctl,
// CloseConnections, RestartApp) are then skipped.
//
// All tests of a binary share the broker: name queues uniquely per test,
// and do not run tests that restart it or close its connections in
// parallel with others.
package rabbittest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// EnvURL names the environment variable that, when set, replaces the
// broker rabbittest would start with an existing one.
const EnvURL = "VODA_TEST_AMQP_URL"

const (
	// startTimeout bounds the broker's start (about 4 s when idle).
	startTimeout = 90 * time.Second
	// ctlTimeout bounds one rabbitmqctl command.
	ctlTimeout = 60 * time.Second
	// stopTimeout bounds the broker's exit after its stdin closes.
	stopTimeout = 15 * time.Second
)

var (
	inMain   atomic.Bool
	once     sync.Once
	mu       sync.Mutex // guards running
	running  *broker
	startErr error
)

// Main runs the tests of m, stops the broker if one was started, and
// exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main for a TestMain that has more to do after the tests: it runs
// them, stops the broker and returns the exit code for os.Exit.
func Run(m *testing.M) int {
	inMain.Store(true)
	code := m.Run()
	mu.Lock()
	b := running
	running = nil
	mu.Unlock()
	if b != nil {
		if err := b.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "rabbittest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Start returns the AMQP URL of the test binary's broker, starting it on
// the first call. It fails the test if the broker cannot start, showing
// the broker's logs, and fails (it does not skip) when rabbitmq-server is
// not installed.
func Start(t testing.TB) string {
	t.Helper()
	if url := os.Getenv(EnvURL); url != "" {
		return url
	}
	return started(t).url
}

func started(t testing.TB) *broker {
	t.Helper()
	if !inMain.Load() {
		t.Fatal("rabbittest: the package's TestMain must call rabbittest.Main(m) (it stops the broker after the tests)")
	}
	once.Do(func() {
		b, err := start()
		mu.Lock()
		running, startErr = b, err
		mu.Unlock()
	})
	mu.Lock()
	defer mu.Unlock()
	if startErr != nil {
		t.Fatal(startErr)
	}
	if running == nil {
		t.Fatal("rabbittest: broker already stopped")
	}
	return running
}

// own returns the broker rabbittest started, skipping the test when
// VODA_TEST_AMQP_URL names an outside broker it must not disturb.
func own(t testing.TB) *broker {
	t.Helper()
	if os.Getenv(EnvURL) != "" {
		t.Skipf("rabbittest: %s names an outside broker; this test controls the broker and needs one started by rabbittest", EnvURL)
	}
	return started(t)
}

// RequireOwnBroker skips the test when VODA_TEST_AMQP_URL names an
// outside broker, which tests must not restart or disconnect; call it
// before a test's first step when the test later uses Ctl,
// CloseConnections or RestartApp.
func RequireOwnBroker(t testing.TB) {
	t.Helper()
	own(t)
}

// Ctl runs `rabbitmqctl -n NODE args...` against the test binary's broker
// and returns its output, failing the test on error.
func Ctl(t testing.TB, args ...string) string {
	t.Helper()
	b := own(t)
	start := time.Now()
	out, err := b.ctl(args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rabbittest: rabbitmqctl %s (%v)", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return out
}

// CloseConnections makes the broker close every client connection
// (rabbitmqctl close_all_connections), as a network failure would.
func CloseConnections(t testing.TB) {
	t.Helper()
	Ctl(t, "close_all_connections", "rabbittest: CloseConnections")
}

// RestartApp stops and starts the RabbitMQ application inside the broker
// (rabbitmqctl stop_app, start_app): connections drop, and only durable
// queues and persistent messages survive. It returns once the broker
// accepts AMQP connections again.
func RestartApp(t testing.TB) {
	t.Helper()
	b := own(t)
	Ctl(t, "stop_app")
	Ctl(t, "start_app")
	if err := b.waitReady(); err != nil {
		t.Fatal(err)
	}
}

// broker is one running rabbitmq-server and its epmd.
type broker struct {
	url     string
	node    string
	dir     string
	env     []string
	ctlPath string

	epmd, server *exec.Cmd
	epmdDone     chan struct{} // closed when epmd exited
	serverDone   chan struct{} // closed when the server exited
	serverErr    error         // the server's exit status, set before serverDone closes
	serverIn     io.WriteCloser
	release      chan struct{} // ends the goroutine that owns the children's thread
}

// findServer locates the upstream rabbitmq-server script and rabbitmqctl
// beside it. Debian's /usr/sbin/rabbitmq-server is a wrapper that, run as
// root, su's to the rabbitmq user (so HOME, hence the Erlang cookie, is
// /var/lib/rabbitmq's), cds to /var/lib/rabbitmq and sends the output to
// /var/log/rabbitmq; and, run as anyone else, refuses. The scripts it
// wraps take every setting from the environment and run as the caller.
func findServer() (server, ctl string, err error) {
	candidates := []string{"/usr/lib/rabbitmq/bin/rabbitmq-server"}
	if p, err := exec.LookPath("rabbitmq-server"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/sbin/rabbitmq-server", "/usr/local/sbin/rabbitmq-server")
	for _, c := range candidates {
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		if filepath.Base(real) == "rabbitmq-script-wrapper" {
			if real, err = filepath.EvalSymlinks(filepath.Join(filepath.Dir(real), "rabbitmq-server")); err != nil {
				continue
			}
		}
		ctl := filepath.Join(filepath.Dir(real), "rabbitmqctl")
		if _, err := os.Stat(ctl); err != nil {
			continue
		}
		return real, ctl, nil
	}
	return "", "", errors.New("rabbitmq-server not found: run hack/test-deps.sh (make test does)")
}

func findEPMD() (string, error) {
	if p, err := exec.LookPath("epmd"); err == nil {
		return p, nil
	}
	const p = "/usr/lib/erlang/bin/epmd"
	if _, err := os.Stat(p); err != nil {
		return "", errors.New("epmd not found (it comes with erlang-base, a dependency of rabbitmq-server): run hack/test-deps.sh")
	}
	return p, nil
}

// start starts a broker and waits until it accepts AMQP connections.
func start() (*broker, error) {
	serverPath, ctlPath, err := findServer()
	if err != nil {
		return nil, err
	}
	epmdPath, err := findEPMD()
	if err != nil {
		return nil, err
	}
	sweepStale()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", dirPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("rabbittest: %w", err)
	}
	b, err := prepare(dir, ctlPath)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}

	// Pdeathsig (the children die with the test binary) fires when the
	// thread that started a child exits, not the process; so the children
	// are started from a goroutine locked to its thread until stop.
	spawned := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := b.spawn(epmdPath, serverPath)
		spawned <- err
		if err == nil {
			<-b.release
		}
		// Returning while locked ends the thread, after the children.
	}()
	if err := <-spawned; err != nil {
		b.kill()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := b.waitReady(); err != nil {
		logs := b.logs()
		_ = b.stop()
		return nil, fmt.Errorf("%w\n%s", err, logs)
	}
	return b, nil
}

// prepare writes the broker's files and environment.
func prepare(dir, ctlPath string) (*broker, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, fmt.Errorf("rabbittest: pick ports: %w", err)
	}
	amqpPort, distPort, epmdPort := ports[0], ports[1], ports[2]
	node := fmt.Sprintf("voda-test-%d@localhost", os.Getpid())
	home := filepath.Join(dir, "home")
	for _, d := range []string{home, filepath.Join(dir, "mnesia"), filepath.Join(dir, "log")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("rabbittest: %w", err)
		}
	}
	// The server and rabbitmqctl both read $HOME/.erlang.cookie; Erlang
	// refuses a cookie file others can read.
	cookie := rand.Text()
	files := []struct {
		name, text string
		mode       os.FileMode
	}{
		{"home/.erlang.cookie", cookie, 0o400},
		{"enabled_plugins", "[].\n", 0o644},
		{"rabbitmq-env.conf", "", 0o644}, // instead of /etc/rabbitmq's
		{"rabbitmq.conf", "disk_free_limit.absolute = 10MB\n", 0o644},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.text), f.mode); err != nil {
			return nil, fmt.Errorf("rabbittest: %w", err)
		}
	}

	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RABBITMQ_") || strings.HasPrefix(k, "ERL_") || k == "HOME" || k == "NOTIFY_SOCKET" {
			continue
		}
		env = append(env, kv)
	}
	if os.Getenv("LANG") == "" {
		env = append(env, "LANG=C.UTF-8") // else the CLI warns about latin1
	}
	const loopbackOnly = "-kernel inet_dist_use_interface {127,0,0,1}"
	env = append(env,
		"HOME="+home,
		"RABBITMQ_NODENAME="+node,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(amqpPort),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(distPort),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_PID_FILE="+filepath.Join(dir, "rabbitmq.pid"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(dir, "rabbitmq-env.conf"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq.conf"),
		"RABBITMQ_ADVANCED_CONFIG_FILE="+filepath.Join(dir, "advanced.config"),
		// The script then execs the VM in its own process instead of
		// waiting on it in the background, and the VM stops when its
		// stdin (a pipe from this process) reaches end of file.
		"RABBITMQ_ALLOW_INPUT=true",
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+loopbackOnly,
		"RABBITMQ_CTL_ERL_ARGS="+loopbackOnly,
		"ERL_EPMD_PORT="+strconv.Itoa(epmdPort),
		"ERL_EPMD_ADDRESS=127.0.0.1",
	)
	return &broker{
		url:        fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", amqpPort),
		node:       node,
		dir:        dir,
		env:        env,
		ctlPath:    ctlPath,
		epmdDone:   make(chan struct{}),
		serverDone: make(chan struct{}),
		release:    make(chan struct{}),
	}, nil
}

// spawn starts epmd, waits for it, then starts the server. Left to
// itself, the server would start a shared epmd daemon that outlives it.
func (b *broker) spawn(epmdPath, serverPath string) error {
	epmdLog, err := os.Create(filepath.Join(b.dir, "epmd.out"))
	if err != nil {
		return fmt.Errorf("rabbittest: %w", err)
	}
	defer epmdLog.Close()
	port := env(b.env, "ERL_EPMD_PORT")
	b.epmd = exec.Command(epmdPath, "-port", port, "-address", "127.0.0.1")
	b.epmd.Dir, b.epmd.Env = b.dir, b.env
	b.epmd.Stdout, b.epmd.Stderr = epmdLog, epmdLog
	b.epmd.SysProcAttr = childAttr()
	if err := b.epmd.Start(); err != nil {
		return fmt.Errorf("rabbittest: start epmd: %w", err)
	}
	go func() {
		_ = b.epmd.Wait()
		close(b.epmdDone)
	}()
	if err := waitListening(net.JoinHostPort("127.0.0.1", port), b.epmdDone, 10*time.Second); err != nil {
		return fmt.Errorf("rabbittest: epmd: %w", err)
	}

	serverLog, err := os.Create(filepath.Join(b.dir, "server.out"))
	if err != nil {
		return fmt.Errorf("rabbittest: %w", err)
	}
	defer serverLog.Close()
	b.server = exec.Command(serverPath)
	b.server.Dir, b.server.Env = b.dir, b.env
	b.server.Stdout, b.server.Stderr = serverLog, serverLog
	b.server.SysProcAttr = childAttr()
	if b.serverIn, err = b.server.StdinPipe(); err != nil {
		return fmt.Errorf("rabbittest: %w", err)
	}
	if err := b.server.Start(); err != nil {
		return fmt.Errorf("rabbittest: start %s: %w", serverPath, err)
	}
	go func() {
		b.serverErr = b.server.Wait()
		close(b.serverDone)
	}()
	return nil
}

// waitReady waits until the broker completes an AMQP handshake.
func (b *broker) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-b.serverDone:
			return fmt.Errorf("rabbittest: rabbitmq-server exited while starting: %v", b.serverErr)
		default:
		}
		conn, err := amqp.DialConfig(b.url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rabbittest: rabbitmq-server not ready after %v: %w", startTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *broker) ctl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ctlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.ctlPath, append([]string{"-n", b.node}, args...)...)
	cmd.Dir, cmd.Env = b.dir, b.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("rabbittest: rabbitmqctl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// stop ends the broker and epmd and removes the broker's files.
func (b *broker) stop() error {
	var err error
	_ = b.serverIn.Close()
	select {
	case <-b.serverDone:
	case <-time.After(stopTimeout):
		err = fmt.Errorf("rabbittest: rabbitmq-server still running %v after its stdin closed; killed it\n%s", stopTimeout, b.logs())
	}
	b.kill()
	close(b.release)
	if rmErr := os.RemoveAll(b.dir); rmErr != nil && err == nil {
		err = fmt.Errorf("rabbittest: %w", rmErr)
	}
	return err
}

// kill kills whatever is still running and waits for it.
func (b *broker) kill() {
	for _, c := range []struct {
		cmd  *exec.Cmd
		done chan struct{}
	}{{b.server, b.serverDone}, {b.epmd, b.epmdDone}} {
		if c.cmd == nil || c.cmd.Process == nil {
			continue
		}
		select {
		case <-c.done:
			continue // reaped: its pid may belong to someone else now
		default:
		}
		killGroup(c.cmd.Process.Pid)
		<-c.done
	}
}

// logs returns the end of the broker's output and log files.
func (b *broker) logs() string {
	var sb strings.Builder
	paths, _ := filepath.Glob(filepath.Join(b.dir, "log", "*.log"))
	paths = append([]string{filepath.Join(b.dir, "server.out"), filepath.Join(b.dir, "epmd.out")}, paths...)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue
		}
		const tail = 8 << 10
		if len(data) > tail {
			data = data[len(data)-tail:]
		}
		fmt.Fprintf(&sb, "--- %s (end)\n%s\n", filepath.Base(p), data)
	}
	return sb.String()
}

// dirPrefix starts the name of each broker's directory, followed by the
// pid of the test binary that owns it.
const dirPrefix = "voda-rabbittest-"

// sweepStale removes the directories of brokers whose test binary died
// without cleaning up (killed by a signal; its children died with it).
func sweepStale() {
	paths, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, p := range paths {
		rest := strings.TrimPrefix(filepath.Base(p), dirPrefix)
		pid, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, '-'), 0)])
		if err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		_ = os.RemoveAll(p)
	}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitListening waits until addr accepts a TCP connection.
func waitListening(addr string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		select {
		case <-exited:
			return errors.New("exited while starting")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on %s after %v: %w", addr, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func env(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
