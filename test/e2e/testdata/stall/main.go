// Command stall is a scorer plugin that answers its first stallAfter Score calls (a parameter,
// default 3) and then never answers again, ignoring its deadline: a hung plugin, for the
// end-to-end test of hang detection. A restarted process answers again at first.
package main

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/foresight-router/foresight/plugins/sdk"
)

type stall struct {
	after int64
	calls atomic.Int64
}

func (*stall) Type() string        { return "stall-scorer" }
func (*stall) Description() string { return "answers its first calls, then hangs" }

func (s *stall) Configure(params []byte) error {
	p := struct {
		StallAfter int64 `json:"stallAfter"`
	}{StallAfter: 3}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return err
		}
	}
	s.after = p.StallAfter
	return nil
}

func (s *stall) Score(_ context.Context, c *sdk.Cycle) ([]float64, error) {
	if s.calls.Add(1) > s.after {
		select {} // hung: deaf to the deadline
	}
	out := make([]float64, len(c.Endpoints))
	for i := range out {
		out[i] = 0.5
	}
	return out, nil
}

func main() { sdk.ServeScorer(&stall{}, "1.0.0") }
