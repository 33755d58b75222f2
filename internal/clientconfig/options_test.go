package clientconfig

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/api"
)

// TestTokenAndCertificateAuthority: the client sends --token (or
// $VODA_TOKEN) as a bearer token and verifies an https server against
// --certificate-authority (or $VODA_CA_FILE).
func TestTokenAndCertificateAuthority(t *testing.T) {
	isolateKubeconfig(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			writeUnauthorized(w)
			return
		}
		writeJSON(w, http.StatusOK, api.SchedulerList{Items: []api.Scheduler{{GPUType: "v100"}}})
	}))
	t.Cleanup(srv.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	wantError := func(o Options, wants ...string) {
		t.Helper()
		o.Server = srv.URL
		_, err := listSchedulers(t, o)
		for _, want := range wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%+v: error %v, want one containing %q", o, err, want)
			}
		}
	}

	if _, err := listSchedulers(t, Options{Server: srv.URL, Token: "s3cret", CAFile: caFile}); err != nil {
		t.Errorf("with --token and --certificate-authority: %v", err)
	}
	wantError(Options{Token: "wrong", CAFile: caFile}, "the bearer token is not valid")
	wantError(Options{Token: "s3cret"}, "certificate")
	wantError(Options{CAFile: filepath.Join(t.TempDir(), "none")}, "--certificate-authority", "no such file")

	t.Setenv(TokenEnv, "s3cret")
	t.Setenv(CAEnv, caFile)
	if _, err := listSchedulers(t, Options{Server: srv.URL}); err != nil {
		t.Errorf("with $%s and $%s: %v", TokenEnv, CAEnv, err)
	}
	wantError(Options{Token: "wrong"}, "the bearer token is not valid")
}

// TestServerDefault: --server, else $VODA_SERVER (blank is unset), else
// the default address of `voda server` when the kubeconfig names none.
func TestServerDefault(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	addr := func(o Options) string {
		t.Helper()
		a, _, _, err := o.ServerAddr()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, env := range []string{"", "  "} {
		t.Setenv(ServerEnv, env)
		if got, want := addr(Options{}), "http://"+api.DefaultServerAddr; got != want {
			t.Errorf("ServerAddr with $%s=%q = %q, want %q", ServerEnv, env, got, want)
		}
	}
	t.Setenv(ServerEnv, "voda.example.com:80")
	if got := addr(Options{}); got != "voda.example.com:80" {
		t.Errorf("ServerAddr = %q, want $%s", got, ServerEnv)
	}
	if got := addr(Options{Server: "h:1"}); got != "h:1" {
		t.Errorf("ServerAddr = %q, want the flag", got)
	}
}
