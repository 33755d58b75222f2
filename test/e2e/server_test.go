package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

// vodaBin is the binary built once for the package's tests.
var (
	buildOnce sync.Once
	vodaBin   string
	buildErr  error
)

func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "voda-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		vodaBin = filepath.Join(dir, "voda")
		out, err := exec.Command("go", "build", "-o", vodaBin, "github.com/vodascheduler/voda/cmd/voda").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return vodaBin
}

// syncBuffer collects a process's output for failure messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// server is a running `voda server` process.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
	args []string
	logs *syncBuffer
	done chan struct{}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServer starts `voda server` with args on a free port and waits
// until it is ready.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	s := &server{t: t, addr: freeAddr(t), args: args}
	s.start()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() || os.Getenv("VODA_E2E_LOGS") != "" {
			t.Logf("server log:\n%s", s.logs.String())
		}
	})
	return s
}

func (s *server) start() {
	s.t.Helper()
	s.logs = &syncBuffer{}
	s.cmd = exec.Command(binary(s.t), append([]string{"server", "--addr", s.addr}, s.args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + s.addr + api.RouteReadyz)
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

// kill sends SIGKILL: no shutdown code runs.
func (s *server) kill() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	<-s.done
}

// stop sends SIGTERM and waits.
func (s *server) stop() {
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

func (s *server) client() *client.Client {
	s.t.Helper()
	c, err := client.New("http://"+s.addr, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// manifest is a Horovod elastic MPIJob of the original's format.
func manifest(name string, min, max, epochs int) []byte {
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

// waitFor polls cond until it holds or the time runs out.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, lastErr)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
