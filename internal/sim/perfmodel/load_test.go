package perfmodel

import (
	"path/filepath"
	"testing"
)

func TestLoad(t *testing.T) {
	t.Run("parametric only", func(t *testing.T) {
		set, err := Load("")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range BuiltinParametric() {
			if m, err := set.Get(p.Name()); err != nil || m.Name() != p.Name() {
				t.Errorf("Get(%s) = %v, %v; want the parametric model", p.Name(), m, err)
			}
		}
	})
	t.Run("profiles first", func(t *testing.T) {
		set, err := Load(tracesDir(t))
		if err != nil {
			t.Fatal(err)
		}
		// bert is both profiled and parametric: the profile wins.
		if m, err := set.Get("bert"); err != nil {
			t.Fatal(err)
		} else if _, ok := m.(*Profiled); !ok {
			t.Errorf("bert is a %T, want the profile", m)
		}
		if m, err := set.Get("resnet50"); err != nil {
			t.Fatal(err)
		} else if _, ok := m.(*Parametric); !ok {
			t.Errorf("resnet50 is a %T, want the parametric model", m)
		}
	})
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing profile directory: no error")
	}
}
