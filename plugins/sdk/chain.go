package sdk

import (
	"context"
	"slices"

	"github.com/foresight-router/foresight/plugins/sdk/internal/wire"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
)

// filterChain answers a fused call (FilterRequest.chain): each cycle goes through the chain's
// instances in order, each seeing only the endpoints the one before it kept, or all of them after
// one that failed (the host's fallback for a filter), until one keeps none. Every step's kept
// indices are translated back to positions in the cycle as the request carried it.
func (s *filterServer) filterChain(ctx context.Context, req *pb.FilterRequest) *pb.FilterResponse {
	chain := req.GetChain()
	impls, implErrs := make([]Filter, len(chain)), make([]error, len(chain))
	for k, name := range chain {
		impls[k], implErrs[k] = stageOf[Filter](s.reg, name)
	}
	cycles, errs := decodeCycles(req.GetCycles())
	out := &pb.FilterResponse{Chains: make([]*pb.FilterChainResult, len(cycles))}
	for i, c := range cycles {
		res := &pb.FilterChainResult{Steps: make([]*pb.FilterResult, 0, len(chain))}
		out.Chains[i] = res
		if errs[i] != nil {
			for range chain {
				res.Steps = append(res.Steps, &pb.FilterResult{Status: statusToProto(errs[i])})
			}
			continue
		}
		idx := make([]int, len(c.Endpoints)) // positions in c of cur's endpoints
		for j := range idx {
			idx[j] = j
		}
		cur := c
		for k, f := range impls {
			if len(idx) == 0 {
				break // the step before kept nothing: the host calls no further filter
			}
			r := result[FilterVerdict]{err: implErrs[k]}
			if r.err == nil {
				r = guard(func() (FilterVerdict, error) { return f.Filter(ctx, cur) })
			}
			if r.err == nil {
				if err := wire.CheckIndices(r.value.Kept, len(cur.Endpoints)); err != nil {
					r.err = &StatusError{Code: CodeError, Message: err.Error()}
				}
			}
			if r.err != nil {
				res.Steps = append(res.Steps, &pb.FilterResult{Status: statusToProto(r.err)})
				continue
			}
			keep := slices.Compact(slices.Sorted(slices.Values(r.value.Kept)))
			kept := make([]int, len(keep))
			for j, p := range keep {
				kept[j] = idx[p]
			}
			res.Steps = append(res.Steps, &pb.FilterResult{Kept: indicesToProto(kept), Reason: r.value.Reason})
			if len(keep) != len(cur.Endpoints) {
				cur = cur.Subset(keep)
			}
			idx = kept
		}
	}
	return out
}
