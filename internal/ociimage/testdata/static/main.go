// Command static is a tiny program the image builder's tests put in an image. It uses the
// resolver of package net, which links the C library when cgo is on, so the test sees
// whether the builder really builds without cgo.
package main

import (
	"fmt"
	"net"
)

func main() {
	addrs, err := net.LookupHost("localhost")
	fmt.Println(addrs, err)
}
