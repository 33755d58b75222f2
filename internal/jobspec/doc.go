// Package jobspec owns the job manifest a user submits to Voda: it decodes
// a Kubeflow MPIJob or PyTorchJob (YAML or JSON), reads Voda's settings
// from the manifest (the original's launcher environment variables, the
// PyTorchJob elastic policy, the worker nodeSelector, or vodascheduler/*
// annotations), validates them and the job's GPUs (one per worker), and
// turns them into a model.JobSpec.
//
// Every rejection is a *FieldError naming the place in the manifest the
// user has to fix; Parse reports the first one in a fixed order (see
// Parse), so the same input always gets the same answer. A field that
// Kubernetes does not know for the job's kind is not an error but a
// warning, as kube-apiserver words it (`unknown field
// "spec.slotsPerWorkr"`): Spec.Warnings (see unknown.go).
//
// The decoded manifest travels with the spec: Spec.Rename gives it the
// unique name the service chose, and Spec.JSON is what gets stored and,
// later, created in Kubernetes. Since Voda creates it with its own
// credentials, every pod template is checked too: against a Pod Security
// Standards level, with the upstream checks, and for the fields Voda sets
// itself (see podsecurity.go). The package imports no Kubeflow types and
// reads the fields it needs from a generic map; only the pod security
// check decodes each pod template into Kubernetes' core types, and
// unknown.go mirrors the Kubeflow kinds' field names to tell unknown
// fields.
//
// docs/job-spec.md describes the accepted formats for users.
package jobspec
