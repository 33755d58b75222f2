package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

// authRecorder is a server on 127.0.0.1 that records the Authorization
// and Impersonate-User headers it gets. It answers 401 when unauthorized
// is set, else the lists of jobs and schedulers.
type authRecorder struct {
	URL          string
	unauthorized bool

	mu                  sync.Mutex
	auths, impersonates []string
}

func newAuthRecorder(t *testing.T, unauthorized bool) *authRecorder {
	t.Helper()
	a := &authRecorder{unauthorized: unauthorized}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.auths = append(a.auths, r.Header.Get("Authorization"))
		a.impersonates = append(a.impersonates, r.Header.Get("Impersonate-User"))
		a.mu.Unlock()
		switch {
		case a.unauthorized:
			w.Header().Set("WWW-Authenticate", `Bearer realm="voda"`)
			writeJSON(w, http.StatusUnauthorized, api.Error{Error: api.ErrorDetail{Code: 401, Reason: "Unauthorized", Message: "the bearer token is not valid"}})
		case r.URL.Path == api.RouteJobs:
			writeJSON(w, http.StatusOK, api.JobList{Items: testJobs()})
		default:
			writeJSON(w, http.StatusOK, api.SchedulerList{Items: testSchedulers()})
		}
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// Auths returns the Authorization headers seen so far, and clears them.
func (a *authRecorder) Auths() (auths, impersonates []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	auths, impersonates = a.auths, a.impersonates
	a.auths, a.impersonates = nil, nil
	return auths, impersonates
}

// isolateKubeconfig points HOME at an empty directory and clears
// $KUBECONFIG, $VODA_TOKEN, $VODA_SERVER and $VODA_CA_FILE, so that the
// developer's own kubeconfig and settings are never read.
func isolateKubeconfig(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", "")
	t.Setenv(tokenEnv, "")
	t.Setenv(serverEnv, "")
	t.Setenv(caEnv, "")
	return dir
}

// testKubeconfig is a kubeconfig with a context for every kind of user:
// "token" (current), "file" (tokenFile), "exec" (an exec plugin),
// "exec-info" (an exec plugin told the cluster), "certs" (a client
// certificate only), "basic" (a username and password only) and
// "impersonate" (a token and impersonation).
func testKubeconfig(t *testing.T, dir string) string {
	t.Helper()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("file-tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(dir, "plugin.sh")
	script := "#!/bin/bash\n" +
		`echo '{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": "exec-tok"}}'` + "\n"
	if err := os.WriteFile(plugin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	users := map[string]string{
		"token":       "{token: kube-tok}",
		"file":        fmt.Sprintf("{tokenFile: %q}", tokenFile),
		"exec":        fmt.Sprintf("{exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never}}", plugin),
		"exec-info":   fmt.Sprintf("{exec: {apiVersion: client.authentication.k8s.io/v1, command: %q, interactiveMode: Never, provideClusterInfo: true}}", plugin),
		"certs":       fmt.Sprintf("{client-certificate: %q, client-key: %q}", filepath.Join(dir, "no-such.crt"), filepath.Join(dir, "no-such.key")),
		"basic":       "{username: admin, password: secret}",
		"impersonate": `{token: kube-tok, as: "system:admin"}`,
	}
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\ncurrent-context: token\n")
	b.WriteString("clusters:\n- name: kube\n  cluster: {server: 'https://kube.example:6443', certificate-authority-data: bm90IGEgY2VydA==}\n")
	b.WriteString("contexts:\n")
	for name := range users {
		fmt.Fprintf(&b, "- name: %s\n  context: {cluster: kube, user: %s}\n", name, name)
	}
	b.WriteString("users:\n")
	for name, user := range users {
		fmt.Fprintf(&b, "- name: %s\n  user: %s\n", name, user)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestKubeconfigCredential: without --token and $VODA_TOKEN the client
// commands send the bearer token of the kubeconfig context ($KUBECONFIG or
// --kubeconfig, the current context or --context): its token, tokenFile
// or exec plugin; nothing for a user without one, or without a
// kubeconfig; an error for a kubeconfig that does not parse or a --context
// it does not have.
func TestKubeconfigCredential(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the exec plugin of the test is a bash script:", err)
	}
	dir := isolateKubeconfig(t)
	kubeconfig := testKubeconfig(t, dir)
	malformed := filepath.Join(dir, "malformed")
	if err := os.WriteFile(malformed, []byte("apiVersion: v1\nkind: Config\ncontexts: {not: [a list\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := newAuthRecorder(t, false)

	for _, tc := range []struct {
		name       string
		env        map[string]string // $KUBECONFIG is kubeconfig unless set here
		args       []string
		wantAuth   string
		wantErrors []string
	}{
		{name: "current context's token", wantAuth: "Bearer kube-tok"},
		{name: "tokenFile", args: []string{"--context", "file"}, wantAuth: "Bearer file-tok"},
		{name: "exec plugin", args: []string{"--context", "exec"}, wantAuth: "Bearer exec-tok"},
		{name: "exec plugin with the cluster's info", args: []string{"--context", "exec-info"}, wantAuth: "Bearer exec-tok"},
		{name: "client certificate only", args: []string{"--context", "certs"}, wantAuth: ""},
		{name: "username and password only", args: []string{"--context", "basic"}, wantAuth: ""},
		{name: "no impersonation", args: []string{"--context", "impersonate"}, wantAuth: "Bearer kube-tok"},
		{name: "--kubeconfig over $KUBECONFIG", env: map[string]string{"KUBECONFIG": malformed}, args: []string{"--kubeconfig", kubeconfig}, wantAuth: "Bearer kube-tok"},
		{name: "--token over the kubeconfig", args: []string{"--token", "flag-tok"}, wantAuth: "Bearer flag-tok"},
		{name: "$VODA_TOKEN over the kubeconfig", env: map[string]string{tokenEnv: "env-tok"}, wantAuth: "Bearer env-tok"},
		{name: "no kubeconfig", env: map[string]string{"KUBECONFIG": ""}, wantAuth: ""},
		{name: "missing $KUBECONFIG file", env: map[string]string{"KUBECONFIG": filepath.Join(dir, "none")}, wantAuth: ""},
		{name: "~/.kube/config", env: map[string]string{"KUBECONFIG": "", "HOME": homeWithKubeconfig(t, kubeconfig)}, wantAuth: "Bearer kube-tok"},
		{name: "missing --kubeconfig", args: []string{"--kubeconfig", filepath.Join(dir, "none")}, wantErrors: []string{"--kubeconfig", "none", "no such file"}},
		{name: "malformed kubeconfig", env: map[string]string{"KUBECONFIG": malformed}, wantErrors: []string{"kubeconfig", malformed}},
		{name: "unknown --context", args: []string{"--context", "nope"}, wantErrors: []string{`--context "nope"`, kubeconfig}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", kubeconfig)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"get", "schedulers", "--server", srv.URL}, tc.args...)
			if tc.wantErrors != nil {
				wantError(t, args, tc.wantErrors...)
				if auths, _ := srv.Auths(); len(auths) != 0 {
					t.Errorf("the server got %d requests, want none", len(auths))
				}
				return
			}
			if out := mustVoda(t, args...); !strings.Contains(out, "v100") {
				t.Errorf("output:\n%s", out)
			}
			auths, impersonates := srv.Auths()
			for i, auth := range auths {
				if auth != tc.wantAuth || impersonates[i] != "" {
					t.Errorf("Authorization %q (Impersonate-User %q), want %q", auth, impersonates[i], tc.wantAuth)
				}
			}
			if len(auths) == 0 {
				t.Error("the server got no request")
			}
		})
	}
}

// homeWithKubeconfig is a home directory whose ~/.kube/config is a copy
// of kubeconfig.
func homeWithKubeconfig(t *testing.T, kubeconfig string) string {
	t.Helper()
	home := t.TempDir()
	b, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// TestGetJobsSendsKubeconfigToken: `voda get jobs` against a loopback
// server sends the current kubeconfig context's token.
func TestGetJobsSendsKubeconfigToken(t *testing.T) {
	dir := isolateKubeconfig(t)
	t.Setenv("KUBECONFIG", testKubeconfig(t, dir))
	srv := newAuthRecorder(t, false)
	if out := mustVoda(t, "get", "jobs", "--server", srv.URL); !strings.Contains(out, "mnist-20250601-100000") {
		t.Errorf("voda get jobs:\n%s", out)
	}
	if auths, _ := srv.Auths(); len(auths) != 1 || auths[0] != "Bearer kube-tok" {
		t.Errorf("Authorization headers %q, want one Bearer kube-tok", auths)
	}
}

// TestMayCarryKubeconfigToken: a kubeconfig's token goes to an https
// server or a loopback one, never to a plain-http server elsewhere.
func TestMayCarryKubeconfigToken(t *testing.T) {
	for server, want := range map[string]bool{
		"https://10.0.0.1:1":             true,
		"https://voda.example.com/voda":  true,
		"http://127.0.0.1:55587":         true,
		"http://127.8.9.10:1":            true,
		"http://[::1]:1":                 true,
		"http://localhost:1":             true,
		"http://LocalHost:1":             true,
		"http://10.0.0.1:1":              false,
		"http://0.0.0.0:1":               false,
		"http://voda.example.com:55587":  false,
		"http://localhost.example.com:1": false,
		"http://128.0.0.1:1":             false,
	} {
		u, err := url.Parse(server)
		if err != nil {
			t.Fatal(err)
		}
		if got := mayCarryKubeconfigToken(u); got != want {
			t.Errorf("mayCarryKubeconfigToken(%s) = %v, want %v", server, got, want)
		}
	}
}

// TestKubeconfigTokenWithheld: for a plain-http server that is not
// loopback the client is built without the kubeconfig's token (nothing is
// dialed), and a 401 then says the token was withheld and how to proceed.
func TestKubeconfigTokenWithheld(t *testing.T) {
	dir := isolateKubeconfig(t)
	t.Setenv("KUBECONFIG", testKubeconfig(t, dir))
	o := &clientOptions{server: "http://10.0.0.1:1"}
	if _, err := o.client(); err != nil {
		t.Fatal(err)
	}
	if !o.sent.withheld || o.sent.source != "" || o.sent.kubeContext != "token" {
		t.Errorf("sent %+v, want the token of context token withheld", o.sent)
	}
	err := o.explainUnauthorized(&client.APIError{StatusCode: http.StatusUnauthorized, Reason: "Unauthorized", Message: "the bearer token is not valid"})
	for _, want := range []string{"the bearer token is not valid\n", `kubeconfig context "token" was withheld`, "http://10.0.0.1:1 is plain HTTP", "https", "--certificate-authority", "--token", "$" + tokenEnv} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}

	// An explicit token is the user's choice and goes anywhere.
	o = &clientOptions{server: "http://10.0.0.1:1", token: "flag-tok"}
	if _, err := o.client(); err != nil || o.sent.withheld || o.sent.source != "--token" {
		t.Errorf("with --token: %v, sent %+v", err, o.sent)
	}
}

// TestKubeconfigTokenNotRedirected: a redirect to another server does
// not carry the kubeconfig's token along.
func TestKubeconfigTokenNotRedirected(t *testing.T) {
	dir := isolateKubeconfig(t)
	t.Setenv("KUBECONFIG", testKubeconfig(t, dir))
	other := newAuthRecorder(t, false)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	mustVoda(t, "get", "schedulers", "--server", redirector.URL)
	if auths, _ := other.Auths(); len(auths) != 1 || auths[0] != "" {
		t.Errorf("the server redirected to got Authorization %q, want none", auths)
	}
}

// TestUnauthorizedNamesCredential: a 401 says which credential the
// request carried; other errors are unchanged.
func TestUnauthorizedNamesCredential(t *testing.T) {
	dir := isolateKubeconfig(t)
	kubeconfig := testKubeconfig(t, dir)
	srv := newAuthRecorder(t, true)
	for _, tc := range []struct {
		name       string
		kubeconfig string
		env        string // $VODA_TOKEN
		args       []string
		want       string
	}{
		{name: "--token", args: []string{"--token", "flag-tok"}, want: "carried the token of --token"},
		{name: "$VODA_TOKEN", env: "env-tok", want: "carried the token of $" + tokenEnv},
		{name: "kubeconfig", kubeconfig: kubeconfig, want: `carried the token of kubeconfig context "token"`},
		{name: "kubeconfig --context", kubeconfig: kubeconfig, args: []string{"--context", "file"}, want: `carried the token of kubeconfig context "file"`},
		{name: "kubeconfig context without a token", kubeconfig: kubeconfig, args: []string{"--context", "certs"}, want: `carried no token (kubeconfig context "certs" has no token`},
		{name: "none", want: "carried no token: give one with --token or $" + tokenEnv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			t.Setenv(tokenEnv, tc.env)
			wantError(t, append([]string{"get", "schedulers", "--server", srv.URL}, tc.args...), "the bearer token is not valid\n", tc.want)
			wantError(t, append([]string{"delete", "job", "a", "b", "--server", srv.URL}, tc.args...), "delete a: the bearer token is not valid", "delete b:", tc.want)
		})
	}

	o := &clientOptions{sent: sentCredential{source: "--token"}}
	for _, err := range []error{
		nil,
		&client.APIError{StatusCode: http.StatusForbidden, Message: "user u may not delete jobs"},
		&client.ConnectionError{Server: "http://127.0.0.1:1", Err: os.ErrDeadlineExceeded},
	} {
		if got := o.explainUnauthorized(err); got != err {
			t.Errorf("explainUnauthorized(%v) = %v, want it unchanged", err, got)
		}
	}
}

// TestKubeconfigFlagsHelp: --help shows --kubeconfig, --context and where
// --token defaults from.
func TestKubeconfigFlagsHelp(t *testing.T) {
	for _, cmd := range []string{"get", "create", "describe", "delete", "set"} {
		out := mustVoda(t, cmd, "--help")
		for _, want := range []string{
			"--kubeconfig string", "(default $KUBECONFIG, else ~/.kube/config)",
			"--context string", "kubeconfig context whose token to send",
			"(default $" + tokenEnv + ", else the current kubeconfig context's token)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("voda %s --help does not contain %q:\n%s", cmd, want, out)
			}
		}
	}
}
