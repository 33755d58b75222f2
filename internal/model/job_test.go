package model

import (
	"strings"
	"testing"
	"time"
)

func validSpec() JobSpec {
	return JobSpec{
		Name:             "job-a",
		GPUType:          "v100",
		MinWorkers:       1,
		MaxWorkers:       4,
		RequestedWorkers: 2,
		Priority:         0,
		Epochs:           10,
		SubmitTime:       time.Unix(100, 0),
	}
}

func TestJobSpecValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*JobSpec)
		// field is the prefix the error must start with; "" means valid.
		field string
	}{
		{name: "valid", modify: func(*JobSpec) {}},
		{name: "rigid job", modify: func(s *JobSpec) { s.MinWorkers, s.MaxWorkers, s.RequestedWorkers = 3, 3, 3 }},
		{name: "requested at min", modify: func(s *JobSpec) { s.RequestedWorkers = 1 }},
		{name: "requested at max", modify: func(s *JobSpec) { s.RequestedWorkers = 4 }},
		{name: "zero epochs means unknown", modify: func(s *JobSpec) { s.Epochs = 0 }},
		{name: "low priority", modify: func(s *JobSpec) { s.Priority = 7 }},
		{name: "empty name", modify: func(s *JobSpec) { s.Name = "" }, field: "name:"},
		{name: "zero max", modify: func(s *JobSpec) { s.MaxWorkers = 0 }, field: "maxWorkers:"},
		{name: "negative max", modify: func(s *JobSpec) { s.MaxWorkers = -2 }, field: "maxWorkers:"},
		{name: "zero min", modify: func(s *JobSpec) { s.MinWorkers = 0 }, field: "minWorkers:"},
		{name: "negative min", modify: func(s *JobSpec) { s.MinWorkers = -1 }, field: "minWorkers:"},
		{name: "min above max", modify: func(s *JobSpec) { s.MinWorkers, s.RequestedWorkers = 5, 5 }, field: "minWorkers:"},
		{name: "requested below min", modify: func(s *JobSpec) { s.MinWorkers = 2; s.RequestedWorkers = 1 }, field: "requestedWorkers:"},
		{name: "requested above max", modify: func(s *JobSpec) { s.RequestedWorkers = 5 }, field: "requestedWorkers:"},
		{name: "requested zero", modify: func(s *JobSpec) { s.RequestedWorkers = 0 }, field: "requestedWorkers:"},
		{name: "negative priority", modify: func(s *JobSpec) { s.Priority = -1 }, field: "priority:"},
		{name: "negative epochs", modify: func(s *JobSpec) { s.Epochs = -3 }, field: "epochs:"},
		// Validate reports the first rule broken, in its documented order.
		{name: "empty name wins over bad workers", modify: func(s *JobSpec) { s.Name = ""; s.MaxWorkers = 0 }, field: "name:"},
		{name: "max checked before min", modify: func(s *JobSpec) { s.MinWorkers, s.MaxWorkers = 0, 0 }, field: "maxWorkers:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := validSpec()
			tc.modify(&s)
			err := s.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", s, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error naming %q", s, tc.field)
			}
			if !strings.HasPrefix(err.Error(), tc.field) {
				t.Errorf("Validate() = %q, want it to start with %q", err, tc.field)
			}
		})
	}
}

func TestStatusDone(t *testing.T) {
	tests := []struct {
		s    Status
		want bool
	}{
		{StatusSubmitted, false},
		{StatusWaiting, false},
		{StatusRunning, false},
		{StatusCompleted, true},
		{StatusFailed, true},
		{StatusCanceled, true},
		{Status(""), false},
		{Status("completed"), false}, // statuses are case-sensitive
	}
	for _, tc := range tests {
		if got := tc.s.Done(); got != tc.want {
			t.Errorf("Status(%q).Done() = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestEstimatesSpeedupAt(t *testing.T) {
	curve := []float64{0, 1, 1.8, 2.5}
	tests := []struct {
		name  string
		curve []float64
		k     int
		want  float64
	}{
		{name: "nil curve is linear", curve: nil, k: 5, want: 5},
		{name: "nil curve at 1", curve: nil, k: 1, want: 1},
		{name: "empty curve is linear", curve: []float64{}, k: 3, want: 3},
		{name: "one-entry curve is linear", curve: []float64{0}, k: 7, want: 7},
		{name: "one-entry curve ignores its value", curve: []float64{42}, k: 2, want: 2},
		{name: "inside the curve", curve: curve, k: 2, want: 1.8},
		{name: "at one", curve: curve, k: 1, want: 1},
		{name: "last entry", curve: curve, k: 3, want: 2.5},
		{name: "just beyond the end", curve: curve, k: 4, want: 2.5},
		{name: "far beyond the end", curve: curve, k: 1000, want: 2.5},
		{name: "two-entry curve stays at 1", curve: []float64{0, 1}, k: 8, want: 1},
		{name: "zero GPUs", curve: curve, k: 0, want: 0},
		{name: "negative GPUs", curve: curve, k: -2, want: 0},
		{name: "zero GPUs on a nil curve", curve: nil, k: 0, want: 0},
		{name: "negative GPUs on a nil curve", curve: nil, k: -1, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := Estimates{RemainingSeconds: -1, Speedup: tc.curve}
			if got := e.SpeedupAt(tc.k); got != tc.want {
				t.Errorf("SpeedupAt(%d) with curve %v = %v, want %v", tc.k, tc.curve, got, tc.want)
			}
		})
	}
}

func TestBefore(t *testing.T) {
	t0 := time.Unix(1000, 0)
	job := func(name string, at time.Time) *Job {
		return &Job{Spec: JobSpec{Name: name, SubmitTime: at}}
	}
	tests := []struct {
		name string
		a, b *Job
		want bool
	}{
		{name: "earlier submit first", a: job("z", t0), b: job("a", t0.Add(time.Second)), want: true},
		{name: "later submit second", a: job("a", t0.Add(time.Second)), b: job("z", t0), want: false},
		{name: "tie broken by name", a: job("a", t0), b: job("b", t0), want: true},
		{name: "tie broken by name, reversed", a: job("b", t0), b: job("a", t0), want: false},
		{name: "same job is not before itself", a: job("a", t0), b: job("a", t0), want: false},
		// Equal instants in different locations are a tie, not ordered by
		// the location or the monotonic reading.
		{name: "same instant, other location", a: job("b", t0), b: job("a", t0.In(time.FixedZone("x", 3600))), want: false},
		{name: "same instant, other location, reversed", a: job("a", t0.In(time.FixedZone("x", 3600))), b: job("b", t0), want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Before(tc.a, tc.b); got != tc.want {
				t.Errorf("Before(%s@%v, %s@%v) = %v, want %v", tc.a.Spec.Name, tc.a.Spec.SubmitTime, tc.b.Spec.Name, tc.b.Spec.SubmitTime, got, tc.want)
			}
		})
	}
}
