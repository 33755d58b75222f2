// Package registry holds named, parameterised factories: the scheduling
// algorithms (package algorithm) and the placement policies (package
// placement) are each a Registry of their own product type.
//
// A registry has no global state and no init-time side effects: its owner
// builds it explicitly and may Register more entries. Names are
// case-insensitive and listed in registration order. Every entry
// documents its parameters; a factory reads the ones it knows through
// Params, and the registry rejects any parameter no factory read, so a
// misspelt name is an error rather than a silent default.
package registry
