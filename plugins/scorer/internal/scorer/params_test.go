package scorer

import (
	"strings"
	"sync"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
)

func TestConfigure(t *testing.T) {
	withStrategy := DefaultParams()
	withStrategy.HeadroomSelectionStrategy = StrategyMost
	withWeights := DefaultParams()
	withWeights.TTFTWeight, withWeights.Queue = 3, 0
	tests := []struct {
		name    string
		params  string
		want    Params
		wantErr string // a substring of the error; empty when Configure must succeed
	}{
		{name: "empty params keep defaults", params: "", want: DefaultParams()},
		{name: "null keeps defaults", params: "null", want: DefaultParams()},
		{name: "empty object keeps defaults", params: "{}", want: DefaultParams()},
		{name: "one field overrides, the rest keep defaults", params: `{"headroomSelectionStrategy": "most"}`, want: withStrategy},
		{name: "embedded composite weights decode", params: `{"ttftWeight": 3, "queueWeight": 0}`, want: withWeights},
		{name: "negative ttftWeight", params: `{"ttftWeight": -1}`, wantErr: `"ttftWeight" must be in [0, 1000], got -1`},
		{name: "tpotWeight too large", params: `{"tpotWeight": 1001}`, wantErr: `"tpotWeight" must be in [0, 1000]`},
		{name: "both weights zero", params: `{"ttftWeight": 0, "tpotWeight": 0}`, wantErr: "at least one of ttftWeight, tpotWeight"},
		{name: "unknown strategy", params: `{"headroomSelectionStrategy": "middle"}`, wantErr: `"headroomSelectionStrategy" must be one of`},
		{name: "zero buffer factor", params: `{"sloBufferFactor": 0}`, wantErr: `"sloBufferFactor" must be in (0, 10], got 0`},
		{name: "buffer factor too large", params: `{"sloBufferFactor": 10.5}`, wantErr: `"sloBufferFactor" must be in (0, 10]`},
		{name: "composite weight out of range", params: `{"kvCacheWeight": 101}`, wantErr: `"kvCacheWeight" must be in [0, 100]`},
		{name: "composite weights all zero", params: `{"kvCacheWeight": 0, "queueWeight": 0, "prefixWeight": 0}`, wantErr: "at least one of kvCacheWeight"},
		{name: "unknown parameter", params: `{"ttftWieght": 1}`, wantErr: `unknown field "ttftWieght"`},
		{name: "wrong type", params: `{"ttftWeight": "high"}`, wantErr: `parameter "ttftWeight"`},
		{name: "trailing data", params: `{} {}`, wantErr: "trailing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			err := s.Configure([]byte(tt.params))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Configure(%s) error = %v, want one containing %q", tt.params, err, tt.wantErr)
				}
				if s.Params() != DefaultParams() {
					t.Errorf("a failed Configure changed the parameters to %+v", s.Params())
				}
				return
			}
			if err != nil {
				t.Fatalf("Configure(%s): %v", tt.params, err)
			}
			if got := s.Params(); got != tt.want {
				t.Errorf("Params() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestConfigureReplacesPreviousParams(t *testing.T) {
	s := New()
	if err := s.Configure([]byte(`{"headroomSelectionStrategy": "most"}`)); err != nil {
		t.Fatal(err)
	}
	// A later Configure merges over the defaults, not over the parameters in force.
	if err := s.Configure([]byte(`{"ttftWeight": 1}`)); err != nil {
		t.Fatal(err)
	}
	if got := s.Params().HeadroomSelectionStrategy; got != StrategyLeast {
		t.Errorf("strategy = %q after reconfiguring, want the default %q", got, StrategyLeast)
	}
}

func TestConfigureConcurrentWithScore(t *testing.T) {
	s := New()
	c := &sdk.Cycle{
		Request:   sdk.Request{SLO: sdk.SLO{TTFTMs: 500}},
		Endpoints: []sdk.Endpoint{ep("a", 100, 20), ep("b", 300, 20)},
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 200 {
				if i%2 == 0 {
					_ = s.Configure([]byte(`{"headroomSelectionStrategy": "most"}`))
				} else if _, err := s.Score(t.Context(), c); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

func TestInfo(t *testing.T) {
	s := New()
	if s.Type() != "latency-scorer" {
		t.Errorf("Type() = %q", s.Type())
	}
	if s.Description() == "" {
		t.Error("Description() is empty")
	}
}
