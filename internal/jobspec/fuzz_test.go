package jobspec

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	goyaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
	goyaml2 "sigs.k8s.io/yaml/goyaml.v2"
)

// fuzzMinimizeTime replaces go test's default of 60s for
// -fuzzminimizetime: the fuzzer minimizes every new interesting input for
// up to that long, and a few KB manifest at a few parses per execution
// takes most of it, so that a one-minute run spends all its time
// minimizing. An explicit -fuzzminimizetime wins.
const fuzzMinimizeTime = "5s"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.fuzzminimizetime" })
	if !set {
		if err := flag.Set("test.fuzzminimizetime", fuzzMinimizeTime); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// FuzzParse checks that Parse never panics, that every error is a
// *FieldError, and that every accepted spec is valid and survives
// Rename, JSON and Parse again.
//
// Most mutated inputs are rejected after one Parse; the extra parses run
// for accepted ones only, which keeps executions cheap.
func FuzzParse(f *testing.F) {
	for _, path := range exampleFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{baseMPIJob, baseMPIJobV1Short, basePyTorchJob, annotationsOnly} {
		f.Add([]byte(s))
	}
	// Unknown fields, which Parse warns of.
	f.Add([]byte(edit(baseMPIJob, "slotsPerWorker: 1", "slotsPerWorkr: 1")))
	f.Add([]byte(edit(baseMPIJob, mpiWorkerContainer, mpiWorkerContainer+"            imagePullPolicyy: Always\n")))
	f.Add([]byte(edit(basePyTorchJob, "    minReplicas: 1\n", "    minReplicas: 1\n    maxRestart: 3\n")))
	for _, s := range aliasSeeds {
		f.Add([]byte(s))
	}
	for _, tc := range badInputs {
		if len(tc.input) <= 64<<10 {
			f.Add([]byte(tc.input))
		}
	}
	for _, tc := range hostileInputs {
		f.Add([]byte(tc.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec := checkParse(t, data, Options{})
		if spec == nil {
			return
		}
		// A cluster with a list of GPU types and models accepts the same
		// spec, or rejects it for its GPU type or model only.
		if other := checkParse(t, data, badInputOptions); other != nil {
			if diff := cmp.Diff(spec, other, ignoreManifest); diff != "" {
				t.Fatalf("Options changed the spec (-without,+with):\n%s", diff)
			}
			return
		}
		_, err := Parse(data, badInputOptions)
		if r := err.(*FieldError).Reason; !strings.HasPrefix(r, "unknown GPU type") && !strings.HasPrefix(r, "unknown performance model") {
			t.Fatalf("accepted without GPU types and models, rejected with them: %v", err)
		}
	})
}

// checkParse parses data and checks the result's invariants; it returns
// the spec, or nil if Parse rejected data.
func checkParse(t *testing.T, data []byte, opts Options) *Spec {
	t.Helper()
	spec, err := Parse(data, opts)
	if err != nil {
		fe, ok := err.(*FieldError)
		if !ok {
			t.Fatalf("error %v is %T, not *FieldError", err, err)
		}
		if fe.Field == "" || fe.Reason == "" {
			t.Fatalf("incomplete FieldError %+v", fe)
		}
		checkWarnings(t, fe.Warnings)
		return nil
	}
	if spec == nil {
		t.Fatal("nil spec and nil error")
	}
	checkWarnings(t, spec.Warnings)
	if err := spec.JobSpec.Validate(); err != nil {
		t.Fatalf("accepted spec fails Validate: %v (%+v)", err, spec.JobSpec)
	}
	if spec.Name != spec.JobSpec.Name || spec.Namespace == "" || spec.JobSpec.GPUType == "" || !spec.JobSpec.SubmitTime.IsZero() {
		t.Fatalf("inconsistent spec %+v", spec)
	}
	if opts.GPUTypes != nil {
		// The caller checks the rest against the spec without options.
		return spec
	}
	if got := WorkerGPUContainer(spec.Kind, spec.Manifest); got != spec.WorkerGPUContainer {
		t.Fatalf("WorkerGPUContainer(Manifest) = %d, Spec.WorkerGPUContainer = %d", got, spec.WorkerGPUContainer)
	}
	// JSON, then Parse again: the same spec.
	out, err := spec.JSON()
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if max := opts.withDefaults().MaxBytes; len(out) > max {
		t.Fatalf("JSON of an accepted spec is %d bytes, over MaxBytes %d", len(out), max)
	}
	again, err := Parse(out, Options{MaxBytes: 1 << 30})
	if err != nil {
		t.Fatalf("Parse(JSON()) of an accepted spec: %v\ninput: %q\nJSON: %s", err, data, out)
	}
	if diff := cmp.Diff(spec, again, ignoreManifest); diff != "" {
		t.Fatalf("Parse(JSON()) (-first,+second):\n%s", diff)
	}
	// Rename, JSON, Parse: the same spec under the new name.
	unique := spec.Name + "-20240102-030405"
	again.Rename(unique)
	if out, err = again.JSON(); err != nil {
		t.Fatalf("JSON after Rename: %v", err)
	}
	renamed, err := Parse(out, Options{MaxBytes: 1 << 30, MaxNameLength: 63})
	if err != nil {
		t.Fatalf("Parse after Rename: %v\nJSON: %s", err, out)
	}
	want := spec.JobSpec
	want.Name = unique
	if diff := cmp.Diff(want, renamed.JobSpec); diff != "" {
		t.Fatalf("JobSpec after Rename (-want,+got):\n%s", diff)
	}
	return spec
}

// checkWarnings checks the bounds of a manifest's warnings: at most
// maxUnknownFields and a count, each a quoted path of at most
// maxWarningPath runes (an escaped rune takes at most 10 bytes: \U0001f600).
func checkWarnings(t *testing.T, warnings []string) {
	t.Helper()
	if len(warnings) > maxUnknownFields+1 {
		t.Fatalf("%d warnings, want at most %d", len(warnings), maxUnknownFields+1)
	}
	for i, w := range warnings {
		if i == maxUnknownFields {
			if !strings.HasSuffix(w, "more unknown fields not listed") && w != "1 more unknown field not listed" {
				t.Fatalf("last warning %q does not count the rest", w)
			}
			continue
		}
		if !strings.HasPrefix(w, `unknown field "`) || len(w) > len(`unknown field ""...`)+10*maxWarningPath {
			t.Fatalf("warning %q is not a bounded unknown field", w)
		}
	}
}

// fuzzMaxBytes is the body limit FuzzDecodeBody parses with: small, so
// that the fuzzer's small inputs reach the limits.
const fuzzMaxBytes = 4096

// FuzzDecodeBody checks the body decoder on its own, under a small limit:
// it never panics; what it accepts encodes within the limit; the alias
// measure bounds the JSON the document converts to, which is what makes
// the check before conversion sound; and the YAML parser that counts the
// documents agrees with the one that converts them (goyaml.v2, inside
// sigs.k8s.io/yaml), so that no document is silently dropped.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range append([]string{baseMPIJob, basePyTorchJob, "---\n" + annotationsOnly + "...\n"}, aliasSeeds...) {
		f.Add([]byte(s))
	}
	for _, tc := range badInputs {
		if len(tc.input) <= 8<<10 {
			f.Add([]byte(tc.input))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, ferr := decodeBody(data, fuzzMaxBytes)
		if ferr != nil {
			if ferr.Field != fieldBody || ferr.Reason == "" {
				t.Fatalf("odd error %+v", ferr)
			}
		} else if out, err := json.Marshal(obj); err != nil || len(out) > fuzzMaxBytes {
			t.Fatalf("accepted a body that encodes to %d bytes (%v)", len(out), err)
		}
		checkMeasure(t, data)
		if ferr == nil {
			checkDocumentsAgree(t, data)
		}
	})
}

// checkMeasure converts a document whose aliases expand it to at most
// a few times fuzzMaxBytes and checks that the JSON is within a constant
// factor of the measure: at most 6 bytes per byte of a scalar (JSON's
// escapes), a few per node.
func checkMeasure(t *testing.T, data []byte) {
	doc, ferr := onlyDocument(data)
	if ferr != nil {
		return
	}
	e := expansion{limit: 4 * fuzzMaxBytes, sizes: map[*goyaml.Node]int{}}
	if e.walk(doc) != nil {
		return
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return
	}
	if len(j) > 6*e.total+16 {
		t.Fatalf("measured %d, converts to %d bytes of JSON:\n%s", e.total, len(j), j)
	}
}

// checkDocumentsAgree checks that goyaml.v2 sees no second document that
// is not empty in a body decodeBody accepted.
func checkDocumentsAgree(t *testing.T, data []byte) {
	dec := goyaml2.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var p presence
		err := dec.Decode(&p)
		if err != nil {
			return
		}
		if p.set && i > 0 {
			t.Fatalf("goyaml.v2 sees document %d, not empty, in a body accepted as one document", i+1)
		}
	}
}

// presence records whether goyaml.v2 decoded a document that is not
// empty, without decoding (and expanding) it.
type presence struct{ set bool }

func (p *presence) UnmarshalYAML(func(any) error) error {
	p.set = true
	return nil
}
