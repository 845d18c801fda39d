package sdk_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/plugins/sdk/transport"
	"github.com/hashicorp/go-plugin"
)

// gate is an admitter that sheds every sheddable request and records the priorities it is sent;
// parameter "unread" is what it answers to AdmitsUnsheddable.
type gate struct {
	unread bool
	sent   *recorder
}

type recorder struct {
	mu  sync.Mutex
	got []int32
}

func (r *recorder) take() []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

func (*gate) Type() string        { return "gate" }
func (*gate) Description() string { return "sheds every sheddable request" }
func (g *gate) Configure(params []byte) error {
	var p struct {
		Unread bool `json:"unread"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return err
	}
	g.unread = p.Unread
	return nil
}
func (g *gate) AdmitsUnsheddable() bool { return g.unread }

func (g *gate) Admit(_ context.Context, c *sdk.Cycle) (sdk.AdmitVerdict, error) {
	g.sent.mu.Lock()
	g.sent.got = append(g.sent.got, c.Request.Priority)
	g.sent.mu.Unlock()
	if c.Request.Priority < 0 {
		return sdk.AdmitVerdict{Reason: "shed"}, nil
	}
	return sdk.AdmitVerdict{Admitted: true, Reason: "kept"}, nil
}

func prioritized(ps ...int32) []*sdk.Cycle {
	out := make([]*sdk.Cycle, len(ps))
	for i, p := range ps {
		out[i] = testCycle("r")
		out[i].Request.Priority = p
	}
	return out
}

func TestUnsheddableRequestsAreAdmittedWithoutACall(t *testing.T) {
	ctx := context.Background()
	sent := &recorder{}
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		sdk.StageAdmitter.String(): bothHalves{server: sdk.NewMultiServerPlugin(sdk.StageAdmitter, func() sdk.Plugin { return &gate{sent: sent} }, "1.0.0"),
			client: &transport.GRPCPlugin{Stage: sdk.StageAdmitter}},
	})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(sdk.StageAdmitter.String())
	if err != nil {
		t.Fatal(err)
	}
	bind := func(name, params string) *transport.AdmitterClient {
		b := transport.Bind(raw.(transport.Configurer), name).(*transport.AdmitterClient)
		if err := b.Configure(ctx, []byte(params)); err != nil {
			t.Fatalf("configuring %s: %v", name, err)
		}
		return b
	}
	admit := func(c *transport.AdmitterClient, ps ...int32) []sdk.AdmitVerdict {
		t.Helper()
		res, err := c.AdmitBatch(ctx, prioritized(ps...))
		if err != nil || len(res) != len(ps) {
			t.Fatalf("admitting %v: %+v, %v", ps, res, err)
		}
		out := make([]sdk.AdmitVerdict, len(res))
		for i, r := range res {
			if r.Err != nil {
				t.Fatalf("admitting %v: cycle %d: %v", ps, i, r.Err)
			}
			out[i] = r.Value
		}
		return out
	}

	unread, every := bind("unread", `{"unread":true}`), bind("every", `{"unread":false}`)
	got := admit(unread, 1, -1, 0, -2)
	if want := []bool{true, false, true, false}; !slices.Equal(admittedOf(got), want) {
		t.Errorf("verdicts %+v, want admitted %v", got, want)
	}
	const tail = " is not sheddable (admitted without a call, as the admitter declares)"
	if got[0].Reason != "priority 1"+tail || got[2].Reason != "priority 0"+tail || got[1].Reason != "shed" || got[3].Reason != "shed" {
		t.Errorf("reasons %q: the host's for priorities 1 and 0, the plugin's for the sheddable ones", []string{got[0].Reason, got[1].Reason, got[2].Reason, got[3].Reason})
	}
	if s := sent.take(); !slices.Equal(s, []int32{-1, -2}) {
		t.Errorf("the plugin was sent priorities %v, want only the sheddable -1 and -2 in order", s)
	}
	admit(unread, 3, 0)
	if s := sent.take(); len(s) != 0 {
		t.Errorf("a batch of unsheddable requests sent %v, want no call", s)
	}
	if got := admit(every, 1, -1); !slices.Equal(admittedOf(got), []bool{true, false}) || got[0].Reason != "kept" {
		t.Errorf("an instance that reads every request: %+v", got)
	}
	if s := sent.take(); !slices.Equal(s, []int32{1, -1}) {
		t.Errorf("an instance that reads every request was sent %v, want 1 and -1", s)
	}
	// Configuring again answers for the new parameters.
	if err := unread.Configure(ctx, []byte(`{"unread":false}`)); err != nil {
		t.Fatal(err)
	}
	admit(unread, 2)
	if s := sent.take(); !slices.Equal(s, []int32{2}) {
		t.Errorf("after configuring unread false the plugin was sent %v, want 2", s)
	}
}

func admittedOf(vs []sdk.AdmitVerdict) []bool {
	out := make([]bool, len(vs))
	for i, v := range vs {
		out[i] = v.Admitted
	}
	return out
}
