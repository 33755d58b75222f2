package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/clientconfig"
)

// TestCredentialFlags: the client commands hand --token, --kubeconfig and
// --context to the credential policy (internal/clientconfig, which tests
// the policy itself), send the kubeconfig context's token to a loopback
// server, and explain a 401 with the credential the request carried.
func TestCredentialFlags(t *testing.T) {
	kc := pluginKubeconfig(t) // context team-a (current) and bare, both alice's
	t.Setenv("KUBECONFIG", "")
	t.Setenv(clientconfig.ServerEnv, "")
	var (
		mu    sync.Mutex
		auths []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer alice-token" {
			writeJSON(w, http.StatusUnauthorized, api.Error{Error: api.ErrorDetail{Code: 401, Reason: "Unauthorized", Message: "the bearer token is not valid"}})
			return
		}
		writeJSON(w, http.StatusOK, api.JobList{Items: testJobs()})
	}))
	t.Cleanup(srv.Close)
	takeAuths := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := auths
		auths = nil
		return out
	}

	for _, tc := range []struct {
		name     string
		env      string // $VODA_TOKEN
		args     []string
		wantAuth string
		want     []string // the error's parts; none: success
		offline  bool     // the command fails before any request
	}{
		{name: "--kubeconfig", args: []string{"get", "jobs", "--kubeconfig", kc}, wantAuth: "Bearer alice-token"},
		{name: "--context", args: []string{"get", "jobs", "--kubeconfig", kc, "--context", "bare"}, wantAuth: "Bearer alice-token"},
		{name: "unknown --context", args: []string{"get", "jobs", "--kubeconfig", kc, "--context", "nope"}, want: []string{`--context "nope"`}, offline: true},
		{name: "--token", args: []string{"get", "jobs", "--token", "wrong"}, wantAuth: "Bearer wrong",
			want: []string{"the bearer token is not valid\n", "carried the token of --token"}},
		{name: "$VODA_TOKEN", env: "wrong", args: []string{"get", "jobs"}, wantAuth: "Bearer wrong",
			want: []string{"carried the token of $" + clientconfig.TokenEnv}},
		{name: "no token", args: []string{"delete", "job", "a", "b"}, wantAuth: "",
			want: []string{"delete a: the bearer token is not valid", "delete b:", "carried no token: give one with --token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(clientconfig.TokenEnv, tc.env)
			args := append(tc.args, "--server", srv.URL)
			if tc.want == nil {
				if out := mustVoda(t, args...); !strings.Contains(out, "mnist-20250601-100000") {
					t.Errorf("output:\n%s", out)
				}
			} else {
				wantError(t, args, tc.want...)
			}
			got := takeAuths()
			if tc.offline {
				if len(got) != 0 {
					t.Errorf("the server got %d requests, want none", len(got))
				}
				return
			}
			if len(got) == 0 {
				t.Fatal("the server got no request")
			}
			for _, auth := range got {
				if auth != tc.wantAuth {
					t.Errorf("Authorization %q, want %q", auth, tc.wantAuth)
				}
			}
		})
	}
}

// TestKubeconfigFlagsHelp: --help shows --kubeconfig, --context and where
// --token defaults from.
func TestKubeconfigFlagsHelp(t *testing.T) {
	for _, cmd := range []string{"get", "create", "describe", "delete", "set"} {
		out := mustVoda(t, cmd, "--help")
		for _, want := range []string{
			"--kubeconfig string", "(default $KUBECONFIG, else ~/.kube/config)",
			"--context string", "kubeconfig context whose token to send",
			"(default $" + clientconfig.TokenEnv + ", else the current kubeconfig context's token)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("voda %s --help does not contain %q:\n%s", cmd, want, out)
			}
		}
	}
}
