package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reasonConsts are the constants of type Reason that errors.go declares,
// read from its source so that a constant left out of Reasons counts.
func reasonConsts(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Reason" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					t.Fatalf("a Reason constant that is not a string literal: %#v", v)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return out
}

// documentedReasons are the reasons of the table in docs/api.md.
func documentedReasons(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	begin, end := "<!-- reasons:begin -->\n", "<!-- reasons:end -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/api.md lacks the %q and %q markers", begin, end)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(doc[i+len(begin):j]), "\n")[2:] {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			t.Fatalf("docs/api.md: reasons row %q", line)
		}
		out = append(out, strings.Trim(strings.TrimSpace(cells[1]), "`"))
	}
	slices.Sort(out)
	return out
}

// TestReasonsDocumented: every Reason is in Reasons and in the table of
// docs/api.md, and the table names no other.
func TestReasonsDocumented(t *testing.T) {
	consts := reasonConsts(t)
	var listed []string
	for _, r := range Reasons {
		listed = append(listed, string(r))
	}
	slices.Sort(listed)
	if diff := cmp.Diff(consts, listed); diff != "" {
		t.Errorf("Reasons (-constants,+Reasons):\n%s", diff)
	}
	if diff := cmp.Diff(consts, documentedReasons(t)); diff != "" {
		t.Errorf("docs/api.md's reasons (-constants,+documented):\n%s", diff)
	}
	if len(slices.Compact(slices.Clone(consts))) != len(consts) {
		t.Errorf("a reason is spelled twice: %q", consts)
	}
}

// TestTooLargeHasOneReason: every body over its route's limit is answered
// with the one reason for 413 (a manifest's was TooLarge, a progress
// report's RequestEntityTooLarge).
func TestTooLargeHasOneReason(t *testing.T) {
	f := newFixture(t)
	j := f.create(mpiJob("big", "1", "1", "v100"))
	for _, c := range []struct{ name, method, path string }{
		{"manifest", "POST", RouteJobs},
		{"legacy manifest", "POST", RouteLegacyJobs},
		{"progress report", "POST", strings.Replace(RouteJobProgress, "{name}", j.Name, 1)},
	} {
		code, _, e, _ := f.as("", c.method, c.path, "application/json", strings.Repeat(" ", maxBody+1))
		if code != http.StatusRequestEntityTooLarge || e.Reason != ReasonRequestEntityTooLarge || e.Field != "body" {
			t.Errorf("%s: %d %+v, want 413 %s naming body", c.name, code, e, ReasonRequestEntityTooLarge)
		}
	}
}
