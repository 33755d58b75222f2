package algorithm

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vodascheduler/voda/internal/registry"
)

func TestBuiltinHasAllNine(t *testing.T) {
	reg := Builtin()
	want := []string{"FIFO", "ElasticFIFO", "SRJF", "ElasticSRJF", "Tiresias", "ElasticTiresias", "FfDLOptimizer", "AFS-L", "Goodput"}
	if got := reg.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Names() (-want,+got):\n%s", diffOrder(want, got))
	}
	elastic := map[string]bool{"ElasticFIFO": true, "ElasticSRJF": true, "ElasticTiresias": true, "FfDLOptimizer": true, "AFS-L": true, "Goodput": true}
	fresh := registry.New[Allocator]("algorithm")
	for _, name := range want {
		for _, spelled := range []string{name, strings.ToLower(name), strings.ToUpper(name), " " + name + " "} {
			if _, ok := reg.Lookup(spelled); !ok {
				t.Errorf("Lookup(%q) failed", spelled)
			}
		}
		e, _ := reg.Lookup(name)
		if e.Name != name || e.Has(TagElastic) != elastic[name] || e.Summary == "" || e.New == nil {
			t.Errorf("entry %s: name %q, elastic %v, summary %q", name, e.Name, e.Has(TagElastic), e.Summary)
		}
		if err := fresh.Register(e); err != nil {
			t.Errorf("Register(%s): %v", name, err)
		}
		a, err := reg.New(name, nil)
		if err != nil {
			t.Fatalf("New(%s): %v", name, err)
		}
		if a.Name() != name {
			t.Errorf("New(%s).Name() = %q", name, a.Name())
		}
		// Every documented parameter is accepted at its default.
		var pairs []string
		for _, pd := range e.Params {
			if pd.Name == "" || pd.Default == "" || pd.Help == "" {
				t.Errorf("%s: incomplete ParamDoc %+v", name, pd)
			}
			pairs = append(pairs, pd.Name+"="+pd.Default)
		}
		p, err := registry.ParseParams(pairs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.New(name, p); err != nil {
			t.Errorf("New(%s, %v): %v", name, pairs, err)
		}
	}
	// Builtin returns a new registry each time: adding to one leaves the
	// next untouched.
	if err := reg.Register(Entry{Name: "Mine", New: NewFIFO}); err != nil {
		t.Fatal(err)
	}
	if _, ok := Builtin().Lookup("Mine"); ok {
		t.Error("Builtin() shares state between calls")
	}
	if err := reg.Register(Entry{Name: "afs-l", New: NewFIFO}); err == nil {
		t.Error("re-registering AFS-L in another case succeeded")
	}
}

func TestParams(t *testing.T) {
	cases := []struct {
		algorithm string
		params    []string
		ok        bool
	}{
		{NameTiresias, []string{"threshold=57600", "starvation=0"}, true},
		{NameTiresias, []string{"THRESHOLD=1.5e3"}, true},
		{NameTiresias, []string{"threshold=-1"}, false},
		{NameTiresias, []string{"threshold=NaN"}, false},
		{NameTiresias, []string{"threshold=abc"}, false},
		{NameTiresias, []string{"starvation=-2"}, false},
		{NameTiresias, []string{"pending_limit=3"}, false}, // not Tiresias'
		{NameElasticTiresias, []string{"pending_limit=3", "threshold=10"}, true},
		{NameElasticTiresias, []string{"pending_limit=-1"}, false},
		{NameElasticTiresias, []string{"pending_limit=1.5"}, false},
		{NameFIFO, []string{"threshold=1"}, false},
		{NameAFSL, nil, true},
		{NameGoodput, []string{"payback=0", "hold=1"}, true},
		{NameGoodput, []string{"PAYBACK=2.5", "hold=3"}, true},
		{NameGoodput, []string{"payback=-1"}, false},
		{NameGoodput, []string{"payback=NaN"}, false},
		{NameGoodput, []string{"payback=+Inf"}, false},
		{NameGoodput, []string{"hold=0.5"}, false},
		{NameGoodput, []string{"hold=Inf"}, false},
		{NameGoodput, []string{"size=0", "settle=0"}, true},
		{NameGoodput, []string{"size=1", "settle=10"}, true},
		{NameGoodput, []string{"size=-0.1"}, false},
		{NameGoodput, []string{"size=1.5"}, false},
		{NameGoodput, []string{"size=NaN"}, false},
		{NameGoodput, []string{"settle=-1"}, false},
		{NameGoodput, []string{"settle=Inf"}, false},
		{NameGoodput, []string{"threshold=1"}, false},
	}
	for _, tc := range cases {
		p, err := registry.ParseParams(tc.params)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Builtin().New(tc.algorithm, p)
		if (err == nil) != tc.ok {
			t.Errorf("New(%s, %v): err = %v, want ok = %v", tc.algorithm, tc.params, err, tc.ok)
		}
	}
}
