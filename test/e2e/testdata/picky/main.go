// Command picky is a multi-instance filter plugin for the end-to-end tests of fused calls: each
// instance drops the endpoint at position drop of the cycle it sees (a parameter; -1 drops
// none), or fails every cycle when fail is set.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/foresight-router/foresight/plugins/sdk"
)

type picky struct {
	drop int
	fail bool
}

func (*picky) Type() string        { return "picky-filter" }
func (*picky) Description() string { return "drops one endpoint by position, or fails" }

func (p *picky) Configure(params []byte) error {
	v := struct {
		Drop int  `json:"drop"`
		Fail bool `json:"fail"`
	}{Drop: -1}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &v); err != nil {
			return err
		}
	}
	p.drop, p.fail = v.Drop, v.Fail
	return nil
}

func (p *picky) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	if p.fail {
		return sdk.FilterVerdict{}, errors.New("picky: told to fail")
	}
	var kept []int
	for i := range c.Endpoints {
		if i != p.drop {
			kept = append(kept, i)
		}
	}
	return sdk.FilterVerdict{Kept: kept, Reason: fmt.Sprintf("dropped position %d of %d", p.drop, len(c.Endpoints))}, nil
}

func main() { sdk.ServeInstances(sdk.StageFilter, func() *picky { return &picky{drop: -1} }, "1.0.0") }
