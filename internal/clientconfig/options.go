package clientconfig

import (
	"cmp"
	"fmt"
	"os"
	"strings"

	"github.com/vodascheduler/voda/internal/api"
	"github.com/vodascheduler/voda/internal/api/client"
)

// ServerEnv names the environment variable that points the client at a
// server when --server is not given; TokenEnv and CAEnv stand in for
// --token and --certificate-authority.
const (
	ServerEnv = "VODA_SERVER"
	TokenEnv  = "VODA_TOKEN"
	CAEnv     = "VODA_CA_FILE"
)

// Options are the settings every command that talks to the API shares,
// as the flags give them; empty means not given.
type Options struct {
	Server, Token, CAFile string
	// Kubeconfig and Context choose the kubeconfig context whose token
	// is sent when neither --token nor $VODA_TOKEN is given, and whose
	// Voda API (extension) is the server when neither --server nor
	// $VODA_SERVER is given.
	Kubeconfig, Context string
	// Plugin: the commands run as `kubectl voda`, whose namespace is the
	// context's unless -n or -A says otherwise, and which want the
	// context to name its Voda API.
	Plugin bool
}

// ServerAddr is the server to talk to: --server, else $VODA_SERVER, else
// the kubeconfig context's Voda API (extension), else the default
// address of `voda server`. ca is the context's certificate authority
// when the server is the context's; source names where addr came from.
func (o Options) ServerAddr() (addr, ca, source string, err error) {
	if o.Server != "" {
		return o.Server, "", "--server", nil
	}
	if s := strings.TrimSpace(os.Getenv(ServerEnv)); s != "" {
		return s, "", "$" + ServerEnv, nil
	}
	_, name, kctx, err := loadKubeContext(o.Kubeconfig, o.Context)
	if err != nil {
		return "", "", "", err
	}
	if kctx != nil {
		ext, err := contextExtension(name, kctx)
		if err != nil {
			return "", "", "", err
		}
		if ext.Server != "" {
			return ext.Server, ext.CertificateAuthority, fmt.Sprintf("kubeconfig context %q", name), nil
		}
		if o.Plugin {
			return "", "", "", fmt.Errorf("kubeconfig context %q does not say where its Voda API is: run 'kubectl voda config set-server URL', or give --server or $%s", name, ServerEnv)
		}
	}
	return "http://" + api.DefaultServerAddr, "", "the default server", nil
}

// Namespace is the namespace a command works in when -n is not given:
// none (every one) for voda; as kubectl voda, the kubeconfig context's,
// else "default", as kubectl does.
func (o Options) Namespace() (string, error) {
	if !o.Plugin {
		return "", nil
	}
	_, _, kctx, err := loadKubeContext(o.Kubeconfig, o.Context)
	if err != nil {
		return "", err
	}
	if kctx != nil && kctx.Namespace != "" {
		return kctx.Namespace, nil
	}
	return "default", nil
}

// Client returns a client of the chosen server (ServerAddr), with the
// token and the certificate authority of the flags or the environment.
// Without --token and $VODA_TOKEN the token is the kubeconfig context's
// (kubeconfigOption). sent says which credential the client carries.
func (o Options) Client() (c *client.Client, sent Sent, err error) {
	addr, contextCA, source, err := o.ServerAddr()
	if err != nil {
		return nil, sent, err
	}
	probe, err := client.New(addr, nil)
	if err != nil {
		return nil, sent, fmt.Errorf("%s: %w", source, err)
	}
	var opts []client.Option
	switch env := strings.TrimSpace(os.Getenv(TokenEnv)); {
	case o.Token != "":
		sent.source = "--token"
		opts = append(opts, from("--token", client.WithBearerToken(o.Token)))
	case env != "":
		sent.source = "$" + TokenEnv
		opts = append(opts, from("$"+TokenEnv, client.WithBearerToken(env)))
	default:
		opt, err := o.kubeconfigOption(probe.BaseURL(), &sent)
		if err != nil {
			return nil, sent, err
		}
		opts = append(opts, opt)
	}
	if caFile := cmp.Or(o.CAFile, strings.TrimSpace(os.Getenv(CAEnv))); caFile != "" {
		opts = append(opts, from("--certificate-authority or $"+CAEnv, client.WithCAFile(caFile)))
	} else if contextCA != "" {
		opts = append(opts, from(source+"'s certificate-authority", client.WithCAFile(contextCA)))
	}
	c, err = client.New(addr, nil, opts...)
	if err != nil {
		return nil, sent, err
	}
	return c, sent, nil
}

// from names where an option's setting came from in its error.
func from(source string, opt client.Option) client.Option {
	return func(c *client.Client) error {
		if err := opt(c); err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		return nil
	}
}
