package pickpolicy

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestConfigure(t *testing.T) {
	tests := []struct {
		name    string
		params  string
		want    Params
		wantErr string // a substring naming the bad parameter; empty when valid
	}{
		{name: "empty keeps defaults", params: ``, want: Params{Strategy: "softmax", Temperature: 0.1}},
		{name: "null keeps defaults", params: `null`, want: Params{Strategy: "softmax", Temperature: 0.1}},
		{name: "softmax with temperature", params: `{"strategy":"softmax","temperature":0.5}`, want: Params{Strategy: "softmax", Temperature: 0.5}},
		{name: "argmax keeps default temperature", params: `{"strategy":"argmax"}`, want: Params{Strategy: "argmax", Temperature: 0.1}},
		{name: "temperature at upper bound", params: `{"temperature":100}`, want: Params{Strategy: "softmax", Temperature: 100}},
		{name: "unknown strategy", params: `{"strategy":"greedy"}`, wantErr: `"strategy"`},
		{name: "empty strategy", params: `{"strategy":""}`, wantErr: `"strategy"`},
		{name: "temperature zero", params: `{"temperature":0}`, wantErr: `"temperature"`},
		{name: "temperature negative", params: `{"strategy":"softmax","temperature":-1}`, wantErr: `"temperature"`},
		{name: "temperature above 100", params: `{"temperature":100.5}`, wantErr: `"temperature"`},
		{name: "temperature not a number", params: `{"temperature":"hot"}`, wantErr: `"temperature"`},
		{name: "unknown field", params: `{"temprature":0.2}`, wantErr: `"temprature"`},
		{name: "not an object", params: `[1]`, wantErr: "decoding parameters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New()
			err := p.Configure([]byte(tt.params))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Configure(%s) error = %v, want one naming %s", tt.params, err, tt.wantErr)
				}
				if got := *p.Get(); got != Defaults() {
					t.Errorf("after a failed Configure, params = %+v, want the previous %+v", got, Defaults())
				}
				return
			}
			if err != nil {
				t.Fatalf("Configure(%s): %v", tt.params, err)
			}
			if got := *p.Get(); got != tt.want {
				t.Errorf("params = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestConfigureFailureKeepsServing(t *testing.T) {
	p := configured(t, `{"strategy":"argmax"}`)
	if err := p.Configure([]byte(`{"strategy":"softmax","temperature":0}`)); err == nil {
		t.Fatal("Configure with temperature 0 succeeded")
	}
	// Still argmax: 0.9 first, then 0.5, then 0.1.
	got, err := p.Pick(context.Background(), cycle(3, 7), []float64{0.1, 0.9, 0.5})
	if err != nil || !slices.Equal(got, []int{1, 2, 0}) {
		t.Fatalf("Pick = %v, %v; want [1 2 0] from the previous argmax parameters", got, err)
	}
}

func TestTypeAndDescription(t *testing.T) {
	p := New()
	if p.Type() != "weighted-random-picker" {
		t.Errorf("Type() = %q", p.Type())
	}
	if p.Description() == "" {
		t.Error("Description() is empty")
	}
}
