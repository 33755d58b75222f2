package main

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHumanSeconds(t *testing.T) {
	t.Parallel()
	const (
		min  = 60.0
		hour = 60 * min
		day  = 24 * hour
		year = 365 * day
	)
	tests := []struct {
		seconds float64
		want    string
	}{
		{-5, "0s"},
		{math.NaN(), "0s"},
		{0, "0s"},
		{0.4, "0s"},
		{0.5, "1s"},
		{28, "28s"},
		{28.6, "29s"},
		{59.4, "59s"},
		{59.5, "1m"},
		{110, "1m50s"},
		{119.6, "2m"},
		{120, "2m"},
		{3*min + 12, "3m12s"},
		{9*min + 59, "9m59s"},
		{10 * min, "10m"},
		{47*min + 59, "47m"},
		{60*min - 1, "59m"},
		{60 * min, "1h"},
		{3*hour - 1, "2h59m"},
		{3 * hour, "3h"},
		{2*hour + 5*min + 30, "2h5m"},
		{7*hour + 59*min, "7h59m"},
		{8 * hour, "8h"},
		{47 * hour, "47h"},
		{3*day + 4*hour, "3d4h"},
		{2 * day, "2d"},
		{8 * day, "8d"},
		{45*day + 5*hour, "45d"},
		{2*year + 10*day, "2y10d"},
		{9 * year, "9y"},
		{math.Inf(1), "292y"},
	}
	for _, tc := range tests {
		if got := humanSeconds(tc.seconds); got != tc.want {
			t.Errorf("humanSeconds(%v) = %q, want %q", tc.seconds, got, tc.want)
		}
	}
}

func TestRelative(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		t    time.Time
		want string
	}{
		{now, "now"},
		{now.Add(-300 * time.Millisecond), "now"},
		{now.Add(-192 * time.Second), "3m12s ago"},
		{now.Add(3 * time.Minute), "in 3m"},
		{now.Add(76 * time.Hour), "in 3d4h"},
	}
	for _, tc := range tests {
		if got := relative(tc.t, now); got != tc.want {
			t.Errorf("relative(now%+v) = %q, want %q", tc.t.Sub(now), got, tc.want)
		}
	}
}

func TestCheckOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "", want: ""},
		{in: "json", want: "json"},
		{in: " YAML ", want: "yaml"},
		{in: "wide", wantErr: `unknown output format "wide" (-o): use json, yaml or name`},
		{in: "table", wantErr: `unknown output format "table" (-o): use json, yaml or name`},
	}
	for _, tc := range tests {
		out := tc.in
		err := checkOutput(&out, outJSON, outYAML, outName)
		switch {
		case tc.wantErr != "":
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("checkOutput(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
		case err != nil || out != tc.want:
			t.Errorf("checkOutput(%q) = %q, %v; want %q", tc.in, out, err, tc.want)
		}
	}
}

func TestSplitDocuments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []string
	}{
		{name: "one", in: "kind: MPIJob\n", want: []string{"kind: MPIJob\n"}},
		{name: "no newline", in: "kind: MPIJob", want: []string{"kind: MPIJob\n"}},
		{name: "leading marker", in: "---\nkind: A\n", want: []string{"kind: A\n"}},
		{name: "two", in: "kind: A\n---\nkind: B\n", want: []string{"kind: A\n", "kind: B\n"}},
		{name: "marker with comment and CRLF", in: "kind: A\r\n--- # next\r\nkind: B\r\n", want: []string{"kind: A\r\n", "kind: B\r\n"}},
		{name: "comment-only documents dropped", in: "# header\n---\nkind: A\n---\n# trailer\n...\n", want: []string{"kind: A\n"}},
		{name: "dashes inside a value stay", in: "args:\n- ---flag\ntext: |\n  a --- b\n", want: []string{"args:\n- ---flag\ntext: |\n  a --- b\n"}},
		{name: "json", in: `{"kind": "MPIJob", "note": "---"}`, want: []string{`{"kind": "MPIJob", "note": "---"}`}},
		{name: "empty", in: "\n\n", want: nil},
	}
	for _, tc := range tests {
		var got []string
		for _, d := range splitDocuments([]byte(tc.in)) {
			got = append(got, string(d))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: documents (-want,+got):\n%s", tc.name, diff)
		}
	}
}

func TestParseSeconds(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]float64{"10": 10, "0.5": 0.5, "0": 0, "1m30s": 90, "250ms": 0.25, "-3": -3} {
		if got, err := parseSeconds(in); err != nil || got != want {
			t.Errorf("parseSeconds(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "NaN", "Inf", "10 s"} {
		if _, err := parseSeconds(in); err == nil {
			t.Errorf("parseSeconds(%q) succeeded", in)
		}
	}
}

func TestPercent(t *testing.T) {
	t.Parallel()
	for f, want := range map[float64]string{0: "0%", 0.424: "42%", 0.995: "99%", 0.9999: "99%", 1: "100%"} {
		if got := percent(f); got != want {
			t.Errorf("percent(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestParseKeyValues(t *testing.T) {
	t.Parallel()
	got, err := parseKeyValues([]string{"a=1", " b = x=y ", "c="})
	if diff := cmp.Diff(map[string]string{"a": "1", "b": "x=y", "c": ""}, got); diff != "" || err != nil {
		t.Errorf("parseKeyValues (-want,+got):\n%s%v", diff, err)
	}
	for _, bad := range [][]string{{"a"}, {"=1"}, {"a=1", "a=2"}} {
		if _, err := parseKeyValues(bad); err == nil || !strings.Contains(err.Error(), "--param") {
			t.Errorf("parseKeyValues(%q) error = %v, want one naming --param", bad, err)
		}
	}
}

func FuzzSplitDocuments(f *testing.F) {
	for _, s := range []string{"kind: A\n---\nkind: B\n", "---\n---\n", `{"a": 1}`, "# c\n...\n", "a: |\n  ---\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		docs := splitDocuments([]byte(in))
		total := 0
		for _, d := range docs {
			if strings.TrimSpace(string(d)) == "" {
				t.Fatalf("blank document from %q", in)
			}
			total += len(d)
		}
		// Splitting only drops separator lines, comment-only documents
		// and adds one newline per document.
		if total > len(in)+len(docs) {
			t.Fatalf("documents of %q hold %d bytes, more than the input's %d", in, total, len(in))
		}
	})
}

func FuzzHumanSeconds(f *testing.F) {
	for _, s := range []float64{0, 59.5, 3600, 1e300, -1} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s float64) {
		got := humanSeconds(s)
		if got == "" || strings.HasPrefix(got, "-") {
			t.Fatalf("humanSeconds(%v) = %q", s, got)
		}
	})
}

// withClock makes the client commands run under ctx see now as the
// current time and print times in loc.
func withClock(ctx context.Context, now time.Time, loc *time.Location) context.Context {
	return context.WithValue(ctx, clockKey{}, clock{now: now, loc: loc})
}
