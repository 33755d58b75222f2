package e2e

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runCLI runs the voda binary against srv and returns its standard output,
// its standard error and its exit code.
func runCLI(t *testing.T, srv *server, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(cmd.Environ(), "VODA_SERVER=http://"+srv.Addr, "VODA_TOKEN=", "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("voda %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// A manifest with a misspelt field is created, and voda create prints the
// server's warning on standard error as kubectl does; the server's answer
// carries it in kube-apiserver's Warning header format. A directory's
// manifests are created in name order, each warned of on its own.
func TestCreateWarnsOfUnknownFields(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--speed", "40")
	dir := t.TempDir()
	typo := bytes.Replace(manifest("typo", 1, 2, 5), []byte("spec:\n"), []byte("spec:\n  slotsPerWorkr: 1\n"), 1)
	path := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(path, typo, 0o644); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := runCLI(t, srv, "create", "-f", path)
	if code != 0 || stderr != "Warning: unknown field \"spec.slotsPerWorkr\"\n" || !strings.HasPrefix(stdout, "Training job created: typo-") {
		t.Fatalf("voda create -f typo.yaml: exit %d\nstdout: %q\nstderr: %q", code, stdout, stderr)
	}
	name := strings.TrimSpace(strings.TrimPrefix(stdout, "Training job created: "))
	if out, _, code := runCLI(t, srv, "get", "job", name, "-o", "name"); code != 0 || strings.TrimSpace(out) != name {
		t.Errorf("the job was not created: voda get job %s: exit %d, %q", name, code, out)
	}

	// The header, as kube-apiserver writes it.
	req, err := http.NewRequestWithContext(ctxT(t), "POST", "http://"+srv.Addr+"/api/v1/jobs?dryRun=All", bytes.NewReader(typo))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if diff := cmp.Diff([]string{`299 - "unknown field \"spec.slotsPerWorkr\""`}, resp.Header.Values("Warning")); diff != "" {
		t.Errorf("Warning headers (-want,+got):\n%s", diff)
	}

	// A directory: b.yaml (clean) and c.yml (misspelt), in that order.
	jobs := t.TempDir()
	for file, body := range map[string][]byte{
		"b.yaml":    manifest("dir-b", 1, 2, 5),
		"c.yml":     bytes.Replace(manifest("dir-c", 1, 2, 5), []byte("          containers:\n          - name: worker\n"), []byte("          containers:\n          - name: worker\n            imagePullPolicyy: Always\n"), 1),
		"notes.txt": []byte("not a manifest"),
	} {
		if err := os.WriteFile(filepath.Join(jobs, file), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code = runCLI(t, srv, "create", "-f", jobs, "-o", "name")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "dir-b-") || !strings.HasPrefix(lines[1], "dir-c-") {
		t.Errorf("voda create -f DIR: exit %d, stdout %q", code, stdout)
	}
	if want := "Warning: unknown field \"spec.mpiReplicaSpecs.Worker.template.spec.containers[0].imagePullPolicyy\"\n"; stderr != want {
		t.Errorf("voda create -f DIR: stderr %q, want %q", stderr, want)
	}
}
