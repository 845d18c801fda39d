package transport

import (
	"fmt"
	"strings"

	"github.com/foresight-router/foresight/plugins/sdk"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ReadPaths lists the valid read paths: "request" (every request field but the prefix block
// hashes, which a long prompt makes the bulk of a cycle and which the host has already turned into
// each endpoint's prefix_match), "request.prefix_block_hashes", "endpoints.count" (nothing but the
// number of endpoints), "endpoints.ids", "endpoints.labels", "endpoints.states" (every state column),
// "endpoints.states.<column>" for each column of EndpointStates, "endpoints.predictions", and
// "endpoints.excluded" (the fleet's endpoints out of the rotation, see sdk.ExcludedEndpoint).
// The cycle's now, seed and round and the endpoint count are always sent, and the endpoint ids of
// a cycle in a round; the predictions' after and spread columns come with "endpoints.predictions".
func ReadPaths() []string {
	paths := []string{"request", "request.prefix_block_hashes", "endpoints.count", "endpoints.ids", "endpoints.labels", "endpoints.states"}
	fields := stateFields()
	for i := 0; i < fields.Len(); i++ {
		paths = append(paths, "endpoints.states."+string(fields.Get(i).Name()))
	}
	return append(paths, "endpoints.predictions", "endpoints.excluded")
}

func stateFields() protoreflect.FieldDescriptors {
	return (&pb.EndpointStates{}).ProtoReflect().Descriptor().Fields()
}

// projection is a compiled set of read paths; the zero value sends everything.
type projection struct {
	partial                                               bool
	request, hashes, ids, labels, preds, states, excluded bool
	stateCols                                             []protoreflect.FieldDescriptor // when !states
}

// compileReads checks paths and compiles them; no paths means everything.
func compileReads(paths []string) (*projection, error) {
	p := &projection{partial: len(paths) > 0}
	fields := stateFields()
	for _, path := range paths {
		switch path {
		case "request":
			p.request = true
		case "request.prefix_block_hashes":
			p.hashes = true
		case "endpoints.count":
		case "endpoints.ids":
			p.ids = true
		case "endpoints.labels":
			p.labels = true
		case "endpoints.states":
			p.states = true
		case "endpoints.predictions":
			p.preds = true
		case "endpoints.excluded":
			p.excluded = true
		default:
			col, ok := strings.CutPrefix(path, "endpoints.states.")
			fd := fields.ByName(protoreflect.Name(col))
			if !ok || fd == nil {
				return nil, fmt.Errorf("unknown read path %q (valid: %s)", path, strings.Join(ReadPaths(), ", "))
			}
			p.stateCols = append(p.stateCols, fd)
		}
	}
	return p, nil
}

// apply returns the cycle with only the declared fields, in round (the cycle's place in a round
// now, which may differ from the one it was sealed with); what it keeps is shared, not copied. A
// cycle in a round carries its endpoint ids whatever the stage declared: the SDK tells the
// round's endpoints apart by them (sdk.PickRound).
func (p *projection) apply(w encoded, round sdk.Round) *pb.Cycle {
	c := w.msg
	if p == nil || !p.partial {
		if sameRound(c.GetRound(), round) {
			return c
		}
		return &pb.Cycle{Request: c.GetRequest(), Endpoints: c.GetEndpoints(), Now: c.GetNow(), Seed: c.GetSeed(), Round: roundToProto(round)}
	}
	src := c.GetEndpoints()
	eps := &pb.Endpoints{Count: uint32(len(src.GetIds()))}
	if src.GetCount() != 0 {
		eps.Count = src.GetCount()
	}
	if p.ids || round.Size > 0 {
		eps.Ids = src.GetIds()
	}
	if p.labels {
		eps.Labels = src.GetLabels()
	}
	if p.preds {
		eps.Predictions = src.GetPredictions()
	}
	if p.excluded {
		eps.Excluded = src.GetExcluded()
	}
	switch {
	case p.states:
		eps.States = src.GetStates()
	case len(p.stateCols) > 0 && src.GetStates() != nil:
		from, to := src.GetStates().ProtoReflect(), (&pb.EndpointStates{}).ProtoReflect()
		for _, fd := range p.stateCols {
			if from.Has(fd) {
				to.Set(fd, from.Get(fd))
			}
		}
		eps.States = to.Interface().(*pb.EndpointStates)
	}
	out := &pb.Cycle{Endpoints: eps, Now: c.GetNow(), Seed: c.GetSeed(), Round: roundToProto(round)}
	out.Request = p.projectRequest(w)
	return out
}

// projectRequest returns the request with the declared parts: all of it, it without the hashes
// (encoded once with the cycle, see encoded), the hashes alone, or nil.
func (p *projection) projectRequest(w encoded) *pb.Request {
	switch {
	case w.msg.GetRequest() == nil || !p.request && !p.hashes:
		return nil
	case p.request && p.hashes:
		return w.msg.GetRequest()
	case p.request:
		return w.bare
	}
	return &pb.Request{PrefixBlockHashes: w.msg.GetRequest().GetPrefixBlockHashes()}
}

// ProjectCycle returns c as a stage declaring reads (see sdk.Reader) receives it over the wire:
// every field it did not declare reads as zero. sdktest.CheckReads uses it to check a stage's
// declaration.
func ProjectCycle(c *sdk.Cycle, reads []string) (*sdk.Cycle, error) {
	p, err := compileReads(reads)
	if err != nil {
		return nil, err
	}
	return hooks.DecodeCycle(p.apply(encode(c), c.Round))
}
