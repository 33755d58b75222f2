package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/clientconfig"
)

func TestGetSchedulers(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, nil, testSchedulers())
	tests := []cliCase{
		{
			name: "table",
			args: []string{"get", "schedulers"},
			want: `GPU-TYPE   ALGORITHM     RATELIMIT   NODES   GPUS   IN-USE   WAITING   RUNNING   LAST-CYCLE
a100       Tiresias      2.5s        1       4      0        1         0         12s ago
v100       ElasticFIFO   30s         2       8      2        1         1         -
`,
		},
		{
			name: "wide, one GPU type",
			args: []string{"get", "scheduler", "a100", "-o", "wide"},
			want: `GPU-TYPE   ALGORITHM   RATELIMIT   NODES   GPUS   IN-USE   WAITING   RUNNING   LAST-CYCLE   CYCLES   PARAMS
a100       Tiresias    2.5s        1       4      0        1         0         12s ago      12       starvation=8,threshold=3600
`,
		},
		{
			name: "names",
			args: []string{"get", "sched", "-o", "name"},
			want: "a100\nv100\n",
		},
		{
			name: "algorithms",
			args: []string{"get", "algorithms"},
			want: `NAME          PARAMS                 SUMMARY
ElasticFIFO   -                      FIFO order; min first, then spare GPUs round-robin
Tiresias      threshold,starvation   discretized 2D-LAS with two queues
`,
		},
		{
			name: "algorithm names",
			args: []string{"get", "algo", "-o", "name"},
			want: "ElasticFIFO\nTiresias\n",
		},
	}
	checkCLI(t, f.URL, tests)
	t.Run("yaml round trip", func(t *testing.T) {
		t.Parallel()
		var list api.SchedulerList
		if err := yaml.Unmarshal([]byte(mustVoda(t, "get", "schedulers", "-o", "yaml", "--server", f.URL)), &list); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(testSchedulers(), list.Items); diff != "" {
			t.Errorf("schedulers after -o yaml (-want,+got):\n%s", diff)
		}
		var algos api.AlgorithmList
		if err := json.Unmarshal([]byte(mustVoda(t, "get", "algorithms", "-o", "json", "--server", f.URL)), &algos); err != nil || len(algos.Items) != 2 {
			t.Errorf("algorithms after -o json: %+v, %v", algos, err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		t.Parallel()
		wantError(t, []string{"get", "scheduler", "h100", "--server", f.URL}, "scheduler h100: no scheduler for GPU type h100")
	})
}

func TestSetAlgorithmAndRateLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		scheds  []api.Scheduler
		args    []string
		want    string
		request fakeRequest
	}{
		{
			name:   "algorithm with params",
			scheds: testSchedulers(),
			args:   []string{"set", "algorithm", "tiresias", "--gpu-type", "a100", "--param", "threshold=7200", "--param", "starvation = 4"},
			want:   "Algorithm of a100 set to Tiresias (starvation=4,threshold=7200)\n",
			request: fakeRequest{Method: "PUT", Path: "/api/v1/schedulers/a100/algorithm", ContentType: "application/json",
				Body: `{"algorithm":"tiresias","params":{"starvation":"4","threshold":"7200"}}`},
		},
		{
			name:   "algorithm of the only GPU type",
			scheds: testSchedulers()[1:],
			args:   []string{"set", "algorithm", "ElasticFIFO"},
			want:   "Algorithm of v100 set to ElasticFIFO\n",
			request: fakeRequest{Method: "PUT", Path: "/api/v1/schedulers/v100/algorithm", ContentType: "application/json",
				Body: `{"algorithm":"ElasticFIFO"}`},
		},
		{
			name:   "rate limit in seconds",
			scheds: testSchedulers(),
			args:   []string{"set", "ratelimit", "10", "--gpu-type", "v100"},
			want:   "Rate limit of v100 set to 10s\n",
			request: fakeRequest{Method: "PUT", Path: "/api/v1/schedulers/v100/ratelimit", ContentType: "application/json",
				Body: `{"seconds":10}`},
		},
		{
			name:   "rate limit as a duration, only GPU type",
			scheds: testSchedulers()[:1],
			args:   []string{"set", "ratelimit", "1m30.5s"},
			want:   "Rate limit of a100 set to 90.5s\n",
			request: fakeRequest{Method: "PUT", Path: "/api/v1/schedulers/a100/ratelimit", ContentType: "application/json",
				Body: `{"seconds":90.5}`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, nil, tc.scheds)
			got := mustVoda(t, append(tc.args, "--server", f.URL)...)
			if got != tc.want {
				t.Errorf("stdout = %q, want %q", got, tc.want)
			}
			reqs := f.Requests()
			if diff := cmp.Diff(tc.request, reqs[len(reqs)-1]); diff != "" {
				t.Errorf("last request (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSetErrors(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, nil, testSchedulers())
	wantError(t, []string{"set", "algorithm", "ElasticFIFO", "--server", f.URL},
		"the server schedules several GPU types (a100, v100): choose one with --gpu-type")
	wantError(t, []string{"set", "ratelimit", "5", "--server", f.URL},
		"the server schedules several GPU types (a100, v100): choose one with --gpu-type")
	wantError(t, []string{"set", "algorithm", "Lottery", "--gpu-type", "v100", "--server", f.URL},
		`unknown algorithm "Lottery" (field algorithm)`)
	wantError(t, []string{"set", "algorithm", "SRJF", "--gpu-type", "h100", "--server", f.URL},
		"no scheduler for GPU type h100")
	wantError(t, []string{"set", "ratelimit", "--gpu-type", "v100", "--server", f.URL, "--", "-3"},
		"seconds must be a non-negative number (field seconds)")
	before := len(f.Requests())
	wantError(t, []string{"set", "algorithm", "Tiresias", "--param", "threshold", "--server", f.URL}, `--param "threshold": want KEY=VALUE`)
	wantError(t, []string{"set", "algorithm", "Tiresias", "--param", "a=1", "--param", "a=2", "--server", f.URL}, "--param a is given twice")
	wantError(t, []string{"set", "ratelimit", "soon", "--server", f.URL}, `rate limit "soon" is neither a number of seconds nor a duration`)
	wantError(t, []string{"set", "ratelimit", "NaN", "--server", f.URL}, `rate limit "NaN"`)
	wantError(t, []string{"set", "quotas", "--server", f.URL}, `unknown resource "quotas" for voda set: use algorithm, priority, quota or ratelimit`)
	if n := len(f.Requests()) - before; n != 0 {
		t.Errorf("%d requests after invalid input, want none", n)
	}

	none := newFakeAPI(t, nil, nil)
	wantError(t, []string{"set", "ratelimit", "5", "--server", none.URL}, "the server has no schedulers")
}

func TestServerErrorWithoutJSON(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream connect error", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	wantError(t, []string{"get", "jobs", "--server", srv.URL}, "upstream connect error (HTTP 502)")
}

func TestServerUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	wantError(t, []string{"get", "jobs", "--server", addr},
		"cannot reach the voda server at http://"+addr+": ",
		"is `voda server` running? set --server or VODA_SERVER")
	wantError(t, []string{"get", "jobs", "--server", "ftp://x"}, `--server: server address "ftp://x": scheme "ftp" is not http or https`)
}

// The server flag and environment variable tests change the environment,
// so they do not run in parallel.

func TestServerFlagWinsOverEnv(t *testing.T) {
	flagAPI := newFakeAPI(t, testJobs()[:1], nil)
	envAPI := newFakeAPI(t, testJobs()[1:2], nil)
	t.Setenv(clientconfig.ServerEnv, envAPI.URL)

	if got := mustVoda(t, "get", "jobs", "-o", "name"); got != "mnist-20250601-100000\n" {
		t.Errorf("with $%s only: %q, want the job of the environment's server", clientconfig.ServerEnv, got)
	}
	if got := mustVoda(t, "get", "jobs", "-o", "name", "--server", flagAPI.URL); got != "resnet-20250601-060000\n" {
		t.Errorf("with --server and $%s: %q, want the job of the flag's server", clientconfig.ServerEnv, got)
	}
	if len(flagAPI.Requests()) != 1 || len(envAPI.Requests()) != 1 {
		t.Errorf("requests to the flag's and the environment's server = %d, %d; want 1, 1", len(flagAPI.Requests()), len(envAPI.Requests()))
	}
}

func TestClientFlagsStayOffOtherCommands(t *testing.T) {
	t.Parallel()
	_, _, err := runVoda(t, "", "algorithms", "--server", "x:1")
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --server") {
		t.Errorf("voda algorithms --server: error %v, want unknown flag", err)
	}
	help := mustVoda(t, "get", "jobs", "--help")
	for _, want := range []string{"--server string", "$VODA_SERVER", "--gpu-type", "--live", "--status", "-o, --output", "Examples:"} {
		if !strings.Contains(help, want) {
			t.Errorf("get jobs --help lacks %q:\n%s", want, help)
		}
	}
}
