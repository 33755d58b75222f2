package api

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/vodascheduler/voda/internal/auth"
)

// Browser safety. The API serves no pages, so no browser has a reason to
// send it anything; but a page on any site can make its visitor's browser
// send requests to the visitor's own machine or network:
//
//   - A "simple" cross-origin request (POST with Content-Type text/plain,
//     application/x-www-form-urlencoded or multipart/form-data) is sent
//     without a CORS preflight. The page cannot read the answer, but the
//     request has done its work: a job is created. Other methods and
//     Content-Types need a preflight, which the API never grants.
//   - DNS rebinding: attacker.example first resolves to the attacker's
//     server, then to 127.0.0.1, so the page's requests reach a server on
//     the loopback interface as same-origin requests, which the browser
//     lets it read too. Only the Host header, attacker.example, tells.
//
// checkBrowser therefore applies, before any route, these rules:
//
//  1. Host (every method): a server listening on a loopback address
//     answers only requests whose Host names a loopback address: localhost
//     or a loopback IP such as 127.0.0.1 or [::1], with any port (an SSH
//     tunnel or kubectl port-forward changes the port). A DNS-rebinding
//     page can only use a name it controls. Otherwise 403 UnknownHost (not
//     421 Misdirected Request, which some HTTP/2 clients retry on another
//     connection). A server listening on other addresses is reached by
//     names nobody can list here (Service DNS, node IPs, a load balancer),
//     so its Host is not checked.
//  2. GET, HEAD and OPTIONS pass: they change nothing, and the API answers
//     no preflight, so a browser sends nothing else cross-origin but
//     simple requests.
//  3. Any other method that a browser marks cross-origin is 403
//     CrossOrigin: an Origin header whose scheme://host:port is not the
//     request's own (the Host header; https when the connection is TLS),
//     including "null", or a Sec-Fetch-Site other than same-origin or
//     none. Go, curl and the CLI send neither header.
//  4. On /api/... routes, a body must be JSON or YAML (application/json,
//     application/yaml, application/x-yaml, text/yaml, text/x-yaml, or a
//     +json or +yaml suffix, parameters such as charset allowed), else 415:
//     no browser sends these types cross-origin without a preflight. A
//     DELETE with no body needs no Content-Type (browsers preflight
//     DELETE, and curl -X DELETE sends none).
//  5. The original's routes (/training, /algorithm, /ratelimit) also take
//     no Content-Type or curl's form type, as its CLI and documentation
//     send them, but only from clients that are not browsers: such a
//     request carrying Origin or Sec-Fetch-Mode or Sec-Fetch-Site, i.e.
//     sent by a browser, is 403 BrowserRequest unless its Sec-Fetch-Site
//     says same-origin or none. (Browsers without Fetch Metadata, Chrome
//     before 76, Firefox before 90, Safari before 16.4, still send Origin
//     on a cross-origin POST, so rule 3 stops them; only Firefox before 70
//     sent none on a form POST.)
//
// Rules 4 and 5 leave requests no route takes to the 404 and 405 answers,
// which change nothing.
func (s *Server) checkBrowser(r *http.Request) error {
	if s.loopback && !loopbackHost(r.Host) {
		return newError(http.StatusForbidden, ReasonUnknownHost, "Host", fmt.Sprintf(
			"Host: %q does not name this server, which listens on the loopback address %s; use localhost, 127.0.0.1 or [::1] (a page under another name may be a DNS-rebinding attack)",
			r.Host, s.cfg.ListenAddr))
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if field, why := crossOrigin(r); why != "" {
		return newError(http.StatusForbidden, ReasonCrossOrigin, field, fmt.Sprintf(
			"%s; the API takes no state-changing requests from web pages of other origins", why))
	}
	ct := r.Header.Get("Content-Type")
	if jsonOrYAML(ct) {
		return nil
	}
	if _, pattern := s.mux.Handler(r); pattern == "" || pattern == "/" {
		return nil // 404 or 405
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		if r.Method == http.MethodDelete && ct == "" && r.ContentLength == 0 {
			return nil
		}
		what := "missing"
		if ct != "" {
			what = fmt.Sprintf("%q is not JSON or YAML", ct)
		}
		return newError(http.StatusUnsupportedMediaType, ReasonUnsupportedMediaType, "Content-Type", fmt.Sprintf(
			"Content-Type: %s; a %s to %s must send application/json or application/yaml", what, r.Method, r.URL.Path))
	}
	if browserSent(r) {
		return newError(http.StatusForbidden, ReasonBrowserRequest, "Content-Type", fmt.Sprintf(
			"Content-Type: %q from a browser (it sent Origin or Sec-Fetch-* headers): the original's routes take a body that is not JSON or YAML only from other clients (curl, scripts); send application/json or application/yaml", ct))
	}
	return nil
}

// loopbackHost reports whether a Host header names a loopback address
// (auth.IsLoopbackAddr). A request without one (HTTP/1.0) is no browser's.
func loopbackHost(host string) bool {
	return host == "" || auth.IsLoopbackAddr(host)
}

// crossOrigin says which header, if any, marks r as sent by a page of
// another origin, and why.
func crossOrigin(r *http.Request) (field, why string) {
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r) {
		return "Origin", fmt.Sprintf("Origin: %q is not this server's origin %s", o, ownOrigin(r))
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return "Sec-Fetch-Site", fmt.Sprintf("Sec-Fetch-Site: %q: the browser says a page of another origin sent this", site)
	}
	return "", ""
}

// ownOrigin is the origin a browser would give a page of this server.
func ownOrigin(r *http.Request) string {
	return requestScheme(r) + "://" + r.Host
}

func requestScheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// sameOrigin compares an Origin header with r's own origin: scheme,
// host (case-insensitive) and port, a missing port being the scheme's.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != requestScheme(r) || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") {
		return false
	}
	own := &url.URL{Host: r.Host}
	return strings.EqualFold(u.Hostname(), own.Hostname()) && portOr(u.Port(), u.Scheme) == portOr(own.Port(), u.Scheme)
}

func portOr(port, scheme string) string {
	switch {
	case port != "":
		return port
	case scheme == "https":
		return "443"
	}
	return "80"
}

// browserSent reports whether a browser sent r other than as a
// same-origin request or the user's own navigation.
func browserSent(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return false
	}
	return r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Mode") != "" || r.Header.Get("Sec-Fetch-Site") != ""
}

// jsonOrYAML reports whether a Content-Type is JSON or YAML.
func jsonOrYAML(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch mt {
	case "application/json", "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
		return true
	}
	return strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+yaml")
}
