package perfmodel

import "strings"

// Load returns the models a simulation uses: the measured Pollux profiles
// under dir, unless dir is empty (see LoadPolluxDir), and the built-in
// parametric models for the applications the profiles do not cover.
func Load(dir string) (*Set, error) {
	set, err := NewSet()
	if err != nil {
		return nil, err
	}
	profiled := map[string]bool{}
	if dir != "" {
		apps, err := LoadPolluxDir(dir)
		if err != nil {
			return nil, err
		}
		for _, a := range apps {
			profiled[strings.ToLower(a.Name())] = true
			if err := set.Add(a); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range BuiltinParametric() {
		if !profiled[strings.ToLower(p.Name())] {
			if err := set.Add(p); err != nil {
				return nil, err
			}
		}
	}
	return set, nil
}
