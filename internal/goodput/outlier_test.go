package goodput

import "testing"

// Step times claimed far faster than the application's other sources ran
// are held back from the job's fit and its application's until claimed
// ConfirmObservations times; claims within OutlierRatio count at once.
func TestStepTimeOutliersWaitForConfirmation(t *testing.T) {
	history := []Config{{Nodes: 1, Workers: 1, Local: 32, Seconds: 10, N: 10}, {Nodes: 1, Workers: 2, Local: 32, Seconds: 12, N: 10}}
	report := func(seconds float64, n int) []Config {
		return []Config{{Nodes: 1, Workers: 4, Local: 32, Seconds: seconds * float64(n), N: n}}
	}
	for _, tc := range []struct {
		name      string
		step      float64 // seconds per step the job claims on 4 replicas
		confirmed int     // the report from which its claim counts
	}{
		{"honest, a little faster per replica", 0.5, 1},
		{"a liar, 100 times faster", 0.01, ConfirmObservations},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEstimator()
			e.SetApp("app", history)
			appBefore, _ := e.AppParams("app")
			for r := 1; r <= ConfirmObservations+1; r++ {
				e.SetJob("job", "app", report(tc.step, 5*r))
				p, ok := e.Params("job")
				if !ok {
					t.Fatal("no params")
				}
				app, _ := e.AppParams("app")
				counted := r >= tc.confirmed
				if moved := p != app; moved != counted {
					t.Fatalf("report %d: the job's own fit used %v, want %v", r, moved, counted)
				}
				if !counted && app != appBefore {
					t.Fatalf("report %d: an unconfirmed claim moved the application's fit", r)
				}
			}
		})
	}
	// A job that ran honestly, then claims steps 100 times faster on the
	// same configuration: its mean does not move until confirmed.
	e := NewEstimator()
	e.SetApp("app", history)
	e.SetJob("job", "app", report(0.5, 5))
	want := e.AppConfigs("app")
	for r := 1; r < ConfirmObservations; r++ {
		e.SetJob("job", "app", []Config{{Nodes: 1, Workers: 4, Local: 32, Seconds: 2.5 + 0.01*float64(100*r), N: 5 + 100*r}})
	}
	got := e.AppConfigs("app")
	if len(got) != len(want) || got[len(got)-1] != want[len(want)-1] {
		t.Errorf("the application's record moved to %+v from %+v on unconfirmed claims", got[len(got)-1], want[len(want)-1])
	}
}
