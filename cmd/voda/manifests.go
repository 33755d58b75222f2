package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// manifest is one job manifest and where it came from, for messages.
type manifest struct {
	source string
	body   []byte
}

// manifestExtensions are the files `voda create -f DIR` reads from a
// directory, as kubectl does.
var manifestExtensions = []string{".json", ".yaml", ".yml"}

// readManifests reads every file ("-" is standard input; a directory is
// its manifest files, expandDir) and splits each into its YAML documents.
// It goes past a file it cannot read or that holds no manifest, and
// returns every such failure, so that one run reports them all.
func readManifests(in io.Reader, files []string, recursive bool) ([]manifest, error) {
	stdin := 0
	for _, f := range files {
		if f == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return nil, errors.New("-f -: standard input can be read only once")
	}
	var paths []string
	var errs []error
	for _, file := range files {
		if file == "-" {
			paths = append(paths, file)
			continue
		}
		fi, err := os.Stat(file)
		if err != nil || !fi.IsDir() {
			paths = append(paths, file) // reading it reports the error
			continue
		}
		found, err := expandDir(file, recursive)
		if err != nil {
			errs = append(errs, err)
		}
		paths = append(paths, found...)
	}
	var all []manifest
	for _, path := range paths {
		ms, err := readManifest(in, path)
		if err != nil {
			errs = append(errs, err)
		}
		all = append(all, ms...)
	}
	switch len(errs) {
	case 0:
		return all, nil
	case 1:
		return nil, errs[0]
	}
	return nil, fmt.Errorf("%d files cannot be used; no job was created:\n%w", len(errs), errors.Join(errs...))
}

// expandDir lists the manifest files of a directory (manifestExtensions)
// in lexical order: the files directly in it, and with recursive those of
// its subdirectories too, depth first, as `kubectl apply -f DIR [-R]`
// does. Links to directories inside it are not followed. A directory
// without any manifest file is an error.
func expandDir(dir string, recursive bool) ([]string, error) {
	var files []string
	skipped := false
	var walk func(string) error
	walk = func(d string) error {
		entries, err := os.ReadDir(d) // sorted by name
		if err != nil {
			return fmt.Errorf("read directory %s: %w", d, err)
		}
		for _, e := range entries {
			path := filepath.Join(d, e.Name())
			switch {
			case e.IsDir() && recursive:
				if err := walk(path); err != nil {
					return err
				}
			case e.IsDir():
				skipped = true
			case slices.Contains(manifestExtensions, filepath.Ext(path)):
				files = append(files, path)
			}
		}
		return nil
	}
	if err := walk(dir); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		hint := ""
		if skipped {
			hint = " (-R reads its subdirectories too)"
		}
		return nil, fmt.Errorf("%s: no %s file in it%s", dir, orList(manifestExtensions), hint)
	}
	return files, nil
}

// readManifest reads one file ("-" is in) and splits it into its YAML
// documents.
func readManifest(in io.Reader, file string) ([]manifest, error) {
	var b []byte
	var err error
	source := file
	if file == "-" {
		source = "stdin"
		b, err = io.ReadAll(in)
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	docs := splitDocuments(b)
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no job manifest in it", source)
	}
	all := make([]manifest, 0, len(docs))
	for i, d := range docs {
		s := source
		if len(docs) > 1 {
			s = fmt.Sprintf("%s (document %d)", source, i+1)
		}
		all = append(all, manifest{source: s, body: d})
	}
	return all, nil
}

// docSeparator is a YAML document start marker on a line of its own.
var docSeparator = regexp.MustCompile(`^---[ \t]*(#.*)?$`)

// splitDocuments splits a YAML stream at its '---' lines and drops the
// documents with nothing but comments. A JSON manifest is one document.
func splitDocuments(b []byte) [][]byte {
	if json.Valid(b) {
		return [][]byte{b}
	}
	var docs [][]byte
	var cur []string
	flush := func() {
		doc := strings.Join(cur, "\n")
		cur = nil
		for _, l := range strings.Split(doc, "\n") {
			t := strings.TrimSpace(l)
			if t != "" && !strings.HasPrefix(t, "#") && t != "..." {
				docs = append(docs, []byte(doc+"\n"))
				return
			}
		}
	}
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if docSeparator.MatchString(strings.TrimRight(l, "\r")) {
			flush()
			continue
		}
		cur = append(cur, l)
	}
	flush()
	return docs
}
