package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecretsOffTheCommandLine starts the binary with store and queue
// URLs that carry a password, from the environment and from files, at
// servers that are not there: it fails naming the server, and neither its
// output nor its error shows the password.
func TestSecretsOffTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	queueFile := filepath.Join(dir, "queue-url")
	if err := os.WriteFile(queueFile, []byte("amqp://voda:s3cret@127.0.0.1:1/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		env  []string
		want string // in the output
	}{
		{name: "VODA_QUEUE", env: []string{"VODA_QUEUE=amqp://voda:s3cret@127.0.0.1:1/"}, want: "amqp://voda@127.0.0.1:1/"},
		{name: "VODA_STORE", env: []string{"VODA_STORE=mongodb://voda:s3cret@127.0.0.1:1/voda?serverSelectionTimeoutMS=300"}, want: "mongodb://voda@127.0.0.1:1"},
		{name: "--queue-file", args: []string{"--queue-file", queueFile}, want: "amqp://voda@127.0.0.1:1/"},
		{name: "--queue wins over VODA_QUEUE", args: []string{"--queue", "amqp://flag:s3cret@127.0.0.1:1/"},
			env: []string{"VODA_QUEUE=amqp://env:s3cret@127.0.0.1:1/"}, want: "amqp://flag@127.0.0.1:1/"},
		{name: "--queue and --queue-file", args: []string{"--queue", "amqp://voda:s3cret@127.0.0.1:1/", "--queue-file", queueFile},
			want: "--queue and --queue-file: give one, not both"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			args := append([]string{"server", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4"}, c.args...)
			cmd := exec.CommandContext(ctx, binary(t), args...)
			cmd.Env = append(os.Environ(), c.env...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the server started, want it to fail:\n%s", out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Errorf("output does not name %s:\n%s", c.want, out)
			}
			if strings.Contains(string(out), "s3cret") || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the password shows (%v):\n%s", err, out)
			}
		})
	}
}
