// Package jobname makes the unique names the API gives jobs, as the
// original Voda did: the manifest's name, the UTC time of the submission
// to the second and, when that is taken, -2, -3, ...
// ("mnist-20250601-100000-2"). Base is the inverse: the name the user
// gave.
//
// It knows nothing of the store: the API tries the names a Namer hands
// out until the store takes one.
package jobname
