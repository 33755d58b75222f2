package registry

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scaled is a factory of ints that reads one parameter.
func scaled(name string) Entry[int] {
	return Entry[int]{Name: name, New: func(p *Params) (int, error) {
		f, err := p.Int("factor", 1)
		return 10 * f, err
	}}
}

func TestRegister(t *testing.T) {
	r := New[int]("widget").MustRegister(scaled("Ten"), scaled("other"))
	for _, dup := range []string{"ten", "TEN", " other"} {
		if err := r.Register(scaled(strings.TrimSpace(dup))); err == nil || !strings.Contains(err.Error(), "already registered") {
			t.Errorf("Register(%q) error = %v, want already registered", dup, err)
		}
	}
	if err := r.Register(Entry[int]{Name: "nofactory"}); err == nil {
		t.Errorf("Register without a factory: error = nil")
	}
	if err := r.Register(scaled(" ")); err == nil {
		t.Errorf("Register with a blank name: error = nil")
	}
	if err := r.Register(scaled("Spread")); err != nil {
		t.Fatalf("Register(Spread) error: %v", err)
	}
	if diff := cmp.Diff([]string{"Ten", "other", "Spread"}, r.Names()); diff != "" {
		t.Errorf("Names() (-want,+got):\n%s", diff)
	}
	names := r.Names()
	names[0] = "changed"
	if got := r.Names()[0]; got != "Ten" {
		t.Errorf("Names()[0] = %q after changing a returned slice, want Ten", got)
	}
	for _, spelled := range []string{"SPREAD", " spread ", "Ten", "tEN"} {
		if v, err := r.New(spelled, nil); err != nil || v != 10 {
			t.Errorf("New(%q) = %d, %v; want 10", spelled, v, err)
		}
	}
}

func TestNewErrors(t *testing.T) {
	r := New[int]("widget").MustRegister(scaled("ten"))
	for _, tc := range []struct {
		name   string
		params []string
		want   string
	}{
		{"nope", nil, `unknown widget "nope" (known: ten)`},
		{"", nil, `unknown widget ""`},
		{"ten", []string{"factor=x"}, `widget ten: param factor: "x" is not an integer`},
		{"ten", []string{"factor=2", "fator=3"}, "widget ten: unknown param(s) fator"},
	} {
		p, err := ParseParams(tc.params)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.New(tc.name, p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %v) error = %v, want it to contain %q", tc.name, tc.params, err, tc.want)
		}
	}
	if v, err := r.NewFromMap("ten", map[string]string{"FACTOR": "3"}); err != nil || v != 30 {
		t.Errorf("NewFromMap(ten, FACTOR=3) = %d, %v; want 30", v, err)
	}
	if _, err := r.NewFromMap("ten", map[string]string{"factor": "3", "FACTOR": "4"}); err == nil {
		t.Error("NewFromMap with a name given twice in two cases: error = nil")
	}
	if !(Entry[int]{Tags: []string{"elastic"}}).Has("elastic") || (Entry[int]{}).Has("elastic") {
		t.Error("Has disagrees with Tags")
	}
}

func TestParseParams(t *testing.T) {
	for _, bad := range [][]string{{"noequals"}, {"=3"}, {"a=1", "A=2"}} {
		if _, err := ParseParams(bad); err == nil {
			t.Errorf("ParseParams(%q) error = nil", bad)
		}
	}
	p, err := ParseParams([]string{" Rate = 1.5 ", "n=3"})
	if err != nil {
		t.Fatal(err)
	}
	if f, err := p.Float("rate", 0); err != nil || f != 1.5 {
		t.Errorf("Float(rate) = %v, %v; want 1.5", f, err)
	}
	if f, err := p.Float("unset", 2.5); err != nil || f != 2.5 {
		t.Errorf("Float(unset) = %v, %v; want the default 2.5", f, err)
	}
	if _, err := p.Float("n", 0); err != nil {
		t.Errorf("Float(n): %v", err)
	}
	if err := p.CheckUnused(); err != nil {
		t.Errorf("CheckUnused after reading every param: %v", err)
	}
}

func TestParamsBool(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
		ok    bool
	}{
		{"true", true, true}, {"1", true, true}, {"FALSE", false, true}, {"0", false, true},
		{"yes", false, false}, {"", false, false},
	} {
		p, err := ParseParams([]string{"flag=" + tc.value})
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Bool("flag", !tc.want)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("Bool(flag=%q) = %v, %v; want %v, ok %v", tc.value, got, err, tc.want, tc.ok)
		}
	}
	p, _ := ParseParams(nil)
	if got, err := p.Bool("flag", true); err != nil || !got {
		t.Errorf("Bool(unset, true) = %v, %v; want the default", got, err)
	}
}
