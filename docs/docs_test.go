package docs

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, seen from this package's directory.
const root = ".."

// markdownFiles are the documents whose links are checked: the README,
// every page under docs/, and the other READMEs a user lands on (the
// chart's, the Python library's).
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "deploy/helm/*/README.md", "sdk/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, filepath.ToSlash(rel))
		}
	}
	return files
}

// prose returns a Markdown file's lines, with those of fenced code blocks
// blanked (line numbers stay).
func prose(text string) []string {
	var out []string
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			out = append(out, "")
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			out = append(out, "")
			continue
		}
		out = append(out, line)
	}
	return out
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	// link matches an inline link or image, [text](target "title"); the
	// text may hold one level of brackets (an image in a link).
	link    = regexp.MustCompile(`\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	heading = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlID  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// anchors returns the anchors GitHub makes for a Markdown file: one per
// heading (lower case, punctuation other than '-' and '_' dropped, spaces
// to '-', "-1", "-2"... for repeats) and each <a id> or <a name>.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(text) {
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := slugify(strings.ReplaceAll(m[2], "`", ""))
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func slugify(title string) string {
	// Links in headings count by their text.
	title = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(title, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func TestSlugify(t *testing.T) {
	for title, want := range map[string]string{
		"The kubectl plugin":                     "the-kubectl-plugin",
		"6. The CLI as a kubectl plugin":         "6-the-cli-as-a-kubectl-plugin",
		"Measured profiles (`--profiles DIR`)":   "measured-profiles---profiles-dir",
		"When decisions are applied: the limit":  "when-decisions-are-applied-the-limit",
		"Getting the Pollux data":                "getting-the-pollux-data",
		"The dashboard's live stream (issue 17)": "the-dashboards-live-stream-issue-17",
	} {
		if got := slugify(strings.ReplaceAll(title, "`", "")); got != want {
			t.Errorf("slugify(%q) = %q, want %q", title, got, want)
		}
	}
}

// TestRelativeLinks checks every relative link of the README and the
// docs: the file or directory it names exists, and the anchor it names is
// a heading (or an <a id>) of the Markdown file it points into.
func TestRelativeLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := cache[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return nil, err
		}
		cache[path] = anchors(string(b))
		return cache[path], nil
	}
	checked := 0
	for _, file := range markdownFiles(t) {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range prose(string(b)) {
			// Links shown as code are not links.
			line = codeSpan.ReplaceAllString(line, "``")
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				u, err := url.Parse(target)
				if err != nil {
					t.Errorf("%s:%d: link %q does not parse: %v", file, n+1, target, err)
					continue
				}
				if u.Scheme != "" || u.Host != "" {
					continue // absolute: not checked here, no network
				}
				checked++
				path := file
				if u.Path != "" {
					path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), u.Path)))
					if _, err := os.Stat(filepath.Join(root, path)); err != nil {
						t.Errorf("%s:%d: link %q: %s does not exist", file, n+1, target, path)
						continue
					}
				}
				if u.Fragment == "" {
					continue
				}
				if !strings.HasSuffix(path, ".md") {
					t.Errorf("%s:%d: link %q: an anchor in a file that is not Markdown", file, n+1, target)
					continue
				}
				a, err := anchorsOf(path)
				if err != nil {
					t.Errorf("%s:%d: link %q: %v", file, n+1, target, err)
					continue
				}
				if !a[u.Fragment] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", file, n+1, target, path, u.Fragment)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links found: is the link pattern broken?", checked)
	}
}

// layoutBlock returns the README's "## Layout" code block.
func layoutBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	_, block, ok := strings.Cut(after, "```\n")
	if !ok {
		t.Fatal("README.md's Layout section has no code block")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatal("README.md's Layout code block is not closed")
	}
	return block
}

// layoutPaths are the paths the layout block names: the first column of
// each line, which may list several separated by ", ".
func layoutPaths(block string) []string {
	var out []string
	for _, line := range strings.Split(block, "\n") {
		if line == "" || line[0] == ' ' {
			continue // a continuation of the previous line's description
		}
		for _, f := range strings.Fields(line) {
			p, more := strings.CutSuffix(f, ",")
			out = append(out, strings.TrimSuffix(p, "/"))
			if !more {
				break
			}
		}
	}
	return out
}

// TestReadmeLayoutNamesEveryDirectory checks that the README's layout names
// every top-level directory and every Go package under internal/, and
// names nothing that does not exist, so that it cannot fall behind the
// tree again.
func TestReadmeLayoutNamesEveryDirectory(t *testing.T) {
	paths := layoutPaths(layoutBlock(t))
	if len(paths) == 0 {
		t.Fatal("no paths found in the README's layout")
	}
	for _, p := range paths {
		if st, err := os.Stat(filepath.Join(root, p)); err != nil || !st.IsDir() {
			t.Errorf("the README's layout names %s, which is not a directory", p)
		}
	}
	named := func(dir string) bool {
		return slices.ContainsFunc(paths, func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") })
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		// Hidden directories (.git, .ci, .cache) and build outputs (bin,
		// voda-data) are not the source layout.
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "bin" || e.Name() == "voda-data" {
			continue
		}
		if !named(e.Name()) {
			t.Errorf("the README's layout does not name the top-level directory %s/", e.Name())
		}
	}
	var packages []string
	err = filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		if strings.HasSuffix(d.Name(), ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); !slices.Contains(packages, rel) {
				packages = append(packages, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(packages) < 20 {
		t.Fatalf("only %d packages found under internal/", len(packages))
	}
	for _, p := range packages {
		if !slices.Contains(paths, p) {
			t.Errorf("the README's layout does not name the package %s", p)
		}
	}
}
