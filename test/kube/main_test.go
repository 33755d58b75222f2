package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vodascheduler/voda/internal/kube/kubetest"
	"github.com/vodascheduler/voda/internal/queue/rabbittest"
	"github.com/vodascheduler/voda/internal/store/storetest"
	"github.com/vodascheduler/voda/test/vodatest"
)

// env is the control plane, kwok and the operators, started once for the
// package.
var env *kubetest.Env

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	e, err := kubetest.Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the Kubernetes test stack:", err)
		os.Exit(1)
	}
	env = e
	code := rabbittest.Run(m)
	if err := storetest.Cleanup(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	env.Stop()
	os.Exit(code)
}

// The scheduler runs with the ServiceAccount of deploy/rbac.yaml and
// nothing more, so the manifest is tested along with the code.
var (
	rbacOnce       sync.Once
	rbacKubeconfig string
	rbacErr        error
)

const leaseNamespace = "voda-system"

func schedulerKubeconfig(t *testing.T) string {
	t.Helper()
	rbacOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if rbacErr = env.Apply(ctx, filepath.Join("..", "..", "deploy", "rbac.yaml")); rbacErr != nil {
			return
		}
		rbacKubeconfig, rbacErr = env.ServiceAccountKubeconfig(ctx, leaseNamespace, "voda-scheduler")
	})
	if rbacErr != nil {
		t.Fatal(rbacErr)
	}
	return rbacKubeconfig
}

// bindJobRole grants the scheduler's ServiceAccount the job permissions
// in ns, as an operator does for each of --job-namespaces: the
// RoleBinding of deploy/rbac.yaml with another namespace.
func bindJobRole(t *testing.T, ns string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "voda-scheduler-jobs", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "voda-scheduler-jobs"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "voda-scheduler", Namespace: leaseNamespace}},
	}
	if _, err := env.Client.RbacV1().RoleBindings(ns).Create(t.Context(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// cluster is one test's slice of the shared stack: its own GPU type (so
// its own scheduler and Lease), nodes and namespace.
type cluster struct {
	t       *testing.T
	gpuType string
	ns      string
	nodes   []string
}

// newCluster adds n kwok nodes of gpus GPUs each, labelled with a GPU
// type named after the test, and a namespace for its jobs.
func newCluster(t *testing.T, gpuType string, n, gpus int) *cluster {
	t.Helper()
	ctx := t.Context()
	ns := "t-" + gpuType
	_, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bindJobRole(t, ns)
	nodes, err := env.AddNodes(ctx, gpuType, n, gpus, gpuType+"-node")
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, gpuType: gpuType, ns: ns, nodes: nodes}
}

// serverArgs runs Voda on Kubernetes for the cluster's GPU type, with
// short rate limit, tick and lease times so tests move quickly.
func (c *cluster) serverArgs(extra ...string) []string {
	return append([]string{
		"--cluster", "kubernetes",
		"--kubeconfig", schedulerKubeconfig(c.t),
		"--namespace", c.ns,
		"--lease-namespace", leaseNamespace,
		"--gpu-types", c.gpuType,
		"--rate-limit", "1s",
		"--tick", "5s",
		"--resync", "2s",
		"--leader-elect-lease-duration", "4s",
		"--leader-elect-renew-deadline", "3s",
		"--leader-elect-retry-period", "500ms",
		"--log-level", "debug",
	}, extra...)
}

func (c *cluster) start(extra ...string) *vodatest.Server {
	c.t.Helper()
	return vodatest.StartServer(c.t, c.serverArgs(append([]string{"--data-dir", c.t.TempDir()}, extra...)...)...)
}
