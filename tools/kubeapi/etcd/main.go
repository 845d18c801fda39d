// Command etcd is etcd's server, built from go.etcd.io/etcd/server/v3 at the version this module
// pins; internal/kubeapi starts it under kube-apiserver for the tests against a real API server.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
