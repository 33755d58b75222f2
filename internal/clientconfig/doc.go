// Package clientconfig decides where Voda's command-line client connects
// and with which credential, and records a cluster's Voda API in a
// kubeconfig context. The voda binary binds its flags to Options and calls
// it; it holds no flag and no command itself.
//
// The server is --server, else $VODA_SERVER, else the one recorded in the
// kubeconfig context (its extension vodascheduler.io, which SetServer
// writes), else the default address of `voda server`. The token is
// --token, else $VODA_TOKEN, else the kubeconfig context's user's token,
// token file or exec plugin. A kubeconfig token opens the whole cluster,
// so it goes only to an https or loopback server (auth.IsLoopbackHost),
// and only to that server, never along a redirect. Sent records which
// credential a client carries, so that a 401 can say which one the server
// refused (docs/cli.md).
//
// The kubeconfig is read as kubectl reads it (--kubeconfig, else
// $KUBECONFIG, else ~/.kube/config) and never migrated or written, except
// by SetServer, which rewrites the file that defines the context and
// changes nothing else in it.
package clientconfig
