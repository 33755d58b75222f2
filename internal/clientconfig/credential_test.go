package clientconfig

import (
	"encoding/json"
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
// is set, else a list of one scheduler.
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
		if a.unauthorized {
			writeUnauthorized(w)
			return
		}
		writeJSON(w, http.StatusOK, api.SchedulerList{Items: []api.Scheduler{{GPUType: "v100"}}})
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeUnauthorized answers as the API does a request without a valid
// token.
func writeUnauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="voda"`)
	writeJSON(w, http.StatusUnauthorized, api.Error{Error: api.ErrorDetail{Code: 401, Reason: "Unauthorized", Message: "the bearer token is not valid"}})
}

// listSchedulers makes one request to o's server with o's client, and
// returns the credential the client carried.
func listSchedulers(t *testing.T, o Options) (Sent, error) {
	t.Helper()
	c, sent, err := o.Client()
	if err != nil {
		return sent, err
	}
	scheds, err := c.ListSchedulers(t.Context())
	if err == nil && (len(scheds) != 1 || scheds[0].GPUType != "v100") {
		t.Errorf("schedulers %+v, want the one of the test server", scheds)
	}
	return sent, err
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
	t.Setenv(TokenEnv, "")
	t.Setenv(ServerEnv, "")
	t.Setenv(CAEnv, "")
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
// sends the bearer token of the kubeconfig context ($KUBECONFIG or
// --kubeconfig, the current context or --context): its token, tokenFile
// or exec plugin; nothing for a user without one, or without a
// kubeconfig; an error for a kubeconfig that does not parse or a --context
// it does not have.
func TestKubeconfigCredential(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("the exec plugin of the test is a bash script:", err)
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
		opts       Options           // Server is srv's
		wantAuth   string
		wantErrors []string
	}{
		{name: "current context's token", wantAuth: "Bearer kube-tok"},
		{name: "tokenFile", opts: Options{Context: "file"}, wantAuth: "Bearer file-tok"},
		{name: "exec plugin", opts: Options{Context: "exec"}, wantAuth: "Bearer exec-tok"},
		{name: "exec plugin with the cluster's info", opts: Options{Context: "exec-info"}, wantAuth: "Bearer exec-tok"},
		{name: "client certificate only", opts: Options{Context: "certs"}, wantAuth: ""},
		{name: "username and password only", opts: Options{Context: "basic"}, wantAuth: ""},
		{name: "no impersonation", opts: Options{Context: "impersonate"}, wantAuth: "Bearer kube-tok"},
		{name: "--kubeconfig over $KUBECONFIG", env: map[string]string{"KUBECONFIG": malformed}, opts: Options{Kubeconfig: kubeconfig}, wantAuth: "Bearer kube-tok"},
		{name: "--token over the kubeconfig", opts: Options{Token: "flag-tok"}, wantAuth: "Bearer flag-tok"},
		{name: "$VODA_TOKEN over the kubeconfig", env: map[string]string{TokenEnv: "env-tok"}, wantAuth: "Bearer env-tok"},
		{name: "no kubeconfig", env: map[string]string{"KUBECONFIG": ""}, wantAuth: ""},
		{name: "missing $KUBECONFIG file", env: map[string]string{"KUBECONFIG": filepath.Join(dir, "none")}, wantAuth: ""},
		{name: "~/.kube/config", env: map[string]string{"KUBECONFIG": "", "HOME": homeWithKubeconfig(t, kubeconfig)}, wantAuth: "Bearer kube-tok"},
		{name: "missing --kubeconfig", opts: Options{Kubeconfig: filepath.Join(dir, "none")}, wantErrors: []string{"--kubeconfig", "none", "no such file"}},
		{name: "malformed kubeconfig", env: map[string]string{"KUBECONFIG": malformed}, wantErrors: []string{"kubeconfig", malformed}},
		{name: "unknown --context", opts: Options{Context: "nope"}, wantErrors: []string{`--context "nope"`, kubeconfig}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", kubeconfig)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tc.opts.Server = srv.URL
			_, err := listSchedulers(t, tc.opts)
			if tc.wantErrors != nil {
				for _, want := range tc.wantErrors {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("error %v, want one containing %q", err, want)
					}
				}
				if auths, _ := srv.Auths(); len(auths) != 0 {
					t.Errorf("the server got %d requests, want none", len(auths))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
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
	_, sent, err := Options{Server: "http://10.0.0.1:1"}.Client()
	if err != nil {
		t.Fatal(err)
	}
	if !sent.withheld || sent.source != "" || sent.kubeContext != "token" {
		t.Errorf("sent %+v, want the token of context token withheld", sent)
	}
	err = sent.ExplainUnauthorized(&client.APIError{StatusCode: http.StatusUnauthorized, Reason: "Unauthorized", Message: "the bearer token is not valid"})
	for _, want := range []string{"the bearer token is not valid\n", `kubeconfig context "token" was withheld`, "http://10.0.0.1:1 is plain HTTP", "https", "--certificate-authority", "--token", "$" + TokenEnv} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}

	// An explicit token is the user's choice and goes anywhere.
	if _, sent, err := (Options{Server: "http://10.0.0.1:1", Token: "flag-tok"}).Client(); err != nil || sent.withheld || sent.source != "--token" {
		t.Errorf("with --token: %v, sent %+v", err, sent)
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
	if _, err := listSchedulers(t, Options{Server: redirector.URL}); err != nil {
		t.Fatal(err)
	}
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
		opts       Options
		want       string
	}{
		{name: "--token", opts: Options{Token: "flag-tok"}, want: "carried the token of --token"},
		{name: "$VODA_TOKEN", env: "env-tok", want: "carried the token of $" + TokenEnv},
		{name: "kubeconfig", kubeconfig: kubeconfig, want: `carried the token of kubeconfig context "token"`},
		{name: "kubeconfig --context", kubeconfig: kubeconfig, opts: Options{Context: "file"}, want: `carried the token of kubeconfig context "file"`},
		{name: "kubeconfig context without a token", kubeconfig: kubeconfig, opts: Options{Context: "certs"}, want: `carried no token (kubeconfig context "certs" has no token`},
		{name: "none", want: "carried no token: give one with --token or $" + TokenEnv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			t.Setenv(TokenEnv, tc.env)
			tc.opts.Server = srv.URL
			sent, err := listSchedulers(t, tc.opts)
			err = sent.ExplainUnauthorized(err)
			for _, want := range []string{"the bearer token is not valid\n", tc.want} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want one containing %q", err, want)
				}
			}
		})
	}

	sent := Sent{source: "--token"}
	for _, err := range []error{
		nil,
		&client.APIError{StatusCode: http.StatusForbidden, Message: "user u may not delete jobs"},
		&client.ConnectionError{Server: "http://127.0.0.1:1", Err: os.ErrDeadlineExceeded},
	} {
		if got := sent.ExplainUnauthorized(err); got != err {
			t.Errorf("ExplainUnauthorized(%v) = %v, want it unchanged", err, got)
		}
	}
}
