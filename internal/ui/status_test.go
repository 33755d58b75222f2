package ui_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/api"
)

// TestStatusesMatchAPI: the dashboard spells job statuses as api.Status
// does. Its final statuses (doneStatuses) are exactly those whose Done
// is true, and no capitalised string literal in app.js names a status in
// another spelling (another case, or Cancelled); lowercase words are the
// labels of times ('waiting', 'running').
func TestStatusesMatchAPI(t *testing.T) {
	b, err := os.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	js := string(b)
	m := regexp.MustCompile(`const doneStatuses = new Set\(\[([^\]]*)\]\);`).FindStringSubmatch(js)
	if m == nil {
		t.Fatal("app.js declares no doneStatuses set")
	}
	literal := regexp.MustCompile(`'([^'\\]*)'`)
	var done []string
	for _, q := range literal.FindAllStringSubmatch(m[1], -1) {
		done = append(done, q[1])
	}
	var want []string
	for _, st := range api.Statuses {
		if st.Done() {
			want = append(want, string(st))
		}
	}
	slices.Sort(done)
	slices.Sort(want)
	if diff := cmp.Diff(want, done); diff != "" {
		t.Errorf("app.js doneStatuses (-api.Status,+app.js):\n%s", diff)
	}
	for _, q := range literal.FindAllStringSubmatch(js, -1) {
		if q[1] == "" || q[1] == strings.ToLower(q[1]) {
			continue
		}
		for _, st := range api.Statuses {
			s := string(st)
			if q[1] != s && (strings.EqualFold(q[1], s) || strings.EqualFold(q[1], strings.Replace(s, "led", "lled", 1))) {
				t.Errorf("app.js spells the status %s as %q", s, q[1])
			}
		}
	}
}
