package api

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func intPtr(i int) *int { return &i }

// TestDecodeStrict: encoding/json alone takes the last of duplicate keys
// and matches keys case-insensitively; decodeStrict refuses both, naming
// the key.
func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body   string
		want         PriorityRequest
		field, error string
	}{
		{name: "valid", body: `{"priority": 3}`, want: PriorityRequest{Priority: intPtr(3)}},
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
		t.Run(tc.name, func(t *testing.T) {
			var got PriorityRequest
			err := decodeStrict([]byte(tc.body), &got)
			var field, msg string
			if err != nil {
				field, msg = err.Field, err.Error()
			}
			if field != tc.field || msg != tc.error {
				t.Errorf("error: field %q %q, want %q %q", field, msg, tc.field, tc.error)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("decoded (-want,+got):\n%s", diff)
				}
			}
		})
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
		var req AlgorithmRequest
		err := decodeStrict([]byte(c.body), &req)
		field := ""
		if err != nil {
			field = err.Field
		}
		if field != c.field {
			t.Errorf("%s: field %q (%v), want %q", c.body, field, err, c.field)
		}
	}
}

// FuzzDecodeStrict: decodeStrict never panics, and what it accepts is a
// JSON object that encoding/json decodes to the same value.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{"algorithm": "Tiresias", "params": {"threshold": "3600"}}`,
		`{"algorithm": "x", "algorithm": "y"}`, `{"ALGORITHM": "x"}`, `{"params": {"a": "1", "a": "2"}}`,
		`{"params": [1, {"a": 1, "a": 2}]}`, `[]`, `null`, ``, `{"algorithm": 1}`, `{} {}`, `{"a":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict AlgorithmRequest
		if err := decodeStrict(data, &strict); err != nil {
			if err.Field == "" || err.Reason == "" {
				t.Fatalf("error without a field or reason: %+v", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var loose AlgorithmRequest
		if err := json.Unmarshal(data, &loose); err != nil {
			t.Fatalf("accepted %q, which encoding/json rejects: %v", data, err)
		}
		if diff := cmp.Diff(loose, strict); diff != "" {
			t.Fatalf("%q decodes differently (-encoding/json,+strict):\n%s", data, diff)
		}
	})
}
