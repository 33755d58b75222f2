// Package kubetest runs integration tests against a real, throwaway
// Kubernetes stack: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok (fake nodes and pods), mpi-operator (MPIJob
// kubeflow.org/v2beta1) and training-operator (PyTorchJob kubeflow.org/v1),
// all listening on 127.0.0.1 on free ports. hack/cluster.sh starts and stops
// the stack; hack/tools.sh builds the binaries once into .cache/tools (the
// first run takes about ten minutes, later runs reuse them).
//
// A test binary starts one stack in TestMain and shares it between its tests:
//
//	var env *kubetest.Env
//
//	func TestMain(m *testing.M) { kubetest.Main(m, &env) }
//
// If the stack cannot start, the test binary fails; it never skips.
//
// Nodes are kwok fake nodes made with [Env.AddNodes]: they advertise
// nvidia.com/gpu and carry the label vodascheduler/accelerator=<type>.
// kube-scheduler binds pods to them and kwok marks bound pods Running at
// once. Pods (or pod templates) end on their own only when annotated (see
// hack/kwok/stages.yaml):
//
//	pod-complete.stage.kwok.x-k8s.io/delay: "20s"  // Succeeded, exit code 0, 20 s after Running
//	pod-fail.stage.kwok.x-k8s.io/delay: "20s"      // Failed, exit code 1, 20 s after Running
//
// [Env.SetNodeReady] makes a node NotReady (kwok holds its Ready condition
// False) or Ready again; [Env.SetNodeCordoned] cordons or uncordons it.
//
// Nothing may send traffic to node, pod or service IPs: they are fake.
//
// Labels the operators put on the pods they create (checked on live pods by
// this package's tests):
//
//	mpi-operator v0.6.0, worker pods <job>-worker-<i>:
//	  training.kubeflow.org/operator-name: mpi-operator
//	  training.kubeflow.org/job-name: <job>
//	  training.kubeflow.org/job-role: worker      (launcher pod: launcher)
//	  training.kubeflow.org/replica-index: <i>    (workers only)
//	  (no training.kubeflow.org/replica-type: the constant exists, v2beta1 does not set it)
//	training-operator v1.9.0, PyTorchJob pods <job>-worker-<i>:
//	  training.kubeflow.org/operator-name: pytorchjob-controller
//	  training.kubeflow.org/job-name: <job>
//	  training.kubeflow.org/replica-type: worker  (lower case; master for Master)
//	  training.kubeflow.org/replica-index: <i>
//	  training.kubeflow.org/job-role: master      (only on the master role: the
//	                                               Master replica, or Worker 0 when
//	                                               there is no Master)
//
// Set VODA_KEEP_CLUSTER=1 to keep the stack's folder (logs, kubeconfig) after
// the tests; its path is printed.
package kubetest
