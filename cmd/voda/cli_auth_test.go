package main

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

// TestTokenAndCertificateAuthority: the client commands send --token (or
// $VODA_TOKEN) as a bearer token and verify an https server against
// --certificate-authority (or $VODA_CA_FILE).
func TestTokenAndCertificateAuthority(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeJSON(w, http.StatusUnauthorized, api.Error{Error: api.ErrorDetail{Code: 401, Reason: "Unauthorized", Message: "the bearer token is not valid"}})
			return
		}
		writeJSON(w, http.StatusOK, api.SchedulerList{Items: testSchedulers()})
	}))
	t.Cleanup(srv.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	get := []string{"get", "schedulers", "--server", srv.URL}

	if out := mustVoda(t, append(get, "--token", "s3cret", "--certificate-authority", caFile)...); !strings.Contains(out, "v100") {
		t.Errorf("with --token and --certificate-authority:\n%s", out)
	}
	wantError(t, append(get, "--token", "wrong", "--certificate-authority", caFile), "the bearer token is not valid")
	wantError(t, append(get, "--token", "s3cret"), "certificate")
	wantError(t, append(get, "--certificate-authority", filepath.Join(t.TempDir(), "none")), "--certificate-authority", "no such file")

	t.Setenv(tokenEnv, "s3cret")
	t.Setenv(caEnv, caFile)
	if out := mustVoda(t, get...); !strings.Contains(out, "v100") {
		t.Errorf("with $%s and $%s:\n%s", tokenEnv, caEnv, out)
	}
	wantError(t, append(get, "--token", "wrong"), "the bearer token is not valid")
}
