package estimate

import "testing"

func TestAppKey(t *testing.T) {
	for _, tc := range []struct {
		ns, app string
		g       int
		want    string
	}{
		{"", "bert", 0, "bert"},
		{"", "bert", 1, "bert"},
		{"", "bert", 4, "bert/gpus-per-worker=4"},
		{"", "cifar10/128", 2, "cifar10/128/gpus-per-worker=2"},
		{"team-a", "bert", 1, "team-a/bert"},
		{"team-a", "bert", 8, "team-a/bert/gpus-per-worker=8"},
	} {
		if got := AppKey(tc.ns, tc.app, tc.g); got != tc.want {
			t.Errorf("AppKey(%q, %q, %d) = %q, want %q", tc.ns, tc.app, tc.g, got, tc.want)
		}
	}
}
