// Package vodatest runs the voda binary for end-to-end tests: it builds
// it once per test binary, starts `voda server` on a free port, waits
// until it is ready, and kills or stops it.
package vodatest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/queue/rabbittest"
	"github.com/vodascheduler/voda/internal/store/storetest"
)

// vodaBin is the binary built once per test binary.
var (
	buildOnce sync.Once
	vodaBin   string
	buildErr  error
)

// Binary builds cmd/voda once, static and trimmed, and returns its path.
func Binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "voda-test-bin")
		if err != nil {
			buildErr = err
			return
		}
		vodaBin = filepath.Join(dir, "voda")
		// Built as the container image's binary is (hack/image): static
		// and without build paths, so that the image's build in
		// test/kube finds every package compiled already and only links.
		cmd := exec.Command("go", "build", "-trimpath", "-o", vodaBin, "github.com/vodascheduler/voda/cmd/voda")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return vodaBin
}

// SyncBuffer collects a process's output while a test reads it (for
// failure messages): safe for one writer and concurrent readers.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Server is a running `voda server` process.
type Server struct {
	t   *testing.T
	cmd *exec.Cmd
	// Addr is the API's HOST:PORT.
	Addr string
	// Args are the flags after `server --addr ADDR`.
	Args []string
	logs *SyncBuffer
	done chan struct{}
	// caFile, when set, is the certificate authority of a server that
	// serves HTTPS (StartServerTLS).
	caFile string
	// bin, when set, is the voda binary to run instead of Binary's, and
	// env what its environment adds to the test's (StartServerBinary).
	bin string
	env []string
}

// FreeAddr returns a free 127.0.0.1 port.
func FreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// StartServer starts `voda server` with args on a free port and waits
// until it is ready.
func StartServer(t *testing.T, args ...string) *Server {
	t.Helper()
	return start(&Server{t: t, Addr: FreeAddr(t), Args: args})
}

// StartServerTLS is StartServer for a server whose args make it serve
// HTTPS (--tls-cert-file, --tls-private-key-file) with a certificate that
// caFile's authority signed: it waits for readiness over HTTPS, and its
// URL and Client use HTTPS and trust caFile.
func StartServerTLS(t *testing.T, caFile string, args ...string) *Server {
	t.Helper()
	return start(&Server{t: t, Addr: FreeAddr(t), Args: args, caFile: caFile})
}

// StartServerBinary is StartServer running the voda binary at bin, such
// as the one of the container image, instead of the one Binary builds,
// with env (KEY=VALUE) added to its environment.
func StartServerBinary(t *testing.T, bin string, env []string, args ...string) *Server {
	t.Helper()
	return start(&Server{t: t, Addr: FreeAddr(t), Args: args, bin: bin, env: env})
}

func start(s *Server) *Server {
	t := s.t
	t.Helper()
	s.Start()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() || os.Getenv("VODA_E2E_LOGS") != "" {
			t.Logf("server log:\n%s", s.logs.String())
		}
	})
	return s
}

// Start starts the process again (after Kill or Stop) and waits until
// it is ready.
func (s *Server) Start() {
	s.t.Helper()
	s.logs = &SyncBuffer{}
	bin := s.bin
	if bin == "" {
		bin = Binary(s.t)
	}
	s.cmd = exec.Command(bin, append([]string{"server", "--addr", s.Addr}, s.Args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if len(s.env) > 0 {
		s.cmd.Env = append(os.Environ(), s.env...)
	}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	probe := s.HTTPClient()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := probe.Get(s.URL() + api.RouteReadyz)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-s.done:
			s.t.Fatalf("server exited before it was ready:\n%s", s.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("server not ready after 60 s:\n%s", s.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill sends SIGKILL: no shutdown code runs.
func (s *Server) Kill() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	<-s.done
}

// Stop sends SIGTERM and waits.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Terminate sends SIGTERM and waits up to timeout for the process to
// exit by itself. It returns how long that took and whether it did; a
// process still running after timeout is killed.
func (s *Server) Terminate(timeout time.Duration) (time.Duration, bool) {
	s.t.Helper()
	select {
	case <-s.done:
		return 0, true
	default:
	}
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.done:
		return time.Since(start), true
	case <-time.After(timeout):
		_ = s.cmd.Process.Kill()
		<-s.done
		return time.Since(start), false
	}
}

// PID returns the server's process ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// RSS returns the server's resident memory in bytes, from /proc.
func (s *Server) RSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.PID()))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", s.PID())
}

// URL is the server's base URL: http://Addr, or https://Addr for a
// server of StartServerTLS.
func (s *Server) URL() string {
	if s.caFile != "" {
		return "https://" + s.Addr
	}
	return "http://" + s.Addr
}

// HTTPClient is an HTTP client for raw requests to URL: the default
// client, or one that trusts only the caFile of StartServerTLS.
func (s *Server) HTTPClient() *http.Client {
	s.t.Helper()
	if s.caFile == "" {
		return http.DefaultClient
	}
	pem, err := os.ReadFile(s.caFile)
	if err != nil {
		s.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		s.t.Fatalf("%s: no PEM certificate", s.caFile)
	}
	return &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// Client returns an API client for the server, sending the bearer token
// opts give, if any.
func (s *Server) Client(opts ...client.Option) *client.Client {
	s.t.Helper()
	if s.caFile != "" {
		opts = append(opts, client.WithCAFile(s.caFile))
	}
	c, err := client.New(s.URL(), nil, opts...)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// Logs returns what the process wrote so far.
func (s *Server) Logs() string { return s.logs.String() }

// WaitFor polls cond until it holds or the time runs out. On a timeout
// it reports the last few distinct errors cond gave, oldest first.
func WaitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var seen []string
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil && (len(seen) == 0 || seen[len(seen)-1] != err.Error()) {
			seen = append(seen, err.Error())
			if len(seen) > 5 {
				seen = seen[1:]
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s; last errors:\n  %s", timeout, what, strings.Join(seen, "\n  "))
}

// ProductionArgs points a server at MongoDB (FerretDB embedded in the
// test binary) and a real RabbitMQ broker, as the production deployment
// does. The package's TestMain must run rabbittest.Run and
// storetest.Cleanup. The connection pool is kept small: FerretDB v1's
// SQLite backend can stall when a hundred connections write at once,
// which real MongoDB does not.
func ProductionArgs(t *testing.T) []string {
	uri := storetest.FerretDB(t)
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	return []string{"--store", uri + sep + "maxPoolSize=4", "--queue", rabbittest.Start(t)}
}

// Manifest is a Horovod elastic MPIJob of the original Voda's format for
// the simulated cluster's v100 nodes: min to max workers, epochs to train.
func Manifest(name string, min, max, epochs int) []byte {
	return []byte(fmt.Sprintf(`apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: %s
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - name: launcher
            image: horovod/horovod:0.28.1
            env:
            - {name: MIN_NUM_PROC, value: "%d"}
            - {name: MAX_NUM_PROC, value: "%d"}
            - {name: EPOCHS, value: "%d"}
    Worker:
      replicas: %d
      template:
        spec:
          nodeSelector:
            vodascheduler/accelerator: v100
          containers:
          - name: worker
            image: horovod/horovod:0.28.1
`, name, min, max, epochs, min))
}
