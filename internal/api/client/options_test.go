package client

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// headerWrapper is a transport wrapper that sets header name to value
// and appends tag to the header "X-Wrapped", to show the nesting order.
func headerWrapper(name, value, tag string) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			if value != "" && r.Header.Get(name) == "" {
				r.Header.Set(name, value)
			}
			r.Header.Add("X-Wrapped", tag)
			return rt.RoundTrip(r)
		})
	}
}

// TestTransportWrapper: WithTransportWrapper's wrapper sees every
// request, in either order with WithCAFile; wrappers nest with the last
// outermost; a bearer token of WithBearerToken is already set when the
// wrapper sees the request; the caller's *http.Client is not changed.
func TestTransportWrapper(t *testing.T) {
	var mu sync.Mutex
	var seen http.Header
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"items": []}`))
	})
	plain := httptest.NewServer(record)
	t.Cleanup(plain.Close)
	srv := httptest.NewTLSServer(record)
	t.Cleanup(srv.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	custom := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 7 * time.Second}
	customTransport := custom.Transport
	for _, tc := range []struct {
		name       string
		url        string
		hc         *http.Client
		opts       []Option
		wantAuth   string
		wantTagged []string
	}{
		{name: "wrapper", url: plain.URL, opts: []Option{WithTransportWrapper(headerWrapper("Authorization", "Bearer w", "a"))}, wantAuth: "Bearer w", wantTagged: []string{"a"}},
		{name: "nil wrapper", url: plain.URL, opts: []Option{WithTransportWrapper(nil)}},
		{name: "two wrappers, the last outermost", url: plain.URL,
			opts:     []Option{WithTransportWrapper(headerWrapper("Authorization", "Bearer inner", "inner")), WithTransportWrapper(headerWrapper("Authorization", "Bearer outer", "outer"))},
			wantAuth: "Bearer outer", wantTagged: []string{"outer", "inner"}},
		{name: "after WithBearerToken", url: plain.URL, opts: []Option{WithBearerToken("s3cret"), WithTransportWrapper(headerWrapper("Authorization", "Bearer w", "a"))}, wantAuth: "Bearer s3cret", wantTagged: []string{"a"}},
		{name: "wrapper then CA file", url: srv.URL, opts: []Option{WithTransportWrapper(headerWrapper("Authorization", "Bearer w", "a")), WithCAFile(caFile)}, wantAuth: "Bearer w", wantTagged: []string{"a"}},
		{name: "CA file then wrapper", url: srv.URL, opts: []Option{WithCAFile(caFile), WithTransportWrapper(headerWrapper("Authorization", "Bearer w", "a"))}, wantAuth: "Bearer w", wantTagged: []string{"a"}},
		{name: "a caller's client", url: plain.URL, hc: custom, opts: []Option{WithTransportWrapper(headerWrapper("Authorization", "Bearer w", "a"))}, wantAuth: "Bearer w", wantTagged: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.url, tc.hc, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ListAlgorithms(t.Context()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if got := seen.Get("Authorization"); got != tc.wantAuth {
				t.Errorf("Authorization %q, want %q", got, tc.wantAuth)
			}
			if got := seen.Values("X-Wrapped"); !slices.Equal(got, tc.wantTagged) {
				t.Errorf("wrapped by %q, want %q", got, tc.wantTagged)
			}
		})
	}
	if custom.Transport != customTransport || custom.Timeout != 7*time.Second {
		t.Error("WithTransportWrapper changed the caller's *http.Client")
	}

	// A caller's RoundTripper that is not an *http.Transport is wrapped as
	// it is; WithCAFile still refuses it.
	var got string
	rt := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Header.Get("Authorization")
		return nil, errors.New("no network")
	})}
	c, err := New(plain.URL, rt, WithTransportWrapper(headerWrapper("Authorization", "Bearer w", "a")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListAlgorithms(t.Context()); err == nil || got != "Bearer w" {
		t.Errorf("a custom RoundTripper: %v, Authorization %q", err, got)
	}
	if _, err := New(plain.URL, rt, WithTransportWrapper(headerWrapper("Authorization", "Bearer w", "a")), WithCAFile(caFile)); err == nil {
		t.Error("WithCAFile over a wrapped custom RoundTripper: accepted")
	}
}
