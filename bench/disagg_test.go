package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestDisaggregatedFleet(t *testing.T) {
	d, err := disaggregated(RoutingOptions{Servers: 4, Prefill: 1, Decode: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []endpoints.Role{endpoints.RolePrefill, endpoints.RoleDecode, endpoints.RoleDecode, endpoints.RoleDecode}
	if !slices.Equal(d.Roles, want) || d.Split != config.SplitAdaptive {
		t.Errorf("roles %v split %q, want %v and adaptive", d.Roles, d.Split, want)
	}
	if d, err := disaggregated(RoutingOptions{Servers: 4}); d != nil || err != nil {
		t.Errorf("no --prefill/--decode: %v, %v; want none", d, err)
	}
	for _, o := range []RoutingOptions{
		{Servers: 4, Prefill: 2, Decode: 1},
		{Servers: 2, Prefill: 0, Decode: 2},
		{Servers: 4, Split: config.SplitAlways},
	} {
		if _, err := disaggregated(o); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%+v: error %v, want one naming the flags", o, err)
		}
	}
}

func TestAConfigOfProfilesTakesThePrefillDecisionOnItsPrefillProfile(t *testing.T) {
	cfg, err := config.Parse("pd.yaml", []byte(`plugins:
  - {name: rr, type: round-robin-picker}
profiles:
- name: decode
  pipeline: {picker: {pluginRef: rr}}
- name: prefill
  pipeline: {picker: {pluginRef: rr}}
disaggregation: {decodeProfile: decode, prefillProfile: prefill}
`))
	if err != nil {
		t.Fatal(err)
	}
	choose := chooseProfile(cfg)
	for hop, want := range map[sdk.Hop]string{sdk.HopWhole: "decode", sdk.HopDecode: "decode", sdk.HopPrefill: "prefill"} {
		if got := choose(&sdk.Request{Disaggregation: sdk.Disaggregation{Hop: hop}}); got != want {
			t.Errorf("hop %v: profile %q, want %q", hop, got, want)
		}
	}
}
