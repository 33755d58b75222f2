package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// `voda create -f DIR` takes the directory's .json, .yaml and .yml files
// in name order, as `kubectl apply -f DIR` does, and with -R those of its
// subdirectories too, depth first.
func TestCreateDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	job := func(name string) string { return "kind: MPIJob\nmetadata:\n  name: " + name + "\n" }
	writeTestFile(t, dir, "b.yaml", job("b"))
	writeTestFile(t, dir, "a.json", `{"kind": "PyTorchJob", "metadata": {"name": "a"}}`)
	writeTestFile(t, dir, "c.yml", "# two\n"+job("c1")+"---\n"+job("c2"))
	writeTestFile(t, dir, "notes.txt", "not a manifest")
	writeTestFile(t, dir, "README.md", "# not a manifest")
	if err := os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "sub"), "d.yaml", job("d"))
	writeTestFile(t, filepath.Join(dir, "sub", "deeper"), "e.yaml", job("e"))
	writeTestFile(t, dir, "z.yaml", job("z"))
	empty := t.TempDir()
	writeTestFile(t, empty, "notes.txt", "nothing")
	onlySub := t.TempDir()
	if err := os.Mkdir(filepath.Join(onlySub, "jobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(onlySub, "jobs"), "j.yaml", job("j"))

	created := func(names ...string) string {
		var b strings.Builder
		for _, n := range names {
			b.WriteString("Training job created: " + n + "-20250601-101000\n")
		}
		return b.String()
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a directory", []string{"-f", dir}, created("a", "b", "c1", "c2", "z")},
		{"recursive", []string{"-f", dir, "-R"}, created("a", "b", "c1", "c2", "d", "e", "z")},
		{"a directory and a file", []string{"-f", filepath.Join(dir, "sub"), "-f", filepath.Join(dir, "z.yaml")}, created("d", "z")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, nil, nil)
			got := mustVoda(t, append([]string{"create", "--server", f.URL}, c.args...)...)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("stdout (-want,+got):\n%s", diff)
			}
		})
	}

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		f := newFakeAPI(t, nil, nil)
		wantError(t, []string{"create", "--server", f.URL, "-f", empty}, empty+": no .json, .yaml or .yml file in it")
		wantError(t, []string{"create", "--server", f.URL, "-f", onlySub}, onlySub+": no .json, .yaml or .yml file in it (-R reads its subdirectories too)")
		// Every file that cannot be used is reported, and nothing is sent.
		wantError(t, []string{"create", "--server", f.URL, "-f", empty, "-f", dir, "-f", filepath.Join(dir, "missing.yaml")},
			"2 files cannot be used; no job was created:\n"+empty+": no .json, .yaml or .yml file in it\nread manifest: open "+filepath.Join(dir, "missing.yaml"))
		if n := len(f.Requests()); n != 0 {
			t.Errorf("%d requests, want none", n)
		}
		// An invalid manifest in a directory: every one is validated and
		// reported, and none is created, as for files.
		bad := t.TempDir()
		writeTestFile(t, bad, "1.yaml", job("one"))
		writeTestFile(t, bad, "2.yaml", "kind: MPIJob\nmetadata: {}\n")
		writeTestFile(t, bad, "3.yaml", "kind: Deployment\nmetadata: {name: x}\n")
		writeTestFile(t, bad, "4.yaml", job("four"))
		wantError(t, []string{"create", "--server", f.URL, "-f", bad},
			"2 of 4 manifests are invalid; no job was created:\n"+filepath.Join(bad, "2.yaml")+": a job needs a name (field metadata.name)\n"+
				filepath.Join(bad, "3.yaml")+`: kind "Deployment" is not MPIJob or PyTorchJob (field kind)`)
		if n := len(f.Creates()); n != 0 {
			t.Errorf("%d jobs created, want none", n)
		}
	})
}

// The server's warnings are printed on standard error as kubectl prints
// them: once, as each job is created; when nothing is created, those of
// the dry runs, after their manifest's source.
func TestCreateWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	typo := writeTestFile(t, dir, "typo.yaml", "kind: MPIJob\nmetadata:\n  name: typo\nspc: {}\nstatuss: {}\n")
	good := writeTestFile(t, dir, "good.yaml", "kind: MPIJob\nmetadata:\n  name: good\n")
	bad := writeTestFile(t, dir, "bad.yaml", "kind: MPIJob\nmetadata: {}\nspc: {}\n")

	f := newFakeAPI(t, nil, nil)
	stdout, stderr, err := runVoda(t, "", "create", "-f", typo, "-f", good, "--server", f.URL)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Training job created: typo-20250601-101000\nTraining job created: good-20250601-101000\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	if want := "Warning: unknown field \"spc\"\nWarning: unknown field \"statuss\"\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}

	stdout, stderr, err = runVoda(t, "", "create", "-f", typo, "-f", bad, "--server", f.URL)
	if err == nil || stdout != "" {
		t.Fatalf("an invalid manifest: stdout %q, error %v", stdout, err)
	}
	want := "Warning: " + typo + ": unknown field \"spc\"\nWarning: " + typo + ": unknown field \"statuss\"\nWarning: " + bad + ": unknown field \"spc\"\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}
