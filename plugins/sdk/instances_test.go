package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
	"github.com/hashicorp/go-plugin"
)

// dropper is a filter whose instances each drop the endpoint with one id, or fail.
type dropper struct {
	drop string
	fail bool
}

func (*dropper) Type() string        { return "dropper" }
func (*dropper) Description() string { return "drops one endpoint by id" }
func (d *dropper) Configure(params []byte) error {
	var p struct {
		Drop string `json:"drop"`
		Fail bool   `json:"fail"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return err
		}
	}
	if p.Drop == "bad" {
		return errors.New("drop: bad is not an id")
	}
	d.drop, d.fail = p.Drop, p.Fail
	return nil
}

func (d *dropper) Filter(_ context.Context, c *sdk.Cycle) (sdk.FilterVerdict, error) {
	if d.fail {
		return sdk.FilterVerdict{}, errors.New("told to fail")
	}
	var kept []int
	for i, e := range c.Endpoints {
		if e.ID != d.drop && d.drop != "*" {
			kept = append(kept, i)
		}
	}
	return sdk.FilterVerdict{Kept: kept, Reason: "dropped " + d.drop}, nil
}

// dispenseMulti connects a filter client to an in-process multi-instance dropper server.
func dispenseMulti(t *testing.T) *transport.FilterClient {
	t.Helper()
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		sdk.StageFilter.String(): bothHalves{server: sdk.NewMultiServerPlugin(sdk.StageFilter, func() sdk.Plugin { return &dropper{} }, "1.0.0"),
			client: &transport.GRPCPlugin{Stage: sdk.StageFilter}},
	})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(sdk.StageFilter.String())
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*transport.FilterClient)
}

// threeEndpoints is testCycle with a third endpoint, c:3.
func threeEndpoints() *sdk.Cycle {
	c := testCycle("r")
	c.Endpoints = append(c.Endpoints, sdk.Endpoint{ID: "c:3"})
	return c
}

// configured returns a client of instance name configured with params.
func configured(t *testing.T, c *transport.FilterClient, name, params string) *transport.FilterClient {
	t.Helper()
	b := transport.Bind(c, name).(*transport.FilterClient)
	if err := b.Configure(context.Background(), []byte(params)); err != nil {
		t.Fatalf("configuring %s: %v", name, err)
	}
	return b
}

func TestInstancesAreConfiguredApart(t *testing.T) {
	ctx := context.Background()
	c := dispenseMulti(t)
	info, err := c.Info(ctx)
	if err != nil || !info.MultiInstance {
		t.Fatalf("info %+v, %v: want multi_instance", info, err)
	}
	a, b := configured(t, c, "a", `{"drop":"a:1"}`), configured(t, c, "b", `{"drop":"b:2"}`)
	for _, tc := range []struct {
		c    *transport.FilterClient
		want []int
	}{{a, []int{1, 2}}, {b, []int{0, 2}}, {c, []int{0, 1, 2}}} { // c: the default instance
		got, err := tc.c.FilterBatch(ctx, []*sdk.Cycle{threeEndpoints()})
		if err != nil || got[0].Err != nil || !slices.Equal(got[0].Value.Kept, tc.want) {
			t.Errorf("kept %+v (%v), want %v", got, err, tc.want)
		}
	}
	// A rejected new instance is not kept; an unknown or dropped instance fails every cycle.
	if err := transport.Bind(c, "x").Configure(ctx, []byte(`{"drop":"bad"}`)); err == nil || !strings.Contains(err.Error(), "bad is not an id") {
		t.Errorf("configuring with a bad parameter: %v", err)
	}
	if err := a.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []*transport.FilterClient{a, transport.Bind(c, "x").(*transport.FilterClient)} {
		got, err := gone.FilterBatch(ctx, []*sdk.Cycle{threeEndpoints(), threeEndpoints()})
		if err != nil || len(got) != 2 || got[1].Err == nil || !strings.Contains(got[1].Err.Error(), "is not configured") {
			t.Errorf("an instance not configured: %+v, %v", got, err)
		}
	}
}

func TestSingleInstancePluginRefusesNamedInstances(t *testing.T) {
	c := dispense(t, sdk.StageFilter, &echoStage{})
	if info, _ := c.Info(context.Background()); info.MultiInstance {
		t.Error("a plugin served with ServeFilter reports multi_instance")
	}
	err := transport.Bind(c, "x").Configure(context.Background(), []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), "serves a single instance") {
		t.Errorf("configuring a named instance of a single-instance plugin: %v", err)
	}
}

func TestFilterChainRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := dispenseMulti(t)
	configured(t, c, "drop-a", `{"drop":"a:1"}`)
	configured(t, c, "broken", `{"fail":true}`)
	configured(t, c, "drop-c", `{"drop":"c:3"}`)
	configured(t, c, "drop-all", `{"drop":"*"}`)

	got, err := c.FilterChain(ctx, []*sdk.Cycle{threeEndpoints(), threeEndpoints()}, []string{"drop-a", "broken", "unknown", "drop-c"})
	if err != nil || len(got) != 2 {
		t.Fatalf("chain: %d answers, %v", len(got), err)
	}
	for _, steps := range got {
		if len(steps) != 4 || !slices.Equal(steps[0].Value.Kept, []int{1, 2}) || steps[0].Value.Reason != "dropped a:1" ||
			steps[1].Err == nil || !strings.Contains(steps[1].Err.Error(), "told to fail") ||
			steps[2].Err == nil || !strings.Contains(steps[2].Err.Error(), `"unknown" is not configured`) ||
			steps[3].Err != nil || !slices.Equal(steps[3].Value.Kept, []int{1}) {
			t.Errorf("steps %+v: want [1 2], failed, failed, [1] (positions in the cycle as sent)", steps)
		}
	}
	// A step that keeps nothing ends the chain.
	got, err = c.FilterChain(ctx, []*sdk.Cycle{threeEndpoints()}, []string{"drop-all", "drop-a"})
	if err != nil || len(got[0]) != 1 || len(got[0][0].Value.Kept) != 0 || got[0][0].Err != nil {
		t.Errorf("chain after an empty step: %+v, %v; want one step keeping nothing", got, err)
	}
}
