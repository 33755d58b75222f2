package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/vodascheduler/voda/internal/algorithm"
	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
	"github.com/vodascheduler/voda/internal/placement"
	"github.com/vodascheduler/voda/internal/service"
	"github.com/vodascheduler/voda/internal/sim/livecluster"
)

// simConfig is what `voda server --sim-nodes nvidia-tesla-v100=1x4` runs, with its
// store in a fresh directory and the API on a free port.
func simConfig(t *testing.T) Config {
	return Config{
		Addr: "127.0.0.1:0", DataDir: t.TempDir(), API: true, Schedulers: true,
		Cluster: ClusterSim, SimNodes: []SimGroup{{GPUType: "nvidia-tesla-v100", Nodes: 1, GPUsPerNode: 4}},
		SimPool: func(g SimGroup, clk clock.Clock, log *slog.Logger) (service.Backend, error) {
			return livecluster.New(livecluster.Options{GPUType: g.GPUType, Nodes: g.Nodes, GPUsPerNode: g.GPUsPerNode, Clock: clk, Logger: log})
		},
		Models: livecluster.Models(), Speed: 1, Algorithm: algorithm.DefaultName, Placer: placement.DefaultName,
		MaxConnections: 16, MaxWorkers: 64, Logger: slog.New(slog.DiscardHandler),
	}
}

// example is a job of the simulated cluster's GPU type that names one of
// its performance models.
const example = "../../examples/mpijob-v2beta1-horovod-elastic.yaml"

func TestRunSimServesJobs(t *testing.T) {
	base, stop := runSim(t, simConfig(t))
	ctx := t.Context()
	c, err := client.New(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	job, err := c.CreateJob(ctx, manifest)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := c.ListJobs(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Name != job.Name || jobs[0].GPUType != "nvidia-tesla-v100" {
		t.Fatalf("jobs = %+v, want only %s on nvidia-tesla-v100", jobs, job.Name)
	}

	stop()
}

// runSim runs a server of cfg until the test ends or stop, which fails
// the test unless Run returns nil within 15 s. It returns the API's URL
// once the server is ready.
func runSim(t *testing.T, cfg Config) (base string, stop func()) {
	t.Helper()
	addrc := make(chan string, 1)
	cfg.Listening = func(addr string) { addrc <- addr }
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	select {
	case addr := <-addrc:
		base = "http://" + addr
	case err := <-done:
		t.Fatalf("Run returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not listening after 10 s")
	}
	waitReady(t, base)
	return base, func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run after cancel = %v, want nil", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("Run did not return within 15 s of the cancel")
		}
	}
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + api.RouteReadyz)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not OK within 10 s: %v %v", api.RouteReadyz, resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string // the start of the error: the flag at fault
	}{
		"no components": {func(c *Config) { c.API, c.Schedulers = false, false }, "--components: nothing to run"},
		"zero speed":    {func(c *Config) { c.Speed = 0 }, "--speed: 0 must be positive"},
		"no connection": {func(c *Config) { c.MaxConnections = 0 }, "--max-connections: 0 must be positive"},
		"below -1 connections": {
			func(c *Config) { c.MaxConnections = -2 }, "--max-connections: -2 must be positive"},
		"negative grace": {func(c *Config) { c.FirstRequestGrace = -time.Second }, "--first-request-grace: -1s must be positive"},
		"probes without the API": {
			func(c *Config) { c.API, c.ProbeAddr = false, "127.0.0.1:0" }, "--probe-addr: the probes are the API's"},
		"bad probe address": {func(c *Config) { c.ProbeAddr = "nope" }, "--probe-addr: "},
		"no workers":        {func(c *Config) { c.MaxWorkers = 0 }, "--max-workers: 0 must be at least 1"},
		"unknown kind":      {func(c *Config) { c.Cluster = "aws" }, `--cluster: "aws" is not sim or kubernetes`},
		"no sim nodes":      {func(c *Config) { c.SimNodes = nil }, "--sim-nodes: at least one GPU type is needed"},
		"no sim cluster":    {func(c *Config) { c.SimPool = nil }, "server: schedulers on a simulated cluster need"},
		"fast kubernetes": {
			func(c *Config) { c.Cluster, c.Speed = ClusterKubernetes, 2 }, "--speed: 2: a real cluster runs in real time"},
		"kubernetes API without types": {
			func(c *Config) { c.Cluster, c.Schedulers = ClusterKubernetes, false }, "--gpu-types: an API without schedulers"},
		"default namespace not a job namespace": {
			func(c *Config) {
				c.Cluster, c.Kube.Namespace, c.Kube.JobNamespaces = ClusterKubernetes, "default", []string{"team-a"}
			}, "--job-namespaces: team-a must include --namespace default"},
		"unknown algorithm": {func(c *Config) { c.Algorithm = "nope" }, "--algorithm: "},
		"unknown placer":    {func(c *Config) { c.Placer = "nope" }, "--placer: "},
		"bad address":       {func(c *Config) { c.Addr = "nope" }, "--addr: "},
		"unknown pod security": {
			func(c *Config) { c.PodSecurity = "strict" }, `--pod-security: pod security level "strict" is not one of privileged, baseline, restricted`},
		"anonymous on every interface": {
			func(c *Config) { c.Addr = "0.0.0.0:0" }, "--addr 0.0.0.0:0: not a loopback address, and without authentication"},
		"unknown authentication": {
			func(c *Config) { c.Auth.Mode = "ldap" }, `--authentication: "ldap" is not none, token-file or kubernetes`},
		"token-file mode without a file": {
			func(c *Config) { c.Auth.Mode = AuthTokenFile }, "--authentication token-file needs --token-auth-file"},
		"token file in the kubernetes mode": {
			func(c *Config) { c.Auth.Mode, c.Auth.TokenFile = AuthKubernetes, "tokens.csv" }, "--token-auth-file: not used with --authentication kubernetes"},
		"cache too long": {
			func(c *Config) { c.Auth.Mode, c.Auth.CacheTTL = AuthKubernetes, time.Hour }, "--authentication-cache-ttl: 1h0m0s is outside [0, 10m0s]"},
		"kubernetes mode without a cluster": {
			func(c *Config) { c.Auth.Mode, c.Kube.Kubeconfig = AuthKubernetes, filepath.Join(t.TempDir(), "none") }, "--authentication kubernetes: --kubeconfig: "},
		"certificate without key": {
			func(c *Config) { c.Auth.TLSCertFile = "cert.pem" }, "--tls-cert-file and --tls-private-key-file: give both"},
		"missing token file": {
			func(c *Config) { c.Auth.TokenFile = filepath.Join(t.TempDir(), "none") }, "--token-auth-file: "},
		"missing certificate": {
			func(c *Config) { c.Auth.TLSCertFile, c.Auth.TLSKeyFile = "none.pem", "none.key" }, "--tls-cert-file and --tls-private-key-file: open none.pem"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := simConfig(t)
			tc.edit(&cfg)
			err := Run(context.Background(), cfg)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want an error starting %q", err, tc.want)
			}
		})
	}
}

func TestAnonymousOnlyOnLoopback(t *testing.T) {
	for addr, loopback := range map[string]bool{
		"127.0.0.1:55587": true, "127.0.0.5:0": true, "[::1]:0": true, "localhost:0": true,
		"0.0.0.0:55587": false, ":55587": false, "[::]:0": false, "10.1.2.3:0": false, "voda.example.com:0": false,
	} {
		anonymous := AuthOptions{}
		if err := anonymous.validate(addr); (err == nil) != loopback {
			t.Errorf("anonymous on %s: %v, want allowed %v", addr, err, loopback)
		}
		for _, o := range []AuthOptions{{AllowAnonymous: true}, {TokenFile: "tokens.csv"}} {
			if err := o.validate(addr); err != nil {
				t.Errorf("%+v on %s: %v", o, addr, err)
			}
		}
	}
}

// TestProbeListener: with ProbeAddr, the probes answer there without a
// token, over plain HTTP, while the API wants one; nothing else is served
// there, and its requests count in the API's metrics.
func TestProbeListener(t *testing.T) {
	cfg := simConfig(t)
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("s3cret-0123456789,alice,1,voda:users\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Auth.TokenFile = tokens
	cfg.ProbeAddr = "127.0.0.1:0"
	probec := make(chan string, 1)
	cfg.ProbeListening = func(addr string) { probec <- addr }
	base, stop := runSim(t, cfg)
	defer stop()
	probes := "http://" + <-probec
	get := func(method, url string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		method, url string
		code        int
		body        string
	}{
		{"GET", probes + api.RouteHealthz, http.StatusOK, "ok\n"},
		{"GET", probes + api.RouteReadyz, http.StatusOK, "ok\n"},
		{"HEAD", probes + api.RouteReadyz, http.StatusOK, ""},
		{"POST", probes + api.RouteHealthz, http.StatusMethodNotAllowed, ""},
		{"GET", probes + api.RouteMetrics, http.StatusNotFound, ""},
		{"GET", probes + api.RouteJobs, http.StatusNotFound, ""},
		{"GET", probes + "/ui/", http.StatusNotFound, ""},
		{"GET", base + api.RouteHealthz, http.StatusOK, "ok\n"},
		{"GET", base + api.RouteJobs, http.StatusUnauthorized, ""},
	} {
		code, body := get(tc.method, tc.url)
		if code != tc.code || tc.body != "" && body != tc.body {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.url, code, body, tc.code, tc.body)
		}
	}
	req, _ := http.NewRequest("GET", base+api.RouteMetrics, nil)
	req.Header.Set("Authorization", "Bearer s3cret-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	// runSim's readiness poll and the two probes above on the probe
	// port, and one on the API's: at least 3 of /readyz, 2 of /healthz.
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`voda_http_requests_total\{code="200",route="GET /healthz"\} [2-9]`),
		regexp.MustCompile(`voda_http_requests_total\{code="200",route="GET /readyz"\} ([3-9]|\d\d)`),
	} {
		if !want.Match(b) {
			t.Errorf("/metrics has no line matching %s:\n%s", want, grepLines(string(b), "voda_http_requests_total"))
		}
	}
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The limited cycles' spacing is wall time: a cluster clock S times
// faster gets S times the interval on its own clock.
func TestStartIntervalIsWallTime(t *testing.T) {
	for speed, want := range map[float64]time.Duration{
		1:   250 * time.Millisecond,
		60:  15 * time.Second,
		500: 125 * time.Second,
		0.5: 125 * time.Millisecond,
	} {
		if got := startInterval(speed); got != want {
			t.Errorf("startInterval(%v) = %v, want %v", speed, got, want)
		}
	}
}

// The clock is held only where everything reads the same one: a
// simulated cluster whose API runs in the schedulers' process.
func TestHoldsOnlyWithOneClock(t *testing.T) {
	for _, tc := range []struct {
		cluster     string
		api, scheds bool
		want        bool
	}{
		{ClusterSim, true, true, true},
		{ClusterSim, false, true, false},
		{ClusterSim, true, false, false},
		{ClusterKubernetes, true, true, false},
	} {
		s := &server{cfg: Config{Cluster: tc.cluster, API: tc.api, Schedulers: tc.scheds}}
		if got := s.holds(); got != tc.want {
			t.Errorf("%s, API %v, schedulers %v: holds %v, want %v", tc.cluster, tc.api, tc.scheds, got, tc.want)
		}
		if _, held := s.simClockFor(nil).(interface{ HoldAt(time.Time) func() }); held != tc.want {
			t.Errorf("%s, API %v, schedulers %v: the simulated cluster's clock can be held: %v, want %v", tc.cluster, tc.api, tc.scheds, held, tc.want)
		}
	}
}
