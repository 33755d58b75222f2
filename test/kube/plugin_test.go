package kube

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/test/vodatest"
)

// TestKubectlPlugin uses Voda as a kubectl user would: the voda binary is
// installed on the PATH as kubectl-voda (and kubectl_complete-voda), the
// real kubectl finds it, and alice's kubeconfig context (her token from
// the control plane, her team's namespace) gives the plugin its
// credentials and namespace; `kubectl voda config set-server` records
// where the Voda API is. Voda runs with --authentication kubernetes, so
// every command is alice's, checked by TokenReview and RBAC.
func TestKubectlPlugin(t *testing.T) {
	const gpuType = "plugin-gpu"
	ctx := t.Context()
	c := newCluster(t, gpuType, 1, 4)
	applyRoles(t)
	bindRole(t, "voda-user", c.ns, user("alice"))
	srv := c.start("--authentication", "kubernetes", "--authentication-cache-ttl", "1s")

	// The plugin and its completion helper on the PATH, before kubectl.
	bin := t.TempDir()
	for _, name := range []string{"kubectl-voda", "kubectl_complete-voda"} {
		if err := os.Symlink(vodatest.Binary(t), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	// alice's kubeconfig: the stack's cluster, her token, her namespace.
	admin, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	token, err := env.UserToken("alice")
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	for name, cl := range admin.Clusters {
		kc.Clusters[name] = cl
		kc.AuthInfos["alice"] = &clientcmdapi.AuthInfo{Token: token}
		kc.Contexts["alice"] = &clientcmdapi.Context{Cluster: name, AuthInfo: "alice", Namespace: c.ns}
	}
	kc.CurrentContext = "alice"
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	kubectl := func(stdin string, args ...string) (string, error) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, env.ToolPath("kubectl"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"VODA_SERVER=", "VODA_TOKEN=")
		cmd.Stdin = strings.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String(), err
	}

	if _, err := kubectl("", "voda", "get", "jobs"); err == nil || !strings.Contains(err.Error(), "kubectl voda config set-server URL") {
		t.Fatalf("before set-server: %v, want the hint to record the server", err)
	}
	if out, err := kubectl("", "voda", "config", "set-server", srv.URL()); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("%s", strings.TrimSpace(out))
	}
	// The manifest names no namespace: it gets the context's.
	out, err := kubectl(string(mpiJob.manifest("mnist", gpuType, 1, 1, time.Hour)), "voda", "create", "-f", "-", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	job := strings.TrimSpace(out)
	c.waitPlaced(t, srv.Client(client.WithBearerToken(mustToken(t, "admin"))), mpiJob, job, 1)
	out, err = kubectl("", "voda", "get", "jobs", "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl voda get jobs -o wide:\n%s", out)
	if !strings.Contains(out, job) || !strings.Contains(out, c.ns) || !strings.Contains(out, "Running") {
		t.Errorf("kubectl voda get jobs does not list %s running in %s:\n%s", job, c.ns, out)
	}
	out, err = kubectl("", "voda", "describe", "job", job)
	if err != nil || !strings.Contains(out, c.ns) {
		t.Errorf("kubectl voda describe job: %v\n%s", err, out)
	}
	// RBAC still decides: alice may not change the algorithm.
	if _, err := kubectl("", "voda", "set", "algorithm", "FIFO", "--gpu-type", gpuType); err == nil || !strings.Contains(err.Error(), "403") && !strings.Contains(err.Error(), "kubectl auth can-i") {
		t.Errorf("alice sets the algorithm: %v, want a refusal", err)
	}
	// kubectl completes the plugin's commands through kubectl_complete-voda.
	out, err = kubectl("", "__complete", "voda", "get", "")
	if err != nil || !strings.Contains(out, "jobs") || !strings.Contains(out, "schedulers") {
		t.Errorf("kubectl completion of 'kubectl voda get ': %v\n%s", err, out)
	}
}
