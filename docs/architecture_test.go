package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is the import path prefix of Voda's own packages.
const module = "github.com/vodascheduler/voda/"

// archPackage is one line of docs/architecture.md's package list.
type archPackage struct {
	path   string // as go list spells it under the module: "internal/api", "cmd/voda"
	line   int    // 1-based line in the document
	helper bool   // a test helper: its description starts with "tests:"
}

// archRow is one row of the import table: the packages on its left (a row
// may name several that import the same ones) and the imports on its right.
type archRow struct {
	line    int
	names   []string // full paths, as in archPackage.path
	imports []string // full paths, sorted
}

// archDoc is what the test reads from docs/architecture.md.
type archDoc struct {
	packages []archPackage // in the document's order: top to bottom is the layering
	rows     []archRow
	// listLine and tableLine are where the list and the table start, for
	// messages about what either lacks.
	listLine, tableLine int
}

var (
	// listEntry matches a line of the package list that names a package:
	// at most two spaces of indent, then the path. Description lines that
	// continue an entry are indented further.
	listEntry = regexp.MustCompile(`^ {0,2}((?:cmd|internal)/[a-z0-9_/]+|docs)(?:\s+(.*))?$`)
	// remark matches a parenthesised remark in the import table, such as
	// "(flag defaults)" or "(none)", which the test ignores.
	remark = regexp.MustCompile(`\([^)]*\)`)
)

// fencedBlocks returns the fenced code blocks of a Markdown text, each
// with the 1-based line number of its first line.
func fencedBlocks(text string) (blocks [][]string, starts []int) {
	var cur []string
	in := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if in {
				blocks = append(blocks, cur)
			} else {
				cur = nil
				starts = append(starts, i+2)
			}
			in = !in
			continue
		}
		if in {
			cur = append(cur, line)
		}
	}
	return blocks, starts
}

// fullPath turns a name from the import table ("api/client", "cmd/voda",
// "docs") into the path go list reports under the module: the table names
// packages under internal/ without that prefix, the others (cmd/voda, and
// docs, which embeds the OpenAPI document) from the repository's root.
func fullPath(name string) string {
	first, _, _ := strings.Cut(name, "/")
	if first == "cmd" || first == "docs" || first == "internal" {
		return name
	}
	return "internal/" + name
}

// shortName is the reverse of fullPath: how the import table spells a path.
func shortName(path string) string {
	return strings.TrimPrefix(path, "internal/")
}

// splitNames splits a comma-separated list of names, dropping remarks in
// parentheses and empty items.
func splitNames(s string) []string {
	var out []string
	for _, f := range strings.Split(remark.ReplaceAllString(s, ""), ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, fullPath(f))
		}
	}
	return out
}

// parseArchitecture reads the package list (the first fenced block whose
// lines start with package paths) and the import table (the first fenced
// block of "name -> imports" rows; a line without "->" continues the row
// above it).
func parseArchitecture(text string) (archDoc, error) {
	var doc archDoc
	blocks, starts := fencedBlocks(text)
	for b, block := range blocks {
		// The table's first row has an arrow; the list's first line, a
		// package and its description (which may hold an arrow further on).
		isTable := false
		if i := slices.IndexFunc(block, func(l string) bool { return strings.TrimSpace(l) != "" }); i >= 0 {
			isTable = strings.Contains(block[i], "->")
		}
		switch {
		case isTable && doc.rows == nil:
			doc.tableLine = starts[b]
			for i, line := range block {
				n := starts[b] + i
				left, right, ok := strings.Cut(line, "->")
				switch {
				case ok:
					doc.rows = append(doc.rows, archRow{line: n, names: splitNames(left), imports: splitNames(right)})
				case strings.TrimSpace(line) == "":
				case len(doc.rows) == 0:
					return doc, fmt.Errorf("line %d: the import table starts without a row (\"name -> imports\"): %q", n, line)
				default:
					last := &doc.rows[len(doc.rows)-1]
					last.imports = append(last.imports, splitNames(line)...)
				}
			}
		case !isTable && doc.packages == nil:
			doc.listLine = starts[b]
			for i, line := range block {
				if m := listEntry.FindStringSubmatch(line); m != nil {
					doc.packages = append(doc.packages, archPackage{
						path:   m[1],
						line:   starts[b] + i,
						helper: strings.HasPrefix(m[2], "tests:"),
					})
				}
			}
		}
	}
	if len(doc.packages) == 0 {
		return doc, errors.New("no package list found (a fenced block of lines starting with cmd/ or internal/)")
	}
	if len(doc.rows) == 0 {
		return doc, errors.New("no import table found (a fenced block of \"name -> imports\" rows)")
	}
	for i := range doc.rows {
		slices.Sort(doc.rows[i].imports)
		doc.rows[i].imports = slices.Compact(doc.rows[i].imports)
	}
	return doc, nil
}

// listedPackage is one package as go list reports it.
type listedPackage struct {
	ImportPath string
	Imports    []string
}

// goListImports runs go list from the module root and returns, for every
// package under internal/ and cmd/ and for docs, the Voda packages its
// non-test files import (paths relative to the module, sorted).
func goListImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./internal/...", "./cmd/...", "./docs")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	got := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list's output: %v", err)
		}
		imports := []string{}
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				imports = append(imports, rel)
			}
		}
		slices.Sort(imports)
		got[strings.TrimPrefix(p.ImportPath, module)] = imports
	}
	if len(got) < 20 {
		t.Fatalf("go list reported only %d packages under internal/ and cmd/", len(got))
	}
	return got
}

// rowText is an import table row for a package, as the document writes it.
func rowText(path string, imports []string) string {
	if len(imports) == 0 {
		return shortName(path) + " -> (none)"
	}
	names := make([]string, len(imports))
	for i, imp := range imports {
		names[i] = shortName(imp)
	}
	return shortName(path) + " -> " + strings.Join(names, ", ")
}

// shortNames spells paths as the import table does, for messages.
func shortNames(paths []string) string {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = shortName(p)
	}
	return strings.Join(names, ", ")
}

// checkArchitecture compares the document with go list's imports and
// returns one message per difference, each saying what to change.
func checkArchitecture(doc archDoc, golist map[string][]string) []string {
	const file = "docs/architecture.md"
	var problems []string
	report := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s", file, line, fmt.Sprintf(format, args...)))
	}

	// The package list: every package once, nothing that is gone.
	position := map[string]int{}
	helper := map[string]bool{}
	for i, p := range doc.packages {
		if _, dup := position[p.path]; dup {
			report(p.line, "%s is listed twice; remove this line", p.path)
			continue
		}
		position[p.path] = i
		helper[p.path] = p.helper
		if _, ok := golist[p.path]; !ok {
			report(p.line, "%s is listed but go list knows no such package; remove its line and its import table row", p.path)
		}
	}
	var paths []string
	for path := range golist {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		if _, ok := position[path]; !ok {
			report(doc.listLine, "%s is missing from the package list; add a line for it %s", path, placement(path, doc, golist))
		}
	}

	// The import table: one row per package, equal to go list's imports.
	rowOf := map[string]archRow{}
	for _, r := range doc.rows {
		for _, name := range r.names {
			if _, dup := rowOf[name]; dup {
				report(r.line, "%s has a second row here; merge the two", shortName(name))
				continue
			}
			rowOf[name] = r
			if _, ok := golist[name]; !ok {
				report(r.line, "the import table has a row for %s, which go list does not know; remove it", shortName(name))
			}
		}
	}
	for _, path := range paths {
		want := golist[path]
		r, ok := rowOf[path]
		if !ok {
			report(doc.tableLine, "the import table has no row for %s; add the row\n\t%s", shortName(path), rowText(path, want))
			continue
		}
		extra := slices.DeleteFunc(slices.Clone(r.imports), func(p string) bool { return slices.Contains(want, p) })
		missing := slices.DeleteFunc(slices.Clone(want), func(p string) bool { return slices.Contains(r.imports, p) })
		if len(extra) == 0 && len(missing) == 0 {
			continue
		}
		var diff []string
		if len(extra) > 0 {
			diff = append(diff, "the row names "+shortNames(extra)+", which it does not import")
		}
		if len(missing) > 0 {
			diff = append(diff, "it imports "+shortNames(missing)+", which the row lacks")
		}
		report(r.line, "%s's imports differ from go list: %s; the row should read\n\t%s",
			shortName(path), strings.Join(diff, "; "), rowText(path, want))
	}

	// The layering, from go list's imports: a package imports only those
	// listed below it; a test helper may import anything, and only tests
	// import it.
	for _, path := range paths {
		from, ok := position[path]
		if !ok {
			continue // reported above
		}
		for _, imp := range golist[path] {
			to, ok := position[imp]
			switch {
			case !ok:
				continue // reported above
			case helper[imp] && !helper[path]:
				report(doc.packages[from].line, "%s imports %s, a test helper (\"tests:\"); only tests may import it", path, imp)
			case !helper[path] && to <= from:
				report(doc.packages[from].line, "%s imports %s, which is listed above it (line %d): imports point down the list; move %s below %s or drop the import",
					path, imp, doc.packages[to].line, imp, path)
			}
		}
	}
	return problems
}

// placement says where a package missing from the list may go: below the
// lowest listed package that imports it and above the highest it imports.
func placement(path string, doc archDoc, golist map[string][]string) string {
	var below, above string
	for _, p := range doc.packages {
		if p.helper {
			continue
		}
		if slices.Contains(golist[p.path], path) {
			below = p.path // keeps the lowest
		}
		if above == "" && slices.Contains(golist[path], p.path) {
			above = p.path // keeps the highest
		}
	}
	switch {
	case below != "" && above != "":
		return fmt.Sprintf("below %s (which imports it) and above %s (which it imports)", below, above)
	case below != "":
		return fmt.Sprintf("below %s (which imports it)", below)
	case above != "":
		return fmt.Sprintf("above %s (which it imports)", above)
	}
	return "anywhere: it imports no listed package and none imports it"
}

// TestArchitectureMatchesGoList checks docs/architecture.md's package list
// and import table against go list, and its layering rule against the
// imports, so that the document cannot fall behind the code again.
func TestArchitectureMatchesGoList(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseArchitecture(string(text))
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	for _, p := range checkArchitecture(doc, goListImports(t)) {
		t.Error(p)
	}
}

// TestCheckArchitecture runs the checks on small documents, one mistake
// each, so that a check that stops finding its mistake fails here.
func TestCheckArchitecture(t *testing.T) {
	golist := map[string][]string{
		"cmd/voda":           {"internal/api", "internal/model"},
		"internal/api":       {"internal/model"},
		"internal/model":     {},
		"internal/modeltest": {"internal/model"},
	}
	const voda = "cmd/voda            the binary\n"
	const list = "```\n" + voda +
		"internal/api        REST\n" +
		"                    more about internal/api\n" +
		"internal/model      types\n" +
		"  internal/modeltest tests: a helper\n" +
		"```\n"
	const table = "```\n" +
		"cmd/voda -> api,\n" +
		"            model (flags)\n" +
		"api -> model\n" +
		"modeltest -> model\n" +
		"model -> (none)\n" +
		"```\n"
	tests := []struct {
		name   string
		doc    string
		golist map[string][]string // nil for golist above
		want   []string            // substrings, one per expected problem, in order
	}{
		{name: "correct", doc: list + table},
		{
			name: "several names in one row",
			doc:  list + "```\ncmd/voda -> api, model\napi, modeltest -> model\nmodel -> (none)\n```\n",
		},
		{
			name: "package missing from the list",
			doc:  strings.Replace(list, "internal/api        REST\n", "", 1) + table,
			want: []string{"internal/api is missing from the package list; add a line for it below cmd/voda (which imports it) and above internal/model (which it imports)"},
		},
		{
			name: "package listed but gone",
			doc:  strings.Replace(list, "internal/model ", "internal/gone       x\ninternal/model ", 1) + table,
			want: []string{":5: internal/gone is listed but go list knows no such package"},
		},
		{
			name: "row missing",
			doc:  list + strings.Replace(table, "api -> model\n", "", 1),
			want: []string{"no row for api; add the row\n\tapi -> model"},
		},
		{
			name: "row for a package that is gone",
			doc:  list + strings.Replace(table, "model -> (none)\n", "model -> (none)\ngone -> model\n", 1),
			want: []string{"a row for gone, which go list does not know"},
		},
		{
			name: "row with an extra and a missing import",
			doc:  list + strings.Replace(table, "api -> model\n", "api -> modeltest\n", 1),
			want: []string{":11: api's imports differ from go list: the row names modeltest, which it does not import; it imports model, which the row lacks; the row should read\n\tapi -> model"},
		},
		{
			name: "row named twice",
			doc:  list + strings.Replace(table, "model -> (none)\n", "model -> (none)\napi -> model\n", 1),
			want: []string{":14: api has a second row here"},
		},
		{
			name: "import pointing up the list",
			doc: "```\n" +
				"internal/api        REST\n" +
				"internal/model      types\n" +
				"  internal/modeltest tests: a helper\n" +
				voda +
				"```\n" + table,
			want: []string{":5: cmd/voda imports internal/api, which is listed above it (line 2)", ":5: cmd/voda imports internal/model, which is listed above it (line 3)"},
		},
		{
			name: "production package importing a test helper",
			doc:  list + strings.Replace(table, "model (flags)", "model, modeltest", 1),
			golist: map[string][]string{
				"cmd/voda":           {"internal/api", "internal/model", "internal/modeltest"},
				"internal/api":       {"internal/model"},
				"internal/model":     {},
				"internal/modeltest": {"internal/model"},
			},
			want: []string{"cmd/voda imports internal/modeltest, a test helper"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.golist
			if g == nil {
				g = golist
			}
			doc, err := parseArchitecture(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			got := checkArchitecture(doc, g)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
