package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h := Handler()
	for _, tc := range []struct {
		path, wantType, wantBody string
	}{
		{"/ui/", "text/html", `<script type="module" src="/ui/app.js">`},
		{"/ui/jobs/some-job", "text/html", `<main id="main"`},
		{"/ui/app.js", "text/javascript", "function follow()"},
		{"/ui/style.css", "text/css", ".gpu"},
		{"/ui/../../etc/passwd", "text/html", "<title>Voda</title>"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d, want 200", tc.path, rec.Code)
			continue
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, tc.wantType) {
			t.Errorf("GET %s: Content-Type %q, want %s", tc.path, ct, tc.wantType)
		}
		if !strings.Contains(string(body), tc.wantBody) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.wantBody)
		}
		csp := rec.Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", tc.path, csp, want)
			}
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", tc.path)
		}
	}
}

// TestAssetsSelfContained checks that the pages load nothing from
// elsewhere: no URL with a scheme and host in any asset.
func TestAssetsSelfContained(t *testing.T) {
	for _, name := range []string{"assets/index.html", "assets/app.js", "assets/style.css"} {
		data, err := assets.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(data), "http://www.w3.org/2000/svg", "")
		for _, bad := range []string{"http://", "https://", "//cdn", "@import"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q: the dashboard must not load anything from elsewhere", name, bad)
			}
		}
	}
}

// TestNavigation checks the header's links: one per view the script
// routes (route's views), each once, so that a reader or a screen reader
// meets each view once.
func TestNavigation(t *testing.T) {
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	script, err := assets.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	nav := regexp.MustCompile(`(?s)<nav[^>]*>(.*?)</nav>`).FindSubmatch(page)
	if nav == nil {
		t.Fatal("index.html has no nav")
	}
	var links []string
	for _, m := range regexp.MustCompile(`href="#([^"]*)"`).FindAllSubmatch(nav[1], -1) {
		links = append(links, string(m[1]))
	}
	views := regexp.MustCompile(`const views = \{([^}]*)\}`).FindSubmatch(script)
	if views == nil {
		t.Fatal("app.js routes no views")
	}
	var routed []string
	for _, m := range regexp.MustCompile(`'(/[^']*)':`).FindAllSubmatch(views[1], -1) {
		routed = append(routed, string(m[1]))
	}
	sorted := slices.Sorted(slices.Values(links))
	slices.Sort(routed)
	if !slices.Equal(sorted, routed) {
		t.Errorf("the header links to %q, want each routed view once: %q", links, routed)
	}
}
