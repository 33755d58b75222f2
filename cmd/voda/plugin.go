package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/api/client"
)

// The same binary is Voda's kubectl plugin (docs/cli.md): installed, or
// linked, as kubectl-voda on the PATH, kubectl runs it for `kubectl voda
// ...`; as kubectl_complete-voda, kubectl runs it to complete a `kubectl
// voda` command line.
const (
	pluginName         = "kubectl-voda"
	pluginCompleteName = "kubectl_complete-voda"
)

// vodaExtensionName names the extension of a kubeconfig context that says
// where that cluster's Voda API is (vodaExtension).
const vodaExtensionName = "vodascheduler.io"

// vodaExtension is a kubeconfig context's extension vodaExtensionName:
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
// `kubectl voda config set-server` writes it.
type vodaExtension struct {
	Server               string `json:"server"`
	CertificateAuthority string `json:"certificate-authority,omitempty"`
}

// programMode tells from the name the program was run by whether it is
// the plugin (kubectl-voda, maybe with an extension such as .exe) or the
// plugin's completion helper.
func programMode(arg0 string) (plugin, complete bool) {
	base := strings.TrimSuffix(filepath.Base(arg0), filepath.Ext(arg0))
	switch base {
	case pluginName:
		return true, false
	case pluginCompleteName:
		return true, true
	}
	return false, false
}

// newPluginCommand is the command tree of `kubectl voda`: the client
// commands, taking the server, the credentials and the namespace from the
// kubeconfig context as kubectl does, and `config set-server`.
func newPluginCommand() *cobra.Command {
	o := &clientOptions{plugin: true}
	root := &cobra.Command{
		Use:   pluginName,
		Short: "Voda's command-line client as a kubectl plugin",
		Long: `kubectl voda submits, lists, describes and deletes Voda training jobs and
changes Voda's schedulers, like the voda command, with kubectl's habits: the
current kubeconfig context (or --context) gives the credentials, the
namespace (-n to choose another, -A for all) and the address of the
cluster's Voda API, which 'kubectl voda config set-server' records in the
context. --server and $VODA_SERVER still take precedence.`,
		Example: `  # Once per context: where this cluster's Voda API is
  kubectl voda config set-server https://voda.example.com

  kubectl voda create -f mnist-elastic.yaml
  kubectl voda get jobs
  kubectl voda get jobs -A -o wide
  kubectl voda describe job mnist-elastic-20250601-100000`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl voda"},
	}
	cmds := newClientCommandsFor(o)
	cmds = append(cmds, newPluginConfigCommand(o))
	root.AddCommand(cmds...)
	asKubectlVoda(root)
	return root
}

// asKubectlVoda rewrites the examples of c and its subcommands from
// "voda ..." to "kubectl voda ...".
func asKubectlVoda(c *cobra.Command) {
	lines := strings.Split(c.Example, "\n")
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if rest, ok := strings.CutPrefix(trimmed, "voda "); ok {
			lines[i] = l[:len(l)-len(trimmed)] + "kubectl voda " + rest
		}
		lines[i] = strings.ReplaceAll(lines[i], "| voda ", "| kubectl voda ")
		lines[i] = strings.ReplaceAll(lines[i], "$(voda ", "$(kubectl voda ")
	}
	c.Example = strings.Join(lines, "\n")
	for _, sub := range c.Commands() {
		asKubectlVoda(sub)
	}
}

// newPluginConfigCommand is `kubectl voda config`.
func newPluginConfigCommand(o *clientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Record where a context's Voda API is",
		Args:  cobra.ArbitraryArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return unknownResource(cmd, args) },
	}
	var caFile string
	set := &cobra.Command{
		Use:   "set-server URL",
		Short: "Record the Voda API of the kubeconfig context",
		Long: `Record in the current kubeconfig context (or --context) where that
cluster's Voda API is, as the context's extension vodascheduler.io, so that
later commands in the context find it. The kubeconfig file that defines the
context is rewritten; nothing else in it changes. The context's token is
sent only to an https or loopback server.`,
		Example: `  voda config set-server https://voda.example.com
  voda config set-server https://voda.example.com --certificate-authority ca.crt --context prod`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setContextServer(cmd, o, args[0], caFile)
		},
	}
	set.Flags().StringVar(&caFile, "certificate-authority", "", "PEM file of the certificate authority that signed the server's certificate (default: the system's roots)")
	cmd.AddCommand(set)
	return cmd
}

// setContextServer records server (and caFile) in the kubeconfig context.
func setContextServer(cmd *cobra.Command, o *clientOptions, server, caFile string) error {
	c, err := client.New(server, nil)
	if err != nil {
		return fmt.Errorf("URL: %w", err)
	}
	if caFile != "" {
		abs, err := filepath.Abs(caFile)
		if err != nil {
			return fmt.Errorf("--certificate-authority: %w", err)
		}
		caFile = abs
	}
	po := clientcmd.NewDefaultPathOptions()
	po.LoadingRules = kubeconfigRules(o.kubeconfig)
	po.LoadingRules.MigrationRules = nil
	cfg, err := po.GetStartingConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	name := o.context
	if name == "" {
		name = cfg.CurrentContext
	}
	kctx := cfg.Contexts[name]
	if kctx == nil {
		if name == "" {
			return errors.New("the kubeconfig has no current context: choose one with --context")
		}
		return fmt.Errorf("the kubeconfig has no context %q", name)
	}
	raw, err := json.Marshal(vodaExtension{Server: c.BaseURL(), CertificateAuthority: caFile})
	if err != nil {
		return err
	}
	if kctx.Extensions == nil {
		kctx.Extensions = map[string]runtime.Object{}
	}
	kctx.Extensions[vodaExtensionName] = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
	if err := clientcmd.ModifyConfig(po, *cfg, false); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Context %q uses the Voda API at %s.\n", name, c.BaseURL())
	return nil
}

// contextVoda reads a context's vodaExtension; a context without one is
// the zero value.
func contextVoda(name string, kctx *clientcmdapi.Context) (vodaExtension, error) {
	var ext vodaExtension
	obj, ok := kctx.Extensions[vodaExtensionName]
	if !ok {
		return ext, nil
	}
	u, ok := obj.(*runtime.Unknown)
	if !ok {
		return ext, fmt.Errorf("kubeconfig context %q: extension %s is not an object", name, vodaExtensionName)
	}
	dec := json.NewDecoder(bytes.NewReader(u.Raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ext); err != nil {
		return ext, fmt.Errorf("kubeconfig context %q: extension %s: %w", name, vodaExtensionName, err)
	}
	return ext, nil
}

// withNamespace gives a manifest that names no namespace the namespace
// ns, as kubectl does with the context's; a manifest that names one, or
// that does not parse (the server then says why), is returned as it is.
func withNamespace(body []byte, ns string) []byte {
	if ns == "" {
		return body
	}
	js, err := yaml.YAMLToJSON(body)
	if err != nil {
		return body
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // integers stay as written
	var m map[string]any
	if dec.Decode(&m) != nil {
		return body
	}
	meta, ok := m["metadata"].(map[string]any)
	if !ok {
		return body
	}
	if v, ok := meta["namespace"]; ok && v != "" {
		return body
	}
	meta["namespace"] = ns
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}
