package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/vodascheduler/voda/internal/clientconfig"
)

// The same binary is Voda's kubectl plugin (docs/cli.md): installed, or
// linked, as kubectl-voda on the PATH, kubectl runs it for `kubectl voda
// ...`; as kubectl_complete-voda, kubectl runs it to complete a `kubectl
// voda` command line.
const (
	pluginName         = "kubectl-voda"
	pluginCompleteName = "kubectl_complete-voda"
)

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
	o := &clientOptions{Options: clientconfig.Options{Plugin: true}}
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
	root.AddCommand(newClientCommandsFor(o)...)
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
