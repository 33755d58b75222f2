package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/test/vodatest"
)

// tokenFile writes a token file of an admin, a user and a caller in no
// group.
func tokenFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	data := "admin-token-0123456789,root,0,voda:admins\nuser-token-0123456789,alice,1,\"team-a,voda:users\"\nscrape-token-0123456789,prometheus,2\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// call sends one request with a bearer token (none when empty) and
// returns the status, the WWW-Authenticate header and the body.
func call(t *testing.T, hc *http.Client, token, method, url, contentType string, body []byte) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b
}

// TestAuthTokenFile: the binary with --token-auth-file on 127.0.0.1
// answers 401 without a valid token, 403 to a user changing the
// algorithm, and serves users' jobs and admins' settings.
func TestAuthTokenFile(t *testing.T) {
	srv := startServer(t, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--log-level", "warn", "--token-auth-file", tokenFile(t))
	base, hc := srv.URL(), srv.HTTPClient()
	algo := []byte(`{"algorithm": "Tiresias"}`)
	for _, c := range []struct {
		name, token, method, path, contentType string
		body                                   []byte
		want                                   int
		wantBody                               string
	}{
		{"no token", "", "GET", api.RouteJobs, "", nil, 401, "requires a bearer token"},
		{"unknown token", "guess", "GET", api.RouteJobs, "", nil, 401, "not valid"},
		{"no token, legacy delete", "", "DELETE", api.RouteLegacyJobs, "", []byte("x"), 401, "Unauthorized"},
		{"no token, healthz", "", "GET", api.RouteHealthz, "", nil, 200, "ok"},
		{"user submits", "user-token-0123456789", "POST", api.RouteJobs, "application/yaml", manifest("mine", 1, 2, 3), 201, `"name": "mine-`},
		{"user changes the algorithm", "user-token-0123456789", "PUT", "/api/v1/schedulers/v100/algorithm", "application/json", algo, 403,
			`user \"alice\" may not update schedulers/algorithm v100: needs the admin role`},
		{"user changes the rate limit, legacy route", "user-token-0123456789", "PUT", api.RouteLegacyLimit, "", []byte("5"), 403, "Forbidden"},
		{"scraper lists jobs: sees none", "scrape-token-0123456789", "GET", api.RouteJobs, "", nil, 200, `"items": []`},
		{"scraper submits", "scrape-token-0123456789", "POST", api.RouteJobs, "application/yaml", manifest("theirs", 1, 2, 3), 403, "needs the user role"},
		{"scraper reads metrics", "scrape-token-0123456789", "GET", api.RouteMetrics, "", nil, 200, `code="403",route="PUT /api/v1/schedulers/{gpuType}/algorithm"`},
		{"admin changes the algorithm", "admin-token-0123456789", "PUT", "/api/v1/schedulers/v100/algorithm", "application/json", algo, 200, `"algorithm": "Tiresias"`},
	} {
		code, challenge, b := call(t, hc, c.token, c.method, base+c.path, c.contentType, c.body)
		if code != c.want || !strings.Contains(string(b), c.wantBody) {
			t.Errorf("%s: %d %s, want %d containing %s", c.name, code, b, c.want, c.wantBody)
		}
		if (code == 401) != (challenge != "") {
			t.Errorf("%s: %d with WWW-Authenticate %q", c.name, code, challenge)
		}
	}

	jobs, err := srv.Client(client.WithBearerToken("user-token-0123456789")).ListJobs(ctxT(t), client.ListOptions{})
	if err != nil || len(jobs) != 1 {
		t.Errorf("the client with the user's token lists %d jobs (%v), want 1", len(jobs), err)
	}
	_, err = srv.Client().ListJobs(ctxT(t), client.ListOptions{})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.Contains(err.Error(), "VODA_TOKEN") {
		t.Errorf("the client without a token: %v, want a 401 that says how to give one", err)
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their paths; the certificate is its own authority.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "voda test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestAuthTLS: the binary serves HTTPS with --tls-cert-file and
// --tls-private-key-file; the CLI verifies it with
// --certificate-authority and authenticates with $VODA_TOKEN. Plain
// HTTP, TLS 1.1 and a client that does not trust the authority get no
// answer.
func TestAuthTLS(t *testing.T) {
	cert, key := selfSigned(t)
	srv := vodatest.StartServerTLS(t, cert, "--data-dir", t.TempDir(), "--sim-nodes", "v100=1x4", "--log-level", "warn",
		"--token-auth-file", tokenFile(t), "--tls-cert-file", cert, "--tls-private-key-file", key)

	cli := func(env []string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary(t), args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := cli([]string{"VODA_TOKEN=admin-token-0123456789"}, "set", "algorithm", "Tiresias", "--server", srv.URL(), "--certificate-authority", cert)
	if err != nil {
		t.Fatalf("voda set algorithm over HTTPS: %v\n%s", err, out)
	}
	out, err = cli([]string{"VODA_SERVER=" + srv.URL(), "VODA_CA_FILE=" + cert}, "get", "schedulers", "-o", "json", "--token", "user-token-0123456789")
	var list api.SchedulerList
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) != 1 || list.Items[0].Algorithm != "Tiresias" {
		t.Fatalf("voda get schedulers over HTTPS: %v\n%s", err, out)
	}
	if out, err := cli(nil, "get", "jobs", "--server", srv.URL(), "--token", "user-token-0123456789"); err == nil || !strings.Contains(out, "certificate") {
		t.Errorf("the CLI without the authority: %v\n%s; want a certificate error", err, out)
	}

	if resp, err := http.Get("http://" + srv.Addr + api.RouteHealthz); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain HTTP to the HTTPS port: %v %v, want 400 (Go's answer to HTTP on a TLS port)", resp, err)
	} else {
		resp.Body.Close()
	}
	old := srv.HTTPClient()
	old.Transport.(*http.Transport).TLSClientConfig.MinVersion = tls.VersionTLS10
	old.Transport.(*http.Transport).TLSClientConfig.MaxVersion = tls.VersionTLS11
	if resp, err := old.Get(srv.URL() + api.RouteHealthz); err == nil {
		resp.Body.Close()
		t.Error("a TLS 1.1 client was served")
	}
}

// TestAuthAnonymousRefusedOffLoopback: without --token-auth-file the
// binary does not listen on every interface, and says which flag would
// let it.
func TestAuthAnonymousRefusedOffLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "state")
	out, err := exec.CommandContext(ctx, binary(t), "server", "--addr", "0.0.0.0:0", "--data-dir", dir).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(string(out), "--addr 0.0.0.0:0: not a loopback address") ||
		!strings.Contains(string(out), "--token-auth-file") || !strings.Contains(string(out), "--insecure-allow-anonymous") {
		t.Fatalf("voda server --addr 0.0.0.0:0: %v\n%s\nwant a refusal naming --token-auth-file and --insecure-allow-anonymous", err, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the refused server created its data directory: %v", err)
	}
}
