package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/clientconfig"
)

func TestProgramMode(t *testing.T) {
	for _, c := range []struct {
		arg0             string
		plugin, complete bool
	}{
		{"voda", false, false},
		{"/usr/local/bin/voda", false, false},
		{"/usr/local/bin/kubectl-voda", true, false},
		{"kubectl-voda.exe", true, false},
		{"/home/a/.krew/bin/kubectl_complete-voda", true, true},
		{"kubectl-vodka", false, false},
	} {
		plugin, complete := programMode(c.arg0)
		if plugin != c.plugin || complete != c.complete {
			t.Errorf("programMode(%q) = %v, %v; want %v, %v", c.arg0, plugin, complete, c.plugin, c.complete)
		}
	}
}

// pluginKubeconfig writes a kubeconfig with contexts "team-a" (namespace
// team-a, the current one) and "bare" (no namespace, no Voda API), and
// returns its path.
func pluginKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	kc := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: alice
  user: {token: alice-token}
contexts:
- name: team-a
  context: {cluster: c, user: alice, namespace: team-a}
- name: bare
  context: {cluster: c, user: alice}
current-context: team-a
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPlugin runs `kubectl voda args...` with the kubeconfig at path.
func runPlugin(t *testing.T, kubeconfig, stdin string, args ...string) (string, error) {
	t.Helper()
	t.Setenv("KUBECONFIG", kubeconfig)
	t.Setenv(clientconfig.ServerEnv, "")
	t.Setenv(clientconfig.TokenEnv, "")
	cmd := newPluginCommand()
	var out bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

// The plugin takes the server from the context once set-server recorded
// it, the namespace from the context (-n and -A override it), and gives
// manifests without one the context's namespace.
func TestPluginContext(t *testing.T) {
	kc := pluginKubeconfig(t)
	fake := newFakeAPI(t, []api.Job{{Name: "a-1", Namespace: "team-a", Status: "Running"}}, nil)

	if _, err := runPlugin(t, kc, "", "get", "jobs"); err == nil || !strings.Contains(err.Error(), "kubectl voda config set-server URL") {
		t.Fatalf("no server recorded: %v, want the set-server hint", err)
	}
	out, err := runPlugin(t, kc, "", "config", "set-server", fake.URL)
	if err != nil || !strings.Contains(out, `Context "team-a" uses the Voda API at `+fake.URL) {
		t.Fatalf("set-server: %q, %v", out, err)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	if addr, _, source, err := (clientconfig.Options{Kubeconfig: kc}).ServerAddr(); err != nil || addr != fake.URL {
		t.Fatalf("recorded server %q (from %s), %v; want %s", addr, source, err, fake.URL)
	}
	if cfg.AuthInfos["alice"].Token != "alice-token" || cfg.Contexts["team-a"].Namespace != "team-a" {
		t.Errorf("set-server changed the rest of the kubeconfig: %+v %+v", cfg.AuthInfos["alice"], cfg.Contexts["team-a"])
	}

	for _, c := range []struct {
		args  []string
		query string
	}{
		{[]string{"get", "jobs"}, "namespace=team-a"},
		{[]string{"get", "jobs", "-n", "team-b"}, "namespace=team-b"},
		{[]string{"get", "jobs", "-A"}, ""},
	} {
		before := len(fake.Requests())
		if _, err := runPlugin(t, kc, "", c.args...); err != nil {
			t.Fatalf("kubectl voda %s: %v", strings.Join(c.args, " "), err)
		}
		reqs := fake.Requests()[before:]
		if len(reqs) != 1 || reqs[0].Query != c.query {
			t.Errorf("kubectl voda %s: requests %+v, want one with query %q", strings.Join(c.args, " "), reqs, c.query)
		}
	}
	if _, err := runPlugin(t, kc, "", "get", "jobs", "-n", "x", "-A"); err == nil {
		t.Error("-n with -A: no error")
	}

	manifest := "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata:\n  name: mnist\nspec: {}\n"
	if _, err := runPlugin(t, kc, manifest, "create", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	creates := fake.Creates()
	var sent struct {
		Metadata struct{ Namespace string } `json:"metadata"`
	}
	if len(creates) != 1 || yaml.Unmarshal([]byte(creates[0].Body), &sent) != nil || sent.Metadata.Namespace != "team-a" {
		t.Errorf("create sent %+v; want the manifest with the context's namespace team-a", creates)
	}

	// Another context without a recorded server: the error names it.
	if _, err := runPlugin(t, kc, "", "get", "jobs", "--context", "bare"); err == nil || !strings.Contains(err.Error(), `kubeconfig context "bare" does not say where its Voda API is`) {
		t.Errorf("context without a server: %v", err)
	}
	// --server wins, and a context without a namespace lists "default".
	before := len(fake.Requests())
	if _, err := runPlugin(t, kc, "", "get", "jobs", "--context", "bare", "--server", fake.URL); err != nil {
		t.Fatal(err)
	}
	if reqs := fake.Requests()[before:]; len(reqs) != 1 || reqs[0].Query != "namespace=default" {
		t.Errorf("context without a namespace: %+v, want namespace=default", reqs)
	}
}

func TestPluginHelpSaysKubectlVoda(t *testing.T) {
	out, err := runPlugin(t, pluginKubeconfig(t), "", "get", "jobs", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kubectl voda get jobs [NAME...]", "  kubectl voda get jobs --live", "-A, --all-namespaces"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "voda ") {
			t.Errorf("help line %q names voda, not kubectl voda", line)
		}
	}
}

func TestWithNamespace(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"no namespace", "kind: MPIJob\nmetadata:\n  name: a\nspec:\n  slots: 1\n", `{"kind":"MPIJob","metadata":{"name":"a","namespace":"ns"},"spec":{"slots":1}}`},
		{"a namespace", "kind: MPIJob\nmetadata:\n  name: a\n  namespace: other\n", "kind: MPIJob\nmetadata:\n  name: a\n  namespace: other\n"},
		{"no metadata", "kind: MPIJob\n", "kind: MPIJob\n"},
		{"not YAML", "kind: [\n", "kind: [\n"},
		{"big integers stay", `{"metadata":{"name":"a"},"n":12345678901234567890}`, `{"metadata":{"name":"a","namespace":"ns"},"n":12345678901234567890}`},
	} {
		if got := string(withNamespace([]byte(c.in), "ns")); got != c.want {
			t.Errorf("%s: withNamespace = %s, want %s", c.name, got, c.want)
		}
	}
	if got := string(withNamespace([]byte("metadata: {}\n"), "")); got != "metadata: {}\n" {
		t.Errorf("no namespace to give: %q changed", got)
	}
}
