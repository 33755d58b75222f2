package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/clientconfig"
)

// `voda config set-server` records the server in the kubeconfig context as
// `kubectl voda config set-server` does, and voda's commands then find it
// there; both take --context and --kubeconfig. Not parallel: it sets the
// environment.
func TestConfigSetServer(t *testing.T) {
	kc := pluginKubeconfig(t)
	fake := newFakeAPI(t, []api.Job{{Name: "a-1", Namespace: "team-a", Status: "Running"}}, nil)
	t.Setenv("KUBECONFIG", "")
	t.Setenv(clientconfig.ServerEnv, "")
	t.Setenv(clientconfig.TokenEnv, "")

	recorded := func(context string) string {
		t.Helper()
		addr, _, _, err := (clientconfig.Options{Kubeconfig: kc, Context: context}).ServerAddr()
		if err != nil {
			t.Fatal(err)
		}
		return addr
	}

	out := mustVoda(t, "config", "set-server", fake.URL, "--kubeconfig", kc)
	if want := `Context "team-a" uses the Voda API at ` + fake.URL + ".\n"; out != want {
		t.Errorf("voda config set-server = %q, want %q", out, want)
	}
	if got := recorded("team-a"); got != fake.URL {
		t.Errorf("recorded server %q, want %s", got, fake.URL)
	}
	before := len(fake.Requests())
	if out := mustVoda(t, "get", "jobs", "--kubeconfig", kc); !strings.Contains(out, "a-1") {
		t.Errorf("voda get jobs after set-server: %q", out)
	}
	if n := len(fake.Requests()) - before; n != 1 {
		t.Errorf("voda get jobs sent %d requests to the recorded server, want 1", n)
	}

	// --context, as voda and as kubectl voda.
	mustVoda(t, "config", "set-server", "https://voda.example.com", "--kubeconfig", kc, "--context", "bare")
	if got := recorded("bare"); got != "https://voda.example.com" {
		t.Errorf("voda config set-server --context bare recorded %q", got)
	}
	if _, err := runPlugin(t, kc, "", "config", "set-server", "https://voda-b.example.com", "--context", "bare"); err != nil {
		t.Fatalf("kubectl voda config set-server --context: %v", err)
	}
	if got := recorded("bare"); got != "https://voda-b.example.com" {
		t.Errorf("kubectl voda config set-server --context bare recorded %q", got)
	}

	// Without a kubeconfig there is nowhere to record it.
	_, _, err := runVoda(t, "", "config", "set-server", fake.URL, "--kubeconfig", filepath.Join(t.TempDir(), "none"))
	if err == nil || !strings.Contains(err.Error(), "has no context to record the server in: without Kubernetes, give --server or set $VODA_SERVER instead") {
		t.Errorf("no kubeconfig: %v", err)
	}
	_, _, err = runVoda(t, "", "config", "set-server", fake.URL, "--kubeconfig", kc, "--context", "nope")
	if err == nil || !strings.Contains(err.Error(), `--context "nope": the kubeconfig (`+kc+") has no such context") {
		t.Errorf("unknown context: %v", err)
	}
}
