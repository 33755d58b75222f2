// Package kube runs Voda's scheduling decisions on a Kubernetes cluster.
//
// A Client watches, through shared informers, the nodes labelled
// vodascheduler/accelerator, the MPIJobs (kubeflow.org/v2beta1, the
// mpi-operator's) and PyTorchJobs (kubeflow.org/v1, the
// training-operator's) Voda created, and their worker pods. For each GPU
// type it hands out a Pool: the scheduler core's Port and the
// scheduler service's view of nodes and job completions.
//
// Jobs start by creating their object with the worker count the scheduler
// decided, grow and shrink by changing the Worker replicas, and halt by
// deletion; the operators do the rest. Where workers run is decided
// without tainting nodes: every worker pod template carries the
// scheduling gate vodascheduler/placement, and when a worker pod appears
// Voda gives it a required node affinity for the node the placer chose
// and removes the gate, so kube-scheduler binds it there. Pods on nodes
// the plan no longer wants are deleted and the operator recreates them,
// gated again. Pods without Voda's job label are never touched.
//
// RunLeader elects one scheduler per GPU type with a coordination.k8s.io
// Lease, so that replicas can stand by and take over.
package kube
