package jobspec

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goyaml "go.yaml.in/yaml/v3"
)

// aliasBomb is baseMPIJob whose worker container gets args: one anchored
// scalar of size bytes followed by uses aliases to it. With 100 KB and
// 1,000 it is a 102 KB body that expands to about 100 MB.
func aliasBomb(size, uses int) string {
	var b strings.Builder
	b.WriteString(baseMPIJob)
	b.WriteString("            args: [&a ")
	b.WriteString(strings.Repeat("x", size))
	b.WriteString(strings.Repeat(", *a", uses))
	b.WriteString("]\n")
	return b.String()
}

// billionLaughs is baseMPIJob with the classic nested aliases: anchor l0
// is the string "lol" (a worker env value), and each of levels anchors
// l1, l2, ... in the worker container's args a list of ten aliases to the
// one before. Nine levels stand for 10^9 strings in under 1 KB.
func billionLaughs(levels int) string {
	var b strings.Builder
	b.WriteString(edit(baseMPIJob, "          - name: worker\n", "          - name: worker\n            env:\n"+
		"            - name: LOL\n              value: &l0 lol\n"))
	b.WriteString("            args:\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "            - &l%d [%s]\n", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	return b.String()
}

// withAliases is baseMPIJob with the ordinary uses of aliases: a shared
// image, a merge key, a nodeSelector value repeated.
var withAliases = edit(edit(edit(baseMPIJob,
	"          - name: launcher\n            image: horovod/horovod:0.28.1\n",
	"          - name: launcher\n            image: &image horovod/horovod:0.28.1\n            resources: &res {limits: {cpu: \"2\"}}\n"),
	mpiWorkerContainer,
	"          - name: worker\n            image: *image\n            resources:\n              <<: *res\n              requests: {cpu: \"1\"}\n"),
	"            vodascheduler/accelerator: nvidia-tesla-v100\n",
	"            vodascheduler/accelerator: &gpu nvidia-tesla-v100\n            other: *gpu\n")

// aliasSeeds are fuzzing seeds with aliases, accepted and not.
var aliasSeeds = []string{
	withAliases,
	aliasBomb(1000, 10),
	billionLaughs(2),
	billionLaughs(12),
	baseMPIJob + "            args: &a [x, *a]\n",
	"a: &a {b: &b [1, 2]}\nc: *a\nd: *b\n<<: *a\n",
	"--- &a\n--- *a\n",
}

// BenchmarkParseAliasBomb parses the 102 KB body that expands to 100 MB.
// Before the expansion was measured, Parse accepted it after about 2.3 s
// and 700 MB of allocations; now it rejects it in a few ms and under 1 MB.
func BenchmarkParseAliasBomb(b *testing.B) {
	data := []byte(aliasBomb(100<<10, 1000))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, Options{}); err == nil {
			b.Fatal("accepted the alias bomb")
		}
	}
}

// TestParseAliasExpansion checks that the body limit bounds the manifest
// with its aliases expanded, and the JSON it is stored as, not just the
// bytes received. Parse used to accept the 1,000 x 100 KB case, expanding
// it (see BenchmarkParseAliasBomb), and the JSON ones; goyaml.v2 caught
// the nested case only by its heuristic on the ratio of aliases to nodes,
// which few aliases of large values pass.
func TestParseAliasExpansion(t *testing.T) {
	cases := map[string]struct {
		input  string
		opts   Options
		field  string
		reason string
	}{
		"100 KB value used 1,000 times": {
			input: aliasBomb(100<<10, 1000), field: "body",
			reason: "through YAML aliases (*a); at most 1048576 are accepted",
		},
		"billion laughs, 9 levels": {
			input: billionLaughs(9), field: "body",
			reason: "bytes through YAML aliases (*l5); at most 1048576 are accepted",
		},
		"100 levels (sizes would overflow)": {
			input: billionLaughs(100), field: "body", reason: "through YAML aliases",
		},
		"aliases over a small MaxBytes": {
			input: aliasBomb(1000, 10), opts: Options{MaxBytes: 8000}, field: "body",
			reason: "expands to at least 8",
		},
		"alias inside its own anchor": {
			input: baseMPIJob + "            args: &a [x, *a]\n", field: "body",
			reason: "alias *a is inside the value of its own anchor &a",
		},
		"alias inside its own anchor as a key": {
			input: baseMPIJob + "            extra: &a {*a : x}\n", field: "body",
			reason: "alias *a is inside the value of its own anchor &a",
		},
		"unknown anchor": {
			input: baseMPIJob + "            args: [*a]\n", field: "body", reason: "unknown anchor 'a' referenced",
		},
		"alias bomb in a second document": {
			input: baseMPIJob + "---\n" + aliasBomb(100<<10, 1000), field: "body", reason: "more than one YAML document",
		},
		// JSON writes "\0" (2 bytes of YAML) as \u0000 (6 bytes).
		"JSON over MaxBytes through control characters": {
			input: baseMPIJob + `            args: ["` + strings.Repeat(`\0`, 200_000) + "\"]\n", field: "body",
			reason: "bytes as JSON, which is how the job is stored; at most 1048576 are accepted",
		},
		"JSON over MaxBytes through <": {
			input: baseMPIJob + "            args: [" + strings.Repeat("<", 200_000) + "]\n", field: "body",
			reason: "bytes as JSON",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkFieldError(t, []byte(tc.input), tc.opts, tc.field, tc.reason)
		})
	}
}

// TestParseAliasesAccepted checks that ordinary aliases, merge keys and
// an expansion within the limit still parse, expanded.
func TestParseAliasesAccepted(t *testing.T) {
	for name, input := range map[string]string{
		"anchors, aliases and a merge key": withAliases,
		"1 KB used 500 times":              aliasBomb(1<<10, 500),
	} {
		t.Run(name, func(t *testing.T) {
			spec, err := Parse([]byte(input), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if spec.JobSpec.GPUType != "nvidia-tesla-v100" || spec.JobSpec.MaxWorkers != 4 {
				t.Errorf("spec %+v", spec.JobSpec)
			}
			worker, _ := dig(spec.Manifest, "spec", "mpiReplicaSpecs", "Worker", "template", "spec")
			c := worker.(map[string]any)["containers"].([]any)[0].(map[string]any)
			if c["image"] != "horovod/horovod:0.28.1" {
				t.Errorf("worker image %v, want the anchor's value", c["image"])
			}
			if args, ok := c["args"].([]any); ok && len(args) != 501 {
				t.Errorf("%d args, want 501", len(args))
			}
			if name == "anchors, aliases and a merge key" {
				res := c["resources"].(map[string]any)
				if !cmp.Equal(res["limits"], map[string]any{"cpu": "2"}) || !cmp.Equal(res["requests"], map[string]any{"cpu": "1"}) {
					t.Errorf("worker resources %v, want the merged limits and its own requests", res)
				}
			}
		})
	}
}

// TestExpansionLinear checks that nested aliases are measured without
// being followed: billionLaughs(15) stands for 10^15 strings, which the
// walk must measure exactly, and at once, under a limit that lets them
// through.
func TestExpansionLinear(t *testing.T) {
	measure := func(levels int) int {
		doc, ferr := onlyDocument([]byte(billionLaughs(levels)))
		if ferr != nil {
			t.Fatal(ferr)
		}
		e := expansion{limit: math.MaxInt, sizes: map[*goyaml.Node]int{}}
		done := make(chan *FieldError, 1)
		go func() { done <- e.walk(doc) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the walk of %d nested alias levels did not finish in 10s", levels)
		}
		return e.total
	}
	// Level i is a list node (1) of ten copies of level i-1; level 0 is
	// "lol" (3 + 1).
	level := 4
	for range 15 {
		level = 1 + 10*level
	}
	if got := measure(15) - measure(14); got != level {
		t.Errorf("level 15 measures %d, want %d", got, level)
	}
}

// TestRecoverParser checks that a panic of the YAML parser becomes an
// error, which onlyDocument reports as a syntax error.
func TestRecoverParser(t *testing.T) {
	err := recoverParser(func() error { panic("internal error: attempted to parse unknown event (please report): none") })
	if err == nil || !strings.Contains(err.Error(), "please report") {
		t.Errorf("recoverParser = %v, want the panic as an error", err)
	}
	if err := recoverParser(func() error { return nil }); err != nil {
		t.Errorf("recoverParser without a panic = %v", err)
	}
}
