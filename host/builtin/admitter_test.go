package builtin

import (
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestAlwaysAdmit(t *testing.T) {
	tests := []struct {
		name  string
		cycle *sdk.Cycle
	}{
		{name: "sheddable request with an SLO", cycle: &sdk.Cycle{
			Request: sdk.Request{Priority: -1, SLO: sdk.SLO{TTFTMs: 1}}, Endpoints: make([]sdk.Endpoint, 2)}},
		{name: "no endpoints", cycle: cycle(0, 0)},
		{name: "nil cycle", cycle: nil},
	}
	a := NewAlwaysAdmit()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Admit(t.Context(), tt.cycle)
			if err != nil {
				t.Fatal(err)
			}
			if want := (sdk.AdmitVerdict{Admitted: true, Reason: "always-admit"}); got != want {
				t.Errorf("verdict %+v, want %+v", got, want)
			}
		})
	}
}
