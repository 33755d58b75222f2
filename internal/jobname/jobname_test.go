package jobname

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	east := time.FixedZone("UTC+9", 9*3600)
	for _, c := range []struct {
		name string
		at   time.Time
		want string
	}{
		{"mnist", time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC), "mnist-20250601-100000"},
		{"bert-finetune", time.Date(2026, 11, 23, 19, 15, 0, 999, east), "bert-finetune-20261123-101500"},
	} {
		if got := New(c.name, c.at); got != c.want {
			t.Errorf("New(%q, %v) = %q, want %q", c.name, c.at, got, c.want)
		}
	}
}

func TestBase(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"mnist-20250601-100000", "mnist"},
		{"bert-finetune-20261123-101500-2", "bert-finetune"},
		{"a-1-20261123-101500-12", "a-1"},
		{"20261123-101500", "20261123-101500"},   // no name before the stamp
		{"-20261123-101500", "-20261123-101500"}, // nor here
		{"mnist", "mnist"},
		{"mnist-2025061-100000", "mnist-2025061-100000"},
		{"mnist-20250601-100000-", "mnist-20250601-100000-"},
		{"", ""},
	} {
		if got := Base(c.name); got != c.want {
			t.Errorf("Base(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// A burst across a second's boundary brings both seconds' stamps
// interleaved: each name's counter goes on where it was, rather than
// restarting at every flip and walking up through taken names.
func TestNextAcrossSecondBoundary(t *testing.T) {
	var n Namer
	a, b, c := "x-20261123-100000", "x-20261123-100001", "x-20261123-100002"
	var got []string
	for _, first := range []string{a, a, b, a, b, a, c, b, c} {
		got = append(got, n.Next(first))
	}
	want := []string{a, a + "-2", b, a + "-3", b + "-2", a + "-4", c, b + "-3", c + "-2"}
	if !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	// A second on, only the counters of that second and the one before
	// are kept.
	n.Next("x-20261123-100003")
	if got := n.counters(); got != 2 {
		t.Errorf("%d counters kept a second after %s, want 2 (of %s and the new second)", got, c, c)
	}
}

// FuzzBase: Base never panics, gives back the name New and Next were
// given, and leaves a name without a stamp as it is.
func FuzzBase(f *testing.F) {
	for _, s := range []string{"mnist", "bert-finetune", "a-20250601-100000", "", "-", "x-1"} {
		f.Add(s, int64(1748772000), uint8(2))
	}
	f.Fuzz(func(t *testing.T, name string, unix int64, tries uint8) {
		got := Base(name)
		if !strings.HasPrefix(name, got) {
			t.Fatalf("Base(%q) = %q, not a prefix", name, got)
		}
		if name == "" || stampSuffix.MatchString(name) {
			return
		}
		at := time.Unix(unix%(1<<33), 0) // years 1970 to 2242: eight-digit dates
		first := New(name, at)
		var n Namer
		for range int(tries%4) + 1 {
			if made := n.Next(first); Base(made) != name {
				t.Fatalf("Base(%q) = %q, want %q", made, Base(made), name)
			}
		}
	})
}
