package estimate

import "testing"

func TestAppKey(t *testing.T) {
	for _, tc := range []struct {
		app  string
		g    int
		want string
	}{
		{"bert", 0, "bert"},
		{"bert", 1, "bert"},
		{"bert", 4, "bert/gpus-per-worker=4"},
		{"cifar10/128", 2, "cifar10/128/gpus-per-worker=2"},
	} {
		if got := AppKey(tc.app, tc.g); got != tc.want {
			t.Errorf("AppKey(%q, %d) = %q, want %q", tc.app, tc.g, got, tc.want)
		}
	}
}
