package strictjson

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vodascheduler/voda/internal/progress"
)

func intPtr(i int) *int { return &i }

// priorityRequest and algorithmRequest are the shapes of two of the API's
// request bodies: a pointer to a number, and a string beside a map.
type priorityRequest struct {
	Priority *int `json:"priority"`
}

type algorithmRequest struct {
	Algorithm string            `json:"algorithm"`
	Params    map[string]string `json:"params,omitempty"`
}

// TestDecodeStrict: encoding/json alone takes the last of duplicate keys
// and matches keys case-insensitively; Decode refuses both, naming
// the key.
func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body   string
		want         priorityRequest
		field, error string
	}{
		{name: "valid", body: `{"priority": 3}`, want: priorityRequest{Priority: intPtr(3)}},
		{name: "null is absent", body: `{"priority": null}`},
		{name: "empty object", body: ` {} `},
		{name: "duplicate", body: `{"priority": 1, "priority": 2}`, field: "priority", error: "priority: is given twice; give it once"},
		{name: "other case", body: `{"PRIORITY": 1}`, field: "PRIORITY", error: `PRIORITY: unknown field; did you mean "priority"? (names are case-sensitive)`},
		{name: "other case beside the right one", body: `{"priority": 1, "Priority": 2}`, field: "Priority", error: `Priority: unknown field; did you mean "priority"? (names are case-sensitive)`},
		{name: "unknown", body: `{"priority": 1, "urgent": {"a": 1}}`, field: "urgent", error: "urgent: unknown field; known: priority"},
		{name: "wrong type", body: `{"priority": "high"}`, field: "priority", error: "priority: must be an integer, not a string"},
		{name: "fraction", body: `{"priority": 1.5}`, field: "priority", error: "priority: must be an integer, not the number 1.5"},
		{name: "empty", body: "  \n", field: "body", error: "body: is empty; expected a JSON object"},
		{name: "list", body: `[{"priority": 1}]`, field: "body", error: "body: must be a JSON object, not a list"},
		{name: "string", body: `"1"`, field: "body", error: "body: must be a JSON object, not a string"},
		{name: "null", body: `null`, field: "body", error: "body: must be a JSON object, not null"},
		{name: "trailing", body: `{"priority": 1}{"priority": 2}`, field: "body", error: "body: trailing data after the JSON object"},
		{name: "cut short", body: `{"priority": 1`, field: "body", error: "body: not valid JSON: the body ends early"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkDecode(t, tc.body, tc.want, tc.field, tc.error) })
	}
}

// checkDecode decodes body into a new T with Decode and compares
// the error's field and message, or the value when there is no error.
func checkDecode[T any](t *testing.T, body string, want T, wantField, wantError string) {
	t.Helper()
	var got T
	err := Decode([]byte(body), &got)
	var field, msg string
	if err != nil {
		field, msg = err.Field, err.Error()
	}
	if field != wantField || msg != wantError {
		t.Errorf("error: field %q %q, want %q %q", field, msg, wantField, wantError)
	}
	if err == nil {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("decoded (-want,+got):\n%s", diff)
		}
	}
}

func TestDecodeStrictNested(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ body, field string }{
		{`{"algorithm": "Tiresias", "params": {"threshold": "1", "starvation": "2"}}`, ""},
		{`{"algorithm": "Tiresias", "params": {"threshold": "1", "threshold": "2"}}`, "params.threshold"},
		{`{"algorithm": "a", "Params": {}}`, "Params"},
		{`{"algorithm": "a", "params": {"x": 1}}`, "params.x"},
		{`{"algorithm": "a", "algorithm": "b"}`, "algorithm"},
	} {
		var req algorithmRequest
		err := Decode([]byte(c.body), &req)
		field := ""
		if err != nil {
			field = err.Field
		}
		if field != c.field {
			t.Errorf("%s: field %q (%v), want %q", c.body, field, err, c.field)
		}
	}
}

// TestDecodeStrictReport: a progress report is stored in one pass as
// encoding/json would store it; a number its field cannot hold is named
// as encoding/json names it, but only once the whole body has passed the
// checks; a type Decode does not store itself (an interface) is
// decoded by encoding/json after the checks.
func TestDecodeStrictReport(t *testing.T) {
	t.Parallel()
	one, big := 1.5, int64(1)<<62
	tests := []struct {
		name, body   string
		want         progress.Wire
		field, error string
	}{
		{name: "report", body: `{"generation": "g", "workers": 4611686018427387904, "nodes": 2, "epoch": 1.5, "metrics": {"loss": 1.5, "acc": null}, "final": true}`,
			want: progress.Wire{Generation: new("g"), Workers: &big, Nodes: 2, Epoch: &one, Metrics: map[string]float64{"loss": 1.5, "acc": 0}, Final: true}},
		{name: "nulls", body: `{"generation": null, "metrics": null, "nodes": null}`},
		{name: "empty metrics", body: `{"metrics": {}}`, want: progress.Wire{Metrics: map[string]float64{}}},
		{name: "float out of range", body: `{"epoch": 1e400}`, field: "epoch", error: "epoch: cannot hold the JSON number 1e400"},
		{name: "metric out of range", body: `{"metrics": {"loss": -1e309}}`, field: "metrics", error: "metrics: cannot hold the JSON number -1e309"},
		{name: "first of two out of range", body: `{"epoch": 1e400, "stepSeconds": 2e400}`, field: "epoch", error: "epoch: cannot hold the JSON number 1e400"},
		{name: "checks before range", body: `{"epoch": 1e400, "Steps": 1}`, field: "Steps", error: `Steps: unknown field; did you mean "steps"? (names are case-sensitive)`},
		{name: "trailing before range", body: `{"epoch": 1e400} 1`, field: "body", error: "body: trailing data after the JSON object"},
		{name: "integer past int64", body: `{"steps": 9223372036854775808}`, field: "steps", error: "steps: must be an integer, not the number 9223372036854775808"},
		{name: "duplicate metric", body: `{"metrics": {"a": 1, "a": 2}}`, field: "metrics.a", error: "metrics.a: is given twice; give it once"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkDecode(t, tc.body, tc.want, tc.field, tc.error) })
	}
	t.Run("interface", func(t *testing.T) {
		var got struct {
			Any any `json:"any"`
		}
		if err := Decode([]byte(`{"any": {"a": [1, "b"]}}`), &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"a": []any{1.0, "b"}}
		if diff := cmp.Diff(want, got.Any); diff != "" {
			t.Errorf("decoded %+v (-want,+got):\n%s", got, diff)
		}
		if err := Decode([]byte(`{"any": {"a": 1, "a": 2}}`), &got); err == nil || err.Field != "any.a" {
			t.Errorf("duplicate under an interface: %v, want a duplicate any.a", err)
		}
	})
}

// FuzzDecodeStrict: Decode never panics, and what it accepts is a
// JSON object that encoding/json decodes to the same value, for a
// scheduler's settings and for a progress report.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{"generation": "g", "workers": 2, "steps": 10, "epoch": 1e308, "metrics": {"loss": 0.5}}`,
		`{"workers": 1e3, "nodes": -0, "metrics": {"a": null}, "epoch": 1e400}`,
		`{"algorithm": "Tiresias", "params": {"threshold": "3600"}}`,
		`{"algorithm": "x", "algorithm": "y"}`, `{"ALGORITHM": "x"}`, `{"params": {"a": "1", "a": "2"}}`,
		`{"params": [1, {"a": 1, "a": 2}]}`, `[]`, `null`, ``, `{"algorithm": 1}`, `{} {}`, `{"a":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict algorithmRequest
		if err := Decode(data, &strict); err != nil {
			if err.Field == "" || err.Reason == "" {
				t.Fatalf("error without a field or reason: %+v", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var loose algorithmRequest
		if err := json.Unmarshal(data, &loose); err != nil {
			t.Fatalf("accepted %q, which encoding/json rejects: %v", data, err)
		}
		if diff := cmp.Diff(loose, strict); diff != "" {
			t.Fatalf("%q decodes differently (-encoding/json,+strict):\n%s", data, diff)
		}
		var report, looseReport progress.Wire
		if err := Decode(data, &report); err != nil {
			return
		}
		if err := json.Unmarshal(data, &looseReport); err != nil {
			t.Fatalf("accepted %q as a report, which encoding/json rejects: %v", data, err)
		}
		if diff := cmp.Diff(looseReport, report); diff != "" {
			t.Fatalf("%q decodes differently as a report (-encoding/json,+strict):\n%s", data, diff)
		}
	})
}
