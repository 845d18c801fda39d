// Command protocol2 is a filter plugin that speaks only plugin protocol 2, which no host of this
// SDK speaks: the end-to-end test checks that the host refuses it with a clear error.
package main

import (
	"context"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
)

type keepAll struct{}

func (keepAll) Type() string           { return "prefix-cache-affinity-filter" }
func (keepAll) Description() string    { return "keeps every endpoint, over protocol 2" }
func (keepAll) Configure([]byte) error { return nil }

func (keepAll) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	return sdk.FilterVerdict{Kept: heuristics.AllIndices(len(c.Endpoints))}, nil
}

func main() { sdk.ServeProtocol(2, sdk.StageFilter, keepAll{}, "1.0.0") }
