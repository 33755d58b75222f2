package kube

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/internal/jobspec"
	"github.com/vodascheduler/voda/internal/kube"
	"github.com/vodascheduler/voda/internal/model"
	"github.com/vodascheduler/voda/internal/scheduler"
)

// A start asked for from an older copy of a job (the resync race that
// re-admitted Completed jobs) must not create the object of a job whose
// stored status is terminal: on Kubernetes that would run it again.
func TestDefect_EndedJobIsNotCreatedAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec, err := jobspec.Parse(mpiJob.manifest("ended", "ended-gpu", 1, 1, time.Hour), jobspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	name := "ended-20261123-120000"
	spec.Rename(name)
	manifest, err := spec.JSON()
	if err != nil {
		t.Fatal(err)
	}
	src := func(_ context.Context, got string) (kube.Job, error) {
		if got != name {
			return kube.Job{}, fmt.Errorf("job %s: not found", got)
		}
		return kube.Job{Kind: spec.Kind, Manifest: manifest, Status: model.StatusCompleted}, nil
	}
	c, err := kube.NewClient(kube.Options{Config: env.Config, Jobs: src})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pool := c.Pool("ended-gpu")
	if err := pool.Track(name, "", 0, 1, 1); err != nil {
		t.Fatal(err)
	}
	start := scheduler.Action{Kind: scheduler.Start, Job: name, To: model.JobPlacement{{Node: "nowhere", Workers: 1}}}
	err = pool.Apply(ctx, start)
	if err == nil || !strings.Contains(err.Error(), "already ended") {
		t.Fatalf("start of a Completed job: %v, want a refusal", err)
	}
	_, err = env.Dynamic.Resource(kube.MPIJobResource).Namespace(kube.DefaultNamespace).Get(ctx, name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("the MPIJob of a Completed job exists (get: %v)", err)
	}
}
