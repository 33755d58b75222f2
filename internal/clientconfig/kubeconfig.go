package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/homedir"

	"github.com/vodascheduler/voda/internal/api/client"
)

// extensionName names the extension of a kubeconfig context that says
// where that cluster's Voda API is (extension).
const extensionName = "vodascheduler.io"

// extension is a kubeconfig context's extension extensionName:
//
//	contexts:
//	- name: prod
//	  context:
//	    cluster: prod
//	    user: alice
//	    extensions:
//	    - name: vodascheduler.io
//	      extension:
//	        server: https://voda.example.com
//	        certificate-authority: /etc/voda/ca.crt
//
// `voda config set-server` and `kubectl voda config set-server` write it
// (SetServer); ServerAddr reads it.
type extension struct {
	Server               string `json:"server"`
	CertificateAuthority string `json:"certificate-authority,omitempty"`
}

// contextExtension reads a context's extension; a context without one is
// the zero value.
func contextExtension(name string, kctx *clientcmdapi.Context) (extension, error) {
	var ext extension
	obj, ok := kctx.Extensions[extensionName]
	if !ok {
		return ext, nil
	}
	u, ok := obj.(*runtime.Unknown)
	if !ok {
		return ext, fmt.Errorf("kubeconfig context %q: extension %s is not an object", name, extensionName)
	}
	dec := json.NewDecoder(bytes.NewReader(u.Raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ext); err != nil {
		return ext, fmt.Errorf("kubeconfig context %q: extension %s: %w", name, extensionName, err)
	}
	return ext, nil
}

// kubeconfigRules are the rules kubectl loads a kubeconfig by: path
// (--kubeconfig) when given, else the files of $KUBECONFIG, else
// ~/.kube/config.
func kubeconfigRules(path string) *clientcmd.ClientConfigLoadingRules {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		// clientcmd finds ~ when the program starts; look it up now.
		rules.Precedence = []string{filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
	}
	rules.ExplicitPath = path
	rules.MigrationRules = nil // never write a file
	rules.WarnIfAllMissing = false
	return rules
}

// loadKubeContext reads the kubeconfig (kubeconfigRules) and returns it
// with the context named context, else the current one. No kubeconfig, no
// current context or a dangling current context is a nil context and no
// error (kubectl fails on the last, but Voda may not need one); a
// kubeconfig that does not parse, a missing --kubeconfig and a --context
// the kubeconfig does not have are errors.
func loadKubeContext(path, context string) (*clientcmdapi.Config, string, *clientcmdapi.Context, error) {
	rules := kubeconfigRules(path)
	raw, err := rules.Load()
	if err != nil {
		if path != "" {
			return nil, "", nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		return nil, "", nil, fmt.Errorf("kubeconfig: %w", err)
	}
	name := context
	if name == "" {
		name = raw.CurrentContext
	}
	if name == "" {
		return raw, "", nil, nil
	}
	kctx := raw.Contexts[name]
	if kctx == nil && context != "" {
		return nil, "", nil, fmt.Errorf("--context %q: the kubeconfig (%s) has no such context", context, kubeconfigFiles(rules))
	}
	return raw, name, kctx, nil
}

// kubeconfigFiles names the files loadKubeContext read, for errors.
func kubeconfigFiles(rules *clientcmd.ClientConfigLoadingRules) string {
	if rules.ExplicitPath != "" {
		return rules.ExplicitPath
	}
	return strings.Join(rules.Precedence, string(filepath.ListSeparator))
}

// SetServer records server (and caFile, made absolute) as the Voda API of
// the kubeconfig context (the Options' Context, else the current one),
// rewriting the kubeconfig file that defines the context and nothing else
// in it. It returns the context's name and the server as it was recorded
// (the client's base URL). The Options' Kubeconfig chooses the file as
// for reading; a kubeconfig without the context is an error.
func (o Options) SetServer(server, caFile string) (context, recorded string, err error) {
	c, err := client.New(server, nil)
	if err != nil {
		return "", "", fmt.Errorf("URL: %w", err)
	}
	if caFile != "" {
		abs, err := filepath.Abs(caFile)
		if err != nil {
			return "", "", fmt.Errorf("--certificate-authority: %w", err)
		}
		caFile = abs
	}
	po := clientcmd.NewDefaultPathOptions()
	po.LoadingRules = kubeconfigRules(o.Kubeconfig)
	po.LoadingRules.MigrationRules = nil
	cfg, err := po.GetStartingConfig()
	if err != nil {
		return "", "", fmt.Errorf("kubeconfig: %w", err)
	}
	name := o.Context
	if name == "" {
		name = cfg.CurrentContext
	}
	kctx := cfg.Contexts[name]
	switch {
	case kctx != nil:
	case o.Context != "":
		return "", "", fmt.Errorf("--context %q: the kubeconfig (%s) has no such context", o.Context, kubeconfigFiles(po.LoadingRules))
	case len(cfg.Contexts) == 0:
		return "", "", fmt.Errorf("the kubeconfig (%s) has no context to record the server in: without Kubernetes, give --server or set $%s instead",
			kubeconfigFiles(po.LoadingRules), ServerEnv)
	case name == "":
		return "", "", errors.New("the kubeconfig has no current context: choose one with --context")
	default:
		return "", "", fmt.Errorf("the kubeconfig's current context %q does not exist: choose one with --context", name)
	}
	raw, err := json.Marshal(extension{Server: c.BaseURL(), CertificateAuthority: caFile})
	if err != nil {
		return "", "", fmt.Errorf("encode the kubeconfig extension %s: %w", extensionName, err)
	}
	if kctx.Extensions == nil {
		kctx.Extensions = map[string]runtime.Object{}
	}
	kctx.Extensions[extensionName] = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
	if err := clientcmd.ModifyConfig(po, *cfg, false); err != nil {
		return "", "", fmt.Errorf("write kubeconfig: %w", err)
	}
	return name, c.BaseURL(), nil
}
