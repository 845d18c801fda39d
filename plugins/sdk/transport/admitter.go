package transport

import (
	"context"
	"strconv"

	"github.com/foresight-router/foresight/plugins/sdk"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
)

// AdmitterClient calls an admitter plugin.
type AdmitterClient struct {
	*PluginClient
	admit *streamPool[pb.AdmitRequest, pb.AdmitResponse]
}

// AdmitBatch asks for a verdict for every cycle. When the admitter's last Configure said it admits
// every request that is not sheddable unread (admits_unsheddable), those requests are admitted
// here and only the others are sent; a batch of none is not sent at all.
func (c *AdmitterClient) AdmitBatch(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.AdmitVerdict], error) {
	if !c.unsheddable.Load() {
		return c.admitAll(ctx, cycles)
	}
	out := make([]Result[sdk.AdmitVerdict], len(cycles))
	var send []*sdk.Cycle // allocated on the first sheddable cycle: most batches have none
	var at []int
	for i, cy := range cycles {
		if cy != nil && cy.Request.Priority >= 0 {
			out[i].Value = sdk.AdmitVerdict{Admitted: true, Reason: unsheddableReason(cy.Request.Priority)}
			continue
		}
		if send == nil {
			send, at = make([]*sdk.Cycle, 0, len(cycles)-i), make([]int, 0, len(cycles)-i)
		}
		send, at = append(send, cy), append(at, i)
	}
	if len(send) == 0 {
		return out, nil
	}
	res, err := c.admitAll(ctx, send)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		out[i] = res[j]
	}
	return out, nil
}

// unsheddableReason is the reason given for a request admitted without a call; priority 0, the
// default, is formatted once.
func unsheddableReason(priority int32) string {
	if priority == 0 {
		return reasonPriority0
	}
	return "priority " + strconv.FormatInt(int64(priority), 10) + unsheddableTail
}

const (
	unsheddableTail = " is not sheddable (admitted without a call, as the admitter declares)"
	reasonPriority0 = "priority 0" + unsheddableTail
)

// admitAll sends every cycle to the admitter.
func (c *AdmitterClient) admitAll(ctx context.Context, cycles []*sdk.Cycle) ([]Result[sdk.AdmitVerdict], error) {
	resp, err := c.admit.call(ctx, &pb.AdmitRequest{Cycles: c.cycles(cycles), Instance: c.instance})
	if err != nil {
		return nil, err
	}
	return collect(cycles, resp.GetResults(), func(_ *sdk.Cycle, r *pb.AdmitResult) (sdk.AdmitVerdict, error) {
		return sdk.AdmitVerdict{Admitted: r.GetAdmitted(), Reason: r.GetReason()}, nil
	})
}
