package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/vodascheduler/voda/internal/auth"
)

// AuthOptions say who may call the API and how it is reached (see
// docs/security.md). The zero value is the anonymous mode over plain
// HTTP, which validate allows only on a loopback address.
type AuthOptions struct {
	// TokenFile is a static token file of kube-apiserver's format
	// (auth.TokenFile); empty means no authentication.
	TokenFile string
	// UsersGroup and AdminsGroup are the groups of the user and admin
	// roles (auth.Roles); empty means auth.DefaultUsersGroup and
	// auth.DefaultAdminsGroup.
	UsersGroup, AdminsGroup string
	// AllowAnonymous lets an API without TokenFile listen on an address
	// other than loopback, where anyone who reaches it may do anything.
	AllowAnonymous bool
	// TLSCertFile and TLSKeyFile, both or neither, are the PEM
	// certificate (chain) and private key the API serves HTTPS with.
	TLSCertFile, TLSKeyFile string
}

// validate checks the options of an API listening on addr.
func (o *AuthOptions) validate(addr string) error {
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file: give both or neither")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil // listening reports it
	}
	if o.TokenFile == "" && !o.AllowAnonymous && !isLoopback(addr) {
		return fmt.Errorf("--addr %s: not a loopback address, and without --token-auth-file anyone who reaches it may delete any job and change the algorithm; "+
			"give --token-auth-file, or --insecure-allow-anonymous to serve it without authentication anyway", addr)
	}
	return nil
}

// isLoopback reports whether a HOST:PORT listens only on the loopback
// interface: a loopback IP or localhost. An empty host listens on every
// interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// apiSecurity is what the API is built and served with.
type apiSecurity struct {
	authn auth.Authenticator // nil: anonymous
	authz auth.Authorizer
	tls   *tls.Config // nil: plain HTTP
}

// load reads the token file and the certificate; errors name the flags.
func (o *AuthOptions) load(addr string, log *slog.Logger) (apiSecurity, error) {
	var sec apiSecurity
	if o.TokenFile != "" {
		tf, err := auth.LoadTokenFile(o.TokenFile)
		if err != nil {
			return sec, fmt.Errorf("--token-auth-file: %w", err)
		}
		sec.authn, sec.authz = tf, auth.NewRoles(o.UsersGroup, o.AdminsGroup)
		roles := sec.authz.(auth.Roles)
		log.Info("API authenticates bearer tokens", "tokenFile", o.TokenFile, "tokens", tf.Len(),
			"usersGroup", roles.UsersGroup, "adminsGroup", roles.AdminsGroup)
	} else if !isLoopback(addr) {
		log.Warn("API without authentication on a non-loopback address: anyone who reaches it may do anything", "addr", addr)
	}
	if o.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile)
		if err != nil {
			return sec, fmt.Errorf("--tls-cert-file and --tls-private-key-file: %w", err)
		}
		sec.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	} else if o.TokenFile != "" && !isLoopback(addr) {
		log.Warn("API takes bearer tokens over plain HTTP on a non-loopback address; give --tls-cert-file and --tls-private-key-file unless a proxy terminates TLS", "addr", addr)
	}
	return sec, nil
}
