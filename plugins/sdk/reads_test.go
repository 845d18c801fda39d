package sdk_test

import (
	"context"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/heuristics"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// prefixReader is a filter that reads only prefix_match and reports what it saw.
type prefixReader struct {
	echoStage
	saw chan *sdk.Cycle
}

func (p *prefixReader) Reads() []string { return []string{"endpoints.states.prefix_match"} }

func (p *prefixReader) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	p.saw <- c
	return sdk.FilterVerdict{Kept: heuristics.AllIndices(len(c.Endpoints))}, nil
}

func TestHostSendsOnlyDeclaredFields(t *testing.T) {
	impl := &prefixReader{saw: make(chan *sdk.Cycle, 1)}
	c := dispense(t, sdk.StageFilter, impl).(*transport.FilterClient)
	info, err := c.Info(context.Background())
	if err != nil || !cmp.Equal(info.Reads, []string{"endpoints.states.prefix_match"}) {
		t.Fatalf("info %+v, %v; want the declared reads", info, err)
	}
	full := testCycle("r")
	if _, err := c.FilterBatch(context.Background(), []*sdk.Cycle{full}); err != nil {
		t.Fatal(err)
	}
	got := <-impl.saw
	// Only prefix_match, the count, now and seed cross the wire; everything else reads as zero.
	want := &sdk.Cycle{Now: full.Now, Seed: full.Seed, Endpoints: []sdk.Endpoint{
		{State: sdk.EndpointState{PrefixMatch: 0.5}}, {State: sdk.EndpointState{PrefixMatch: 1}},
	}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(sdk.Cycle{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("cycle the plugin saw (-want +got):\n%s", diff)
	}
}
