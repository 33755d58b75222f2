// Package clock holds the scaled clock a Voda server runs on: the wall
// clock sped up by a factor, so a simulated cluster can run hours of work
// in minutes while the schedulers, the API and the cluster share one time.
// A real cluster runs it at speed 1.
package clock
