// Package foresightv1 holds the wire contracts between the Foresight host and its stage plugins
// (the .proto files beside this one) and the Go code buf generates from them (`make generate`).
// Plugins written in Go use plugins/sdk instead of this package directly.
package foresightv1
