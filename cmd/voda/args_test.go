package main

import (
	"strings"
	"testing"
)

// A command line without its positional arguments says which are missing
// and how to write them; one with too many names the extra ones. No
// request is sent.
func TestMissingArguments(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, testJobs(), testSchedulers())
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"describe", "job"}, "missing the job's name: voda describe job NAME (voda get jobs lists them)"},
		{[]string{"delete"}, "missing the job's name: voda delete NAME (voda get jobs lists them)"},
		{[]string{"delete", "job"}, "missing the job's name: voda delete NAME (voda get jobs lists them)"},
		{[]string{"set", "algorithm"}, "missing the algorithm's name: voda set algorithm NAME (voda get algorithms lists them)"},
		{[]string{"set", "algorithm", "FIFO", "SRJF"}, `too many arguments ("SRJF"): voda set algorithm NAME`},
		{[]string{"set", "ratelimit"}, "missing the rate limit: voda set ratelimit SECONDS (e.g. voda set ratelimit 30)"},
		{[]string{"set", "priority"}, "missing the job's name and the priority: voda set priority JOB PRIORITY (e.g. voda set priority mnist-elastic-20250601-100000 0)"},
		{[]string{"config", "set-server"}, "missing the Voda API's URL: voda config set-server URL (e.g. voda config set-server https://voda.example.com)"},
		{[]string{"config"}, "voda config needs a subcommand: set-server (see 'voda config --help')"},
		{[]string{"create"}, "missing the manifests: voda create -f FILE (an MPIJob or PyTorchJob in YAML or JSON; -f DIR takes a directory's, -f - standard input)"},
		{[]string{"create", "job.yaml", "b.yaml"}, "voda create takes its manifests with -f: voda create -f job.yaml -f b.yaml"},
	}
	for _, c := range cases {
		args := c.args
		if args[0] != "config" { // config takes no --server
			args = append(args, "--server", f.URL)
		}
		_, _, err := runVoda(t, "", args...)
		if err == nil || err.Error() != c.want {
			t.Errorf("voda %s: error %v\nwant %s", strings.Join(c.args, " "), err, c.want)
		}
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

// As kubectl voda, the messages name the commands as the user types
// them. Not parallel: runPlugin sets the environment.
func TestMissingArgumentsPlugin(t *testing.T) {
	_, err := runPlugin(t, pluginKubeconfig(t), "", "describe", "job")
	if want := "missing the job's name: kubectl voda describe job NAME (kubectl voda get jobs lists them)"; err == nil || err.Error() != want {
		t.Errorf("kubectl voda describe job: %v, want %s", err, want)
	}
}
