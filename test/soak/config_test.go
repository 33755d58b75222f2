package soak

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// config is one run's size (doc.go lists the variables).
type config struct {
	jobs        int
	duration    time.Duration
	burst       int
	speed       float64
	nodes       string
	maxFinished int
	dashboards  int
	stalled     int
	reporters   int
	interval    time.Duration
	// simReports keeps the simulated cluster's own progress reports,
	// every 10 simulated seconds for each running job: at --speed 500,
	// 50 a second of wall time per job, a load no real job makes.
	simReports bool
}

// smallConfig is the run of `make test`: a few thousand jobs, retention
// reached within the first fifth, under two minutes on two busy cores.
var smallConfig = config{
	jobs:        2000,
	duration:    40 * time.Second,
	burst:       200,
	speed:       500,
	nodes:       "v100=64x8",
	maxFinished: 500,
	dashboards:  3,
	stalled:     1,
	reporters:   3,
	interval:    5 * time.Second,
}

// configFromEnv is smallConfig with what the environment sets.
func configFromEnv() (config, error) {
	c := smallConfig
	ints := []struct {
		name string
		v    *int
		min  int
	}{
		{"VODA_SOAK_JOBS", &c.jobs, 1},
		{"VODA_SOAK_BURST", &c.burst, 1},
		{"VODA_SOAK_MAX_FINISHED", &c.maxFinished, 1},
		{"VODA_SOAK_DASHBOARDS", &c.dashboards, 1},
		{"VODA_SOAK_STALLED", &c.stalled, 0},
		{"VODA_SOAK_REPORTERS", &c.reporters, 0},
	}
	for _, e := range ints {
		s, ok := os.LookupEnv(e.name)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < e.min {
			return c, fmt.Errorf("%s=%q: want a whole number of at least %d", e.name, s, e.min)
		}
		*e.v = n
	}
	durations := []struct {
		name string
		v    *time.Duration
	}{
		{"VODA_SOAK_DURATION", &c.duration},
		{"VODA_SOAK_INTERVAL", &c.interval},
	}
	for _, e := range durations {
		s, ok := os.LookupEnv(e.name)
		if !ok {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("%s=%q: want a positive duration such as 10m", e.name, s)
		}
		*e.v = d
	}
	if s, ok := os.LookupEnv("VODA_SOAK_SPEED"); ok {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			return c, fmt.Errorf("VODA_SOAK_SPEED=%q: want a positive number", s)
		}
		c.speed = f
	}
	if s, ok := os.LookupEnv("VODA_SOAK_NODES"); ok {
		if !strings.HasPrefix(s, "v100=") || strings.Contains(s, ",") {
			return c, fmt.Errorf("VODA_SOAK_NODES=%q: want v100=NODESxGPUS, the GPU type the jobs ask for", s)
		}
		c.nodes = s
	}
	if s, ok := os.LookupEnv("VODA_SOAK_SIM_REPORTS"); ok {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return c, fmt.Errorf("VODA_SOAK_SIM_REPORTS=%q: want true or false", s)
		}
		c.simReports = b
	}
	return c, nil
}

func (c config) String() string {
	return fmt.Sprintf("%d jobs over %v (bursts of %d), --speed %g, --sim-nodes %s, --max-finished-jobs %d, "+
		"%d dashboards, %d stalled streams a wave, %d reporters, the simulated cluster's reports %v, a sample every %v",
		c.jobs, c.duration, c.burst, c.speed, c.nodes, c.maxFinished, c.dashboards, c.stalled, c.reporters, c.simReports, c.interval)
}

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    func(*config)
		wantErr bool
	}{
		{name: "defaults", want: func(*config) {}},
		{name: "full size", env: map[string]string{"VODA_SOAK_JOBS": "100000", "VODA_SOAK_DURATION": "10m",
			"VODA_SOAK_SPEED": "250.5", "VODA_SOAK_STALLED": "0", "VODA_SOAK_SIM_REPORTS": "1", "VODA_SOAK_NODES": "v100=128x8"},
			want: func(c *config) {
				c.jobs, c.duration, c.speed, c.stalled, c.simReports, c.nodes = 100000, 10*time.Minute, 250.5, 0, true, "v100=128x8"
			}},
		{name: "another GPU type", env: map[string]string{"VODA_SOAK_NODES": "a100=4x8"}, wantErr: true},
		{name: "no jobs", env: map[string]string{"VODA_SOAK_JOBS": "0"}, wantErr: true},
		{name: "not a number", env: map[string]string{"VODA_SOAK_DASHBOARDS": "many"}, wantErr: true},
		{name: "no unit", env: map[string]string{"VODA_SOAK_DURATION": "600"}, wantErr: true},
		{name: "negative speed", env: map[string]string{"VODA_SOAK_SPEED": "-1"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{"VODA_SOAK_JOBS", "VODA_SOAK_DURATION", "VODA_SOAK_BURST", "VODA_SOAK_SPEED",
				"VODA_SOAK_NODES", "VODA_SOAK_MAX_FINISHED", "VODA_SOAK_DASHBOARDS", "VODA_SOAK_STALLED",
				"VODA_SOAK_REPORTERS", "VODA_SOAK_INTERVAL", "VODA_SOAK_SIM_REPORTS"} {
				t.Setenv(name, "")
				os.Unsetenv(name) // Setenv restores the caller's value afterwards
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			got, err := configFromEnv()
			if tc.wantErr {
				if err == nil {
					t.Fatalf("configFromEnv() = %v, want an error", got)
				}
				return
			}
			want := smallConfig
			tc.want(&want)
			if err != nil || got != want {
				t.Fatalf("configFromEnv() = %v, %v; want %v", got, err, want)
			}
		})
	}
}
