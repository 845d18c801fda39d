package admitter

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestConfigure(t *testing.T) {
	budget := DefaultParams()
	budget.Mode = ModeBudget
	replaced := DefaultParams()
	replaced.BudgetsMs = Budgets{"-3": 100}
	noBudgets := DefaultParams()
	noBudgets.BudgetsMs = nil
	queueDepth := DefaultParams()
	queueDepth.Mode = ModeQueueDepth
	bounds := DefaultParams()
	bounds.QueueBounds = Bounds{"-3": 0}
	floor := DefaultParams()
	floor.PrefixGroupFloor, floor.PrefixGroupWindowMs = 0.2, 5000
	tests := []struct {
		name    string
		params  string
		want    Params
		wantErr string // a substring of the error; empty when Configure must succeed
	}{
		{name: "empty params keep defaults", params: "", want: DefaultParams()},
		{name: "empty object keeps defaults", params: "{}", want: DefaultParams()},
		{name: "one field overrides, the rest keep defaults", params: `{"mode": "budget"}`, want: budget},
		{name: "budgetsMs replaces the default map", params: `{"budgetsMs": {"-3": 100}}`, want: replaced},
		{name: "null budgetsMs clears the map", params: `{"budgetsMs": null}`, want: noBudgets},
		{name: "unknown mode", params: `{"mode": "strict"}`, wantErr: `"mode" must be one of`},
		{name: "zero buffer factor", params: `{"sloBufferFactor": 0}`, wantErr: `"sloBufferFactor" must be in (0, 10], got 0`},
		{name: "cold threshold above 1", params: `{"coldKVThreshold": 1.5}`, wantErr: `"coldKVThreshold" must be in [0, 1], got 1.5`},
		{name: "multiplier below range", params: `{"headroomMultiplier": 0.4}`, wantErr: `"headroomMultiplier" must be in [0.5, 3]`},
		{name: "non-numeric priority", params: `{"budgetsMs": {"low": 100}}`, wantErr: `key "low" must be a negative integer priority`},
		{name: "non-sheddable priority", params: `{"budgetsMs": {"0": 100}}`, wantErr: `key "0" must be a negative integer priority`},
		{name: "zero budget", params: `{"budgetsMs": {"-1": 0}}`, wantErr: `budget of priority -1 must be in (0, 600000] ms, got 0`},
		{name: "budget of the wrong type", params: `{"budgetsMs": {"-1": "fast"}}`, wantErr: `parameter "budgetsMs": want an object`},
		{name: "unknown parameter", params: `{"budgets": {}}`, wantErr: `unknown field "budgets"`},
		{name: "queue-depth mode", params: `{"mode": "queue-depth"}`, want: queueDepth},
		{name: "queueBounds replaces the default map, 0 allowed", params: `{"queueBounds": {"-3": 0}}`, want: bounds},
		{name: "floor and window", params: `{"prefixGroupFloor": 0.2, "prefixGroupWindowMs": 5000}`, want: floor},
		{name: "unknown queue source", params: `{"queueSource": "running"}`, wantErr: `"queueSource" must be one of`},
		{name: "unknown queueOf", params: `{"queueOf": "mean"}`, wantErr: `"queueOf" must be one of`},
		{name: "negative queue bound", params: `{"queueBounds": {"-1": -1}}`, wantErr: `queue bound of priority -1 must be in [0, 100000], got -1`},
		{name: "non-sheddable queue bound", params: `{"queueBounds": {"1": 3}}`, wantErr: `parameter "queueBounds": key "1" must be a negative integer priority`},
		{name: "queue bound of the wrong type", params: `{"queueBounds": [3]}`, wantErr: `parameter "queueBounds": want an object`},
		{name: "floor above 1", params: `{"prefixGroupFloor": 1.5}`, wantErr: `"prefixGroupFloor" must be in [0, 1], got 1.5`},
		{name: "zero window", params: `{"prefixGroupWindowMs": 0}`, wantErr: `"prefixGroupWindowMs" must be in (0, 3.6e+06], got 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New()
			err := a.Configure([]byte(tt.params))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Configure(%s) error = %v, want one containing %q", tt.params, err, tt.wantErr)
				}
				if !reflect.DeepEqual(a.Params(), DefaultParams()) {
					t.Errorf("a failed Configure changed the parameters to %+v", a.Params())
				}
				return
			}
			if err != nil {
				t.Fatalf("Configure(%s): %v", tt.params, err)
			}
			if got := a.Params(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Params() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestConfigureConcurrentWithAdmit(t *testing.T) {
	a := New()
	c := &sdk.Cycle{
		Request:   sdk.Request{Priority: -1, SLO: sdk.SLO{TTFTMs: 100}},
		Endpoints: []sdk.Endpoint{ep("10.0.0.1", 300, 20)},
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 200 {
				if i%2 == 0 {
					_ = a.Configure([]byte(`{"mode": "budget"}`))
				} else if _, err := a.Admit(t.Context(), c); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

func TestInfo(t *testing.T) {
	a := New()
	if a.Type() != "latency-slo-admitter" {
		t.Errorf("Type() = %q", a.Type())
	}
	if a.Description() == "" {
		t.Error("Description() is empty")
	}
}
