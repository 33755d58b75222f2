package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
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
	switch t := c.hc.Transport.(type) {
	case nil:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		tr = t.Clone()
	default:
		return fmt.Errorf("certificate authority: the client's transport is a %T, not an *http.Transport", t)
	}
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr.TLSClientConfig.RootCAs = pool
	hc := *c.hc
	hc.Transport = tr
	c.hc = &hc
	return nil
}
