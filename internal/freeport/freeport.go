// Package freeport chooses loopback ports that are free, for the servers tests and benches start
// on 127.0.0.1 (a port is free a moment ago: another process may take it before it is bound).
package freeport

import (
	"fmt"
	"net"
	"testing"
)

// Addrs returns n distinct free 127.0.0.1 ports, as host:port: each is held until all are chosen,
// so that they differ.
func Addrs(n int) ([]string, error) {
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("choosing a free port: %w", err)
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// Ports is Addrs as port numbers.
func Ports(n int) ([]int, error) {
	addrs, err := Addrs(n)
	if err != nil {
		return nil, err
	}
	ports := make([]int, len(addrs))
	for i, a := range addrs {
		tcp, err := net.ResolveTCPAddr("tcp", a)
		if err != nil {
			return nil, err
		}
		ports[i] = tcp.Port
	}
	return ports, nil
}

// Addr is one free 127.0.0.1 port as host:port, failing t when none can be had.
func Addr(t testing.TB) string {
	t.Helper()
	addrs, err := Addrs(1)
	if err != nil {
		t.Fatal(err)
	}
	return addrs[0]
}
