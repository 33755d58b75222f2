package main

import "runtime"

func numCPU() int { return runtime.GOMAXPROCS(0) }
