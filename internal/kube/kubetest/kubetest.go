package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	module = "github.com/vodascheduler/voda"

	// AcceleratorLabel is the node label that names a node's GPU type.
	AcceleratorLabel = "vodascheduler/accelerator"
	// GPUResource is the extended resource fake nodes advertise.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	// KwokNodeAnnotation marks the nodes kwok manages.
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	// CompleteAnnotation makes kwok complete a Running pod (exit code 0,
	// phase Succeeded) after the duration it holds, e.g. "20s".
	CompleteAnnotation = "pod-complete.stage.kwok.x-k8s.io/delay"
	// FailAnnotation makes kwok fail a Running pod (exit code 1, phase
	// Failed) after the duration it holds.
	FailAnnotation = "pod-fail.stage.kwok.x-k8s.io/delay"

	// startTimeout bounds Main's start, which may include the first build
	// of the tools (about ten minutes on two cores).
	startTimeout = 30 * time.Minute
	// readyTimeout bounds the waits of AddNodes and DeleteNode.
	readyTimeout = time.Minute
)

// Env is a running stack.
type Env struct {
	// Dir is the stack's folder: kubeconfig, env, logs/, pids/.
	Dir string
	// Kubeconfig is the admin kubeconfig (group system:masters).
	Kubeconfig string
	// Config, Client and Dynamic use the admin kubeconfig.
	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Root is the repository's root folder.
	Root string
	// Vars holds DIR/env: the stack's ports and URLs (APISERVER, ETCD, ...).
	Vars map[string]string

	stopOnce sync.Once
	nodesMu  sync.Mutex
}

// RepoRoot returns the root folder of the module github.com/vodascheduler/voda:
// the nearest folder, from the working directory up, whose go.mod declares it
// (falling back to this source file's location).
func RepoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for {
			if isRoot(dir) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("kubetest: no go.mod of module %s found above the working directory", module)
}

func isRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == module
		}
	}
	return false
}

// toolsBin returns the folder of the binaries hack/tools.sh builds:
// $VODA_TOOLS/bin, or <root>/.cache/tools/bin.
func toolsBin(root string) string {
	if t := os.Getenv("VODA_TOOLS"); t != "" {
		return filepath.Join(t, "bin")
	}
	return filepath.Join(root, ".cache", "tools", "bin")
}

// ToolPath returns the path of a binary hack/tools.sh builds (kubectl,
// helm, ...) in $VODA_TOOLS/bin or <root>/.cache/tools/bin, or an error
// naming the command that builds it when it is not there.
func ToolPath(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(toolsBin(root), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("kubetest: %s not built (run hack/tools.sh): %w", name, err)
	}
	return p, nil
}

// Start starts a stack in a new temporary folder with hack/cluster.sh (whose
// progress, including a first-time build of the tools, goes to os.Stderr)
// and connects to it. Call Stop when done. The stack is also stopped by a
// reaper process if this process ends without calling Stop.
func Start(ctx context.Context) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "voda-kube-")
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	e := &Env{Dir: dir, Root: root, Kubeconfig: filepath.Join(dir, "kubeconfig")}

	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "cluster.sh"), "start", dir)
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "VODA_CLUSTER_OWNER_PID="+strconv.Itoa(os.Getpid()))
	if err := cmd.Run(); err != nil {
		// cluster.sh stops what it started when it fails; a cancelled run
		// may not have had the chance.
		e.Stop()
		return nil, fmt.Errorf("kubetest: hack/cluster.sh start %s: %w", dir, err)
	}
	if err := e.connect(); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Env) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubetest: loading %s: %w", e.Kubeconfig, err)
	}
	cfg.QPS = 200
	cfg.Burst = 400
	cfg.UserAgent = "kubetest"
	e.Config = cfg
	if e.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	if e.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	e.Vars = map[string]string{}
	if b, err := os.ReadFile(filepath.Join(e.Dir, "env")); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
				e.Vars[k] = v
			}
		}
	}
	return nil
}

// Stop stops the stack and removes its folder, unless VODA_KEEP_CLUSTER=1:
// then the folder (logs, kubeconfig) is kept and its path printed. It is
// safe to call more than once.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(e.Root, "hack", "cluster.sh"), "stop", e.Dir)
		cmd.Stdout = os.Stderr
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "kubetest: hack/cluster.sh stop %s: %v\n", e.Dir, err)
		}
		if os.Getenv("VODA_KEEP_CLUSTER") == "1" {
			fmt.Fprintf(os.Stderr, "kubetest: keeping the stack's folder %s (VODA_KEEP_CLUSTER=1)\n", e.Dir)
			return
		}
		if err := os.RemoveAll(e.Dir); err != nil {
			fmt.Fprintf(os.Stderr, "kubetest: %v\n", err)
		}
	})
}

// Main is for a TestMain: it starts one stack, stores it in *env, runs the
// tests, stops the stack and exits with the tests' code. If the stack cannot
// start it exits non-zero with the error: the tests fail, never skip.
func Main(m *testing.M, env **Env) {
	os.Exit(run(m, env))
}

func run(m *testing.M, env **Env) int {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	e, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: kubetest: cannot start the Kubernetes test stack: %v\n", err)
		return 1
	}
	defer e.Stop()
	*env = e
	code := m.Run()
	if code != 0 && os.Getenv("VODA_KEEP_CLUSTER") != "1" {
		fmt.Fprintf(os.Stderr, "kubetest: set VODA_KEEP_CLUSTER=1 to keep the stack's logs\n")
	}
	return code
}

// Kubectl runs the built kubectl with the admin kubeconfig and returns its
// combined output. The error includes the output.
func (e *Env) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, e.ToolPath("kubectl"), append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// ToolPath is the path of a binary hack/tools.sh built (kubectl, ...).
func (e *Env) ToolPath(name string) string {
	return filepath.Join(toolsBin(e.Root), name)
}

// Apply applies a manifest file or folder (kubectl apply --server-side).
func (e *Env) Apply(ctx context.Context, path string) error {
	_, err := e.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", path)
	return err
}

// AddNodes creates n kwok fake nodes named <prefix>-<i>, numbered on from
// the highest existing <prefix>-<i> node (so <prefix>-1 ... <prefix>-n on
// the first call), each with gpus nvidia.com/gpu, 64 CPUs, 512Gi memory and
// 110 pods, labelled vodascheduler/accelerator=<gpuType>, and waits until
// all are Ready. It returns their names.
func (e *Env) AddNodes(ctx context.Context, gpuType string, n, gpus int, prefix string) ([]string, error) {
	e.nodesMu.Lock()
	defer e.nodesMu.Unlock()
	list, err := e.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubetest: listing nodes: %w", err)
	}
	last := 0
	for _, node := range list.Items {
		if rest, ok := strings.CutPrefix(node.Name, prefix+"-"); ok {
			if i, err := strconv.Atoi(rest); err == nil && i > last {
				last = i
			}
		}
	}
	resources := corev1.ResourceList{
		GPUResource:           *resource.NewQuantity(int64(gpus), resource.DecimalSI),
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	var names []string
	for i := last + 1; i <= last+n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Labels: map[string]string{
					"type":                   "kwok",
					"kubernetes.io/hostname": name,
					"kubernetes.io/os":       "linux",
					"kubernetes.io/arch":     "amd64",
					AcceleratorLabel:         gpuType,
				},
				Annotations: map[string]string{
					KwokNodeAnnotation:             "fake",
					"node.alpha.kubernetes.io/ttl": "0",
				},
			},
			Status: corev1.NodeStatus{
				Capacity:    resources.DeepCopy(),
				Allocatable: resources.DeepCopy(),
			},
		}
		if _, err := e.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return names, fmt.Errorf("kubetest: creating node %s: %w", name, err)
		}
		names = append(names, name)
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
			node, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady {
					return c.Status == corev1.ConditionTrue, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return names, fmt.Errorf("kubetest: node %s not Ready (kwok log: %s): %w", name, e.LogPath("kwok"), err)
		}
	}
	return names, nil
}

// DeleteNode deletes a node and waits until it is gone. Its pods stay bound
// to the missing node until kube-controller-manager's pod GC deletes them.
func (e *Env) DeleteNode(ctx context.Context, name string) error {
	err := e.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubetest: deleting node %s: %w", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("kubetest: node %s not gone: %w", name, err)
	}
	return nil
}

// ServiceAccountKubeconfig creates namespace and ServiceAccount name in it if
// they are missing, gets a 24-hour token for it from the TokenRequest API and
// writes a kubeconfig with that token into Dir. It returns the file's path.
// A component run with it has exactly the RBAC permissions bound to that
// ServiceAccount (e.g. by a manifest applied with Apply).
func (e *Env) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("kubetest: creating namespace %s: %w", namespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := e.Client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("kubetest: creating ServiceAccount %s/%s: %w", namespace, name, err)
	}
	expiry := int64((24 * time.Hour).Seconds())
	tr, err := e.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("kubetest: token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	user := "system:serviceaccount:" + namespace + ":" + name
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["voda-test"] = &clientcmdapi.Cluster{
		Server:                   e.Config.Host,
		CertificateAuthorityData: e.Config.CAData,
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["voda-test"] = &clientcmdapi.Context{Cluster: "voda-test", AuthInfo: user, Namespace: namespace}
	cfg.CurrentContext = "voda-test"
	path := filepath.Join(e.Dir, "kubeconfig-"+namespace+"-"+name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("kubetest: %w", err)
	}
	return path, nil
}

// UserToken returns the static bearer token of a user of the stack's
// token file: admin (group system:masters), or alice, bob (group
// developers) and carol (group operators), who may do nothing until a
// test binds them a role.
func (e *Env) UserToken(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(e.Dir, "pki", "tokens.csv"))
	if err != nil {
		return "", fmt.Errorf("kubetest: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		fields := strings.Split(strings.TrimSpace(line), ",")
		if len(fields) >= 2 && fields[1] == name {
			return fields[0], nil
		}
	}
	return "", fmt.Errorf("kubetest: no user %q in the token file", name)
}

// ServiceAccountToken returns a token of ServiceAccount namespace/name
// valid for an hour, from the TokenRequest API.
func (e *Env) ServiceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	expiry := int64(time.Hour.Seconds())
	tr, err := e.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("kubetest: token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// LogPath returns the path of a component's log (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok, mpi-operator,
// training-operator).
func (e *Env) LogPath(component string) string {
	return filepath.Join(e.Dir, "logs", component+".log")
}

// PodLogFile is the file kwok serves as every pod's log (pods/log):
// hack/cluster.sh's kwok reads it in the CRI log format, one line per
// entry: "<RFC 3339 time> stdout F <text>". A test appends to it.
func (e *Env) PodLogFile() string {
	return filepath.Join(e.Dir, "kwok", "pod.log")
}

// CreateNamespace creates a namespace and waits until its default
// ServiceAccount exists (pods are rejected before that).
func (e *Env) CreateNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubetest: creating namespace %s: %w", name, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("kubetest: default ServiceAccount of namespace %s: %w", name, err)
	}
	return nil
}
