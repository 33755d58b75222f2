package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"unicode"
)

// Option configures a Client in New.
type Option func(*Client) error

// WithBearerToken sends token as "Authorization: Bearer <token>" with
// every request, for a server started with --token-auth-file. An empty
// token sends none.
func WithBearerToken(token string) Option {
	return func(c *Client) error {
		if strings.IndexFunc(token, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
			return errors.New("the token holds a space or an unprintable character")
		}
		c.token = token
		return nil
	}
}

// maxCABytes bounds a CA file: a bundle of every public root is ~250 KB.
const maxCABytes = 4 << 20

// WithCAFile verifies an https server's certificate against the PEM
// certificates in path instead of the system's roots, as kubectl's
// --certificate-authority does. It needs the client's transport to be an
// *http.Transport (or nil, the default); the transport is cloned, not
// changed.
func WithCAFile(path string) Option {
	return func(c *Client) error {
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("certificate authority: %w", err)
		}
		if st.Size() > maxCABytes {
			return fmt.Errorf("certificate authority %s: larger than %d bytes", path, maxCABytes)
		}
		pem, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("certificate authority: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("certificate authority %s: no PEM certificate in it", path)
		}
		return c.setRootCAs(pool)
	}
}

// setRootCAs gives the client a copy of its transport that trusts pool.
func (c *Client) setRootCAs(pool *x509.CertPool) error {
	var tr *http.Transport
	var wraps []func(http.RoundTripper) http.RoundTripper
	switch t := c.hc.Transport.(type) {
	case nil:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		tr = t.Clone()
	case *wrappedTransport:
		tr, wraps = t.base.Clone(), t.wraps
	default:
		return fmt.Errorf("certificate authority: the client's transport is a %T, not an *http.Transport", t)
	}
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr.TLSClientConfig.RootCAs = pool
	var rt http.RoundTripper = tr
	if len(wraps) > 0 {
		rt = newWrappedTransport(tr, wraps)
	}
	c.setTransport(rt)
	return nil
}

// setTransport gives the client a copy of its *http.Client that uses rt,
// so that a caller's *http.Client is never changed.
func (c *Client) setTransport(rt http.RoundTripper) {
	hc := *c.hc
	hc.Transport = rt
	c.hc = &hc
}

// WithTransportWrapper wraps the client's transport in wrap, which gets
// the transport every request would otherwise go through and returns the
// one it goes through instead: to add credentials that a library computes
// per request (client-go's transport.HTTPWrappersForConfig, which runs a
// kubeconfig's exec plugin and re-reads its token file), to log, or to
// count. wrap must call the transport it is given to send a request.
//
// Unlike a wrapper that New's caller puts into its own *http.Client, this
// one keeps working with WithCAFile in either order: WithCAFile clones
// the *http.Transport underneath and wrap is called again on the clone.
// Several wrappers nest in order, the last given outermost. A nil wrap is
// ignored. The wrapper sees the requests after WithBearerToken has set
// their Authorization header.
func WithTransportWrapper(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(c *Client) error {
		if wrap == nil {
			return nil
		}
		switch t := c.hc.Transport.(type) {
		case nil:
			c.setTransport(newWrappedTransport(http.DefaultTransport.(*http.Transport), []func(http.RoundTripper) http.RoundTripper{wrap}))
		case *http.Transport:
			c.setTransport(newWrappedTransport(t, []func(http.RoundTripper) http.RoundTripper{wrap}))
		case *wrappedTransport:
			c.setTransport(newWrappedTransport(t.base, append(slices.Clip(t.wraps), wrap)))
		default:
			// A caller's own RoundTripper: wrap it as it is; a later
			// WithCAFile refuses it as it always has.
			c.setTransport(wrap(t))
		}
		return nil
	}
}

// wrappedTransport is an *http.Transport seen through wrappers, kept
// apart so that WithCAFile can replace the transport under them.
type wrappedTransport struct {
	base  *http.Transport
	wraps []func(http.RoundTripper) http.RoundTripper
	rt    http.RoundTripper // wraps applied to base
}

func newWrappedTransport(base *http.Transport, wraps []func(http.RoundTripper) http.RoundTripper) *wrappedTransport {
	var rt http.RoundTripper = base
	for _, w := range wraps {
		rt = w(rt)
	}
	return &wrappedTransport{base: base, wraps: wraps, rt: rt}
}

// RoundTrip sends r through the wrappers.
func (t *wrappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.rt.RoundTrip(r)
}

// CloseIdleConnections closes the idle connections of the transport under
// the wrappers, for http.Client.CloseIdleConnections.
func (t *wrappedTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }
