package client

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/progress"
)

// The tests below keep docs/openapi.yaml in step with internal/api's
// wire types and routes, so that the document cannot drift silently.

const (
	openAPIPath = "../../../docs/openapi.yaml"
	typesPath   = "../types.go"
)

func loadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(openAPIPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("parse %s: %v", openAPIPath, err)
	}
	return doc
}

// lookup walks doc along keys, failing the test when a key is missing.
func lookup(t *testing.T, doc any, keys ...string) any {
	t.Helper()
	cur := doc
	for i, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("openapi.yaml: %s is not a mapping", strings.Join(keys[:i], "."))
		}
		if cur, ok = m[k]; !ok {
			t.Fatalf("openapi.yaml: no %s", strings.Join(keys[:i+1], "."))
		}
	}
	return cur
}

// routeConstants reads the Route* constants of types.go, so a route added
// there must be documented without this test being edited.
func routeConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), typesPath, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Route") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s is not a string literal", name.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				routes[name.Name] = v
			}
		}
	}
	if len(routes) < 10 {
		t.Fatalf("found only %d Route constants in %s: %v", len(routes), typesPath, routes)
	}
	return routes
}

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	if v := lookup(t, doc, "openapi"); v != "3.0.3" {
		t.Errorf("openapi = %v, want 3.0.3", v)
	}
	paths := lookup(t, doc, "paths").(map[string]any)
	routes := routeConstants(t)
	documented := map[string]bool{}
	for name, route := range routes {
		documented[route] = true
		if _, ok := paths[route]; !ok {
			t.Errorf("route %s = %q is not under paths", name, route)
		}
	}
	for p := range paths {
		if !documented[p] {
			t.Errorf("path %q has no Route constant in types.go", p)
		}
	}

	// The methods each route serves.
	methods := map[string][]string{
		api.RouteJobs:        {"get", "post"},
		api.RouteJob:         {"delete", "get"},
		api.RouteJobPriority: {"put"},
		api.RouteSchedulers:  {"get"},
		api.RouteScheduler:   {"get"},
		api.RouteAlgorithm:   {"put"},
		api.RouteRateLimit:   {"put"},
		api.RouteAlgorithms:  {"get"},
		api.RouteNodes:       {"get"},
		api.RouteEvents:      {"get"},
		api.RouteOpenAPI:     {"get"},
		api.RouteLegacyJobs:  {"delete", "get", "post"},
		api.RouteLegacyAlgo:  {"put"},
		api.RouteLegacyLimit: {"put"},
		api.RouteMetrics:     {"get"},
		api.RouteHealthz:     {"get"},
		api.RouteReadyz:      {"get"},
	}
	for route, want := range methods {
		item, _ := paths[route].(map[string]any)
		var got []string
		for k := range item {
			if k != "parameters" {
				got = append(got, k)
			}
		}
		sort.Strings(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("methods of %s (-want,+got):\n%s", route, diff)
		}
		// Path parameters are declared.
		if strings.Contains(route, "{") {
			raw, _ := json.Marshal(item)
			for _, p := range []string{"{name}", "{gpuType}"} {
				if strings.Contains(route, p) && !bytes.Contains(raw, []byte(`"$ref":"#/components/parameters/`)) {
					t.Errorf("%s does not declare its path parameter %s", route, p)
				}
			}
		}
	}
}

// wireTypes maps each schema of the document to the Go type it describes.
var wireTypes = map[string]reflect.Type{
	"Job":                reflect.TypeFor[api.Job](),
	"JobList":            reflect.TypeFor[api.JobList](),
	"ListMeta":           reflect.TypeFor[api.ListMeta](),
	"Scheduler":          reflect.TypeFor[api.Scheduler](),
	"SchedulerList":      reflect.TypeFor[api.SchedulerList](),
	"Algorithm":          reflect.TypeFor[api.Algorithm](),
	"AlgorithmList":      reflect.TypeFor[api.AlgorithmList](),
	"NodeList":           reflect.TypeFor[api.NodeList](),
	"GPUTypeNodes":       reflect.TypeFor[api.GPUTypeNodes](),
	"Node":               reflect.TypeFor[api.Node](),
	"NodeJob":            reflect.TypeFor[api.NodeJob](),
	"JobEvent":           reflect.TypeFor[api.JobEvent](),
	"Snapshot":           reflect.TypeFor[api.Snapshot](),
	"Error":              reflect.TypeFor[api.Error](),
	"ErrorDetail":        reflect.TypeFor[api.ErrorDetail](),
	"PriorityRequest":    reflect.TypeFor[api.PriorityRequest](),
	"AlgorithmRequest":   reflect.TypeFor[api.AlgorithmRequest](),
	"RateLimitRequest":   reflect.TypeFor[api.RateLimitRequest](),
	"QuotaRequest":       reflect.TypeFor[api.QuotaRequest](),
	"Team":               reflect.TypeFor[api.Team](),
	"TeamQuota":          reflect.TypeFor[api.TeamQuota](),
	"TeamList":           reflect.TypeFor[api.TeamList](),
	"ProgressReport":     reflect.TypeFor[progress.Wire](),
	"ProgressReply":      reflect.TypeFor[progress.Reply](),
	"ProgressAllocation": reflect.TypeFor[progress.ReplyWorkers](),
	"ProgressBatch":      reflect.TypeFor[progress.ReplyBatch](),
	"Measured":           reflect.TypeFor[api.Measured](),
	"Throughput":         reflect.TypeFor[api.Throughput](),
}

// jsonField is a struct field as encoding/json sees it.
type jsonField struct {
	name string
	// omitempty: tagged omitempty or omitzero, so not required.
	omitempty bool
	typ       reflect.Type
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		out = append(out, jsonField{name: name, omitempty: omit, typ: f.Type})
	}
	return out
}

// openAPIType is the schema type a Go type encodes to.
func openAPIType(t reflect.Type) (typ, format string) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[time.Time]() {
		return "string", "date-time"
	}
	switch t.Kind() {
	case reflect.String:
		return "string", ""
	case reflect.Bool:
		return "boolean", ""
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "integer", ""
	case reflect.Float32, reflect.Float64:
		return "number", ""
	case reflect.Map:
		return "object", ""
	case reflect.Slice:
		return "array", ""
	case reflect.Struct:
		return "$ref", ""
	}
	return t.Kind().String(), ""
}

func TestOpenAPISchemasMatchWireTypes(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	for name, typ := range wireTypes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			schema := lookup(t, doc, "components", "schemas", name).(map[string]any)
			props, _ := schema["properties"].(map[string]any)
			var wantProps, wantRequired []string
			for _, f := range jsonFields(typ) {
				wantProps = append(wantProps, f.name)
				if !f.omitempty {
					wantRequired = append(wantRequired, f.name)
				}
				p, ok := props[f.name].(map[string]any)
				if !ok {
					continue // reported by the property diff below
				}
				wantType, wantFormat := openAPIType(f.typ)
				if wantType == "$ref" {
					if _, ok := p["$ref"]; !ok {
						t.Errorf("property %s: want a $ref to the schema of %s", f.name, f.typ)
					}
					continue
				}
				if ref, ok := p["$ref"].(string); ok {
					// A named schema, such as JobStatus, for a string.
					target := lookup(t, doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...).(map[string]any)
					p = target
				}
				if p["type"] != wantType {
					t.Errorf("property %s: type %v, want %s (Go %s)", f.name, p["type"], wantType, f.typ)
				}
				if wantFormat != "" && p["format"] != wantFormat {
					t.Errorf("property %s: format %v, want %s", f.name, p["format"], wantFormat)
				}
			}
			var gotProps, gotRequired []string
			for k := range props {
				gotProps = append(gotProps, k)
			}
			for _, r := range asSlice(schema["required"]) {
				gotRequired = append(gotRequired, r.(string))
			}
			for _, s := range [][]string{wantProps, wantRequired, gotProps, gotRequired} {
				sort.Strings(s)
			}
			if diff := cmp.Diff(wantProps, gotProps); diff != "" {
				t.Errorf("properties (-Go json fields,+openapi.yaml):\n%s", diff)
			}
			if diff := cmp.Diff(wantRequired, gotRequired); diff != "" {
				t.Errorf("required, i.e. the fields without omitempty (-Go,+openapi.yaml):\n%s", diff)
			}
		})
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func TestOpenAPIReferencesResolve(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if !strings.HasPrefix(ref, "#/") {
					t.Errorf("%s: $ref %q is not local", path, ref)
				} else {
					cur := any(doc)
					for _, k := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
						m, _ := cur.(map[string]any)
						cur = m[k]
					}
					if cur == nil {
						t.Errorf("%s: $ref %q resolves to nothing", path, ref)
					}
				}
			}
			for k, e := range v {
				walk(path+"/"+k, e)
			}
		case []any:
			for i, e := range v {
				walk(path+"/"+strconv.Itoa(i), e)
			}
		}
	}
	walk("", doc)
}

// TestOpenAPIExamples checks that the document's examples are what the
// server accepts and answers: the manifests parse, the Job example decodes
// into api.Job field for field.
func TestOpenAPIExamples(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	content := lookup(t, doc, "paths", api.RouteJobs, "post", "requestBody", "content")
	yamlManifest := lookup(t, content, "application/yaml", "examples", "mpijob", "value").(string)
	jsonManifest, err := json.Marshal(lookup(t, content, "application/json", "examples", "pytorchjob", "value"))
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string][]byte{"MPIJob (YAML)": []byte(yamlManifest), "PyTorchJob (JSON)": jsonManifest} {
		spec, err := jobspec.Parse(m, jobspec.Options{})
		if err != nil {
			t.Errorf("example %s does not parse: %v", name, err)
			continue
		}
		if spec.JobSpec.GPUType != "nvidia-tesla-v100" || spec.JobSpec.MaxWorkers <= spec.JobSpec.MinWorkers {
			t.Errorf("example %s: GPU type %q, workers [%d, %d]; want nvidia-tesla-v100 and an elastic range",
				name, spec.JobSpec.GPUType, spec.JobSpec.MinWorkers, spec.JobSpec.MaxWorkers)
		}
	}

	raw, err := json.Marshal(lookup(t, doc, "components", "schemas", "Job", "example"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var job api.Job
	if err := dec.Decode(&job); err != nil {
		t.Errorf("the Job example is not an api.Job: %v", err)
	}
	for _, f := range jsonFields(reflect.TypeFor[api.Job]()) {
		if !f.omitempty && !bytes.Contains(raw, []byte(`"`+f.name+`":`)) {
			t.Errorf("the Job example lacks the required field %s", f.name)
		}
	}

	statuses := asSlice(lookup(t, doc, "components", "schemas", "JobStatus", "enum"))
	want := []any{"Submitted", "Waiting", "Running", "Completed", "Failed", "Canceled"}
	if !slices.Equal(statuses, want) {
		t.Errorf("JobStatus enum = %v, want %v", statuses, want)
	}
}
