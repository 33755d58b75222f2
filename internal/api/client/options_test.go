package client

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/api"
)

// tlsServer answers GET /api/v1/algorithms over HTTPS, recording the
// Authorization header, and returns its CA file.
func tlsServer(t *testing.T) (srv *httptest.Server, caFile string, auth *string) {
	t.Helper()
	auth = new(string)
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"items": [{"name": "FIFO", "summary": "s"}]}`))
	}))
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, caFile, auth
}

func TestTokenAndCAFile(t *testing.T) {
	srv, caFile, auth := tlsServer(t)
	c, err := New(srv.URL, nil, WithBearerToken("s3cret"), WithCAFile(caFile))
	if err != nil {
		t.Fatal(err)
	}
	if algos, err := c.ListAlgorithms(t.Context()); err != nil || len(algos) != 1 {
		t.Fatalf("ListAlgorithms over HTTPS with the CA file: %v, %v", algos, err)
	}
	if *auth != "Bearer s3cret" {
		t.Errorf("Authorization %q, want Bearer s3cret", *auth)
	}

	// The caller's client keeps its timeout and is not changed.
	hc := &http.Client{Timeout: 7}
	c, err = New(srv.URL, hc, WithCAFile(caFile))
	if err != nil || hc.Transport != nil || c.hc.Timeout != 7 {
		t.Errorf("WithCAFile on a caller's client: %v; its transport %v, the client's timeout %v", err, hc.Transport, c.hc.Timeout)
	}

	c, err = New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListAlgorithms(t.Context())
	var ce *ConnectionError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA file: %v, want a certificate error", err)
	}
	if *auth != "Bearer s3cret" {
		t.Error("a request without a token reached the handler")
	}
}

func TestOptionErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	custom := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })}
	for name, tc := range map[string]struct {
		hc   *http.Client
		opt  Option
		want string
	}{
		"token with a newline": {nil, WithBearerToken("a\nb"), "unprintable"},
		"token with a space":   {nil, WithBearerToken("a b"), "space"},
		"missing CA file":      {nil, WithCAFile(filepath.Join(dir, "none")), "no such file"},
		"CA file not PEM":      {nil, WithCAFile(notPEM), "no PEM certificate"},
	} {
		if _, err := New("https://"+api.DefaultServerAddr, tc.hc, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
	_, caFile, _ := tlsServer(t)
	if _, err := New("https://"+api.DefaultServerAddr, custom, WithCAFile(caFile)); err == nil || !strings.Contains(err.Error(), "not an *http.Transport") {
		t.Errorf("a custom transport: %v, want refused", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
