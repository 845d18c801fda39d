package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/sim/emulator"
)

// newListingRouter is a router over two emulated servers, vllm-a and vllm-b, scraped until each
// lists its model (emulator.DefaultModel), with server.unknownModels set to unknown.
func newListingRouter(t *testing.T, unknown string) *Server {
	t.Helper()
	fleet, err := emulator.Start(2, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	eps := []endpoints.Endpoint{{ID: "vllm-a", Address: fleet.Addrs()[0]}, {ID: "vllm-b", Address: fleet.Addrs()[1]}}
	return newRouterOver(t, endpoints.Config{Interval: time.Hour}, eps, func(o *Options) { o.UnknownModels = unknown }).srv
}

// TestUnknownModels: a model no endpoint in the rotation lists goes to all of them on a gateway's
// requests by default and is a 404 on the OpenAI API's; server.unknownModels set applies to both.
// A subset hint bounds the candidates as for any model.
func TestUnknownModels(t *testing.T) {
	onlyB := func(e endpoints.Endpoint) bool { return e.ID == "vllm-b" }
	tests := []struct {
		name       string
		setting    string // server.unknownModels
		gateway    bool   // Route's front, else the OpenAI API's
		model      string
		only       func(endpoints.Endpoint) bool
		status     int      // the refusal's; 0: decided
		candidates []string // when decided
		unknown    bool     // the trace's unknown_model
	}{
		{"gateway, unset: routed", "", true, "gpt-9", nil, 0, []string{"vllm-a", "vllm-b"}, true},
		{"gateway, a listed model", "", true, emulator.DefaultModel, nil, 0, []string{"vllm-a", "vllm-b"}, false},
		{"gateway, a subset hint", "", true, "gpt-9", onlyB, 0, []string{"vllm-b"}, true},
		{"gateway, refuse", config.UnknownModelsRefuse, true, "gpt-9", nil, http.StatusNotFound, nil, false},
		// With a subset hint "none serves the model" is a 503, as the protocol asks.
		{"gateway, refuse, a subset hint", config.UnknownModelsRefuse, true, "gpt-9", onlyB, http.StatusServiceUnavailable, nil, false},
		{"OpenAI API, unset: refused", "", false, "gpt-9", nil, http.StatusNotFound, nil, false},
		{"OpenAI API, route", config.UnknownModelsRoute, false, "gpt-9", nil, 0, []string{"vllm-a", "vllm-b"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newListingRouter(t, tt.setting)
			body := `{"model":"` + tt.model + `","messages":[{"role":"user","content":"Hi"}]}`
			x, e := srv.decideRequest(context.Background(), openai.Chat, http.Header{}, []byte(body), time.Now(),
				scope{only: tt.only, anyModel: srv.anyModel(tt.gateway)})
			if tt.status != 0 {
				if e == nil || e.Status != tt.status || e.Code != "model_not_found" {
					t.Fatalf("got %+v; want %d model_not_found", e, tt.status)
				}
				return
			}
			if e != nil {
				t.Fatalf("refused: %+v", e)
			}
			defer srv.endFlight(x.first)
			var got []string
			for _, c := range x.trace.Candidates {
				got = append(got, c.ID)
			}
			if !slices.Equal(got, tt.candidates) || x.trace.UnknownModel != tt.unknown {
				t.Errorf("candidates %v, unknown_model %v; want %v, %v", got, x.trace.UnknownModel, tt.candidates, tt.unknown)
			}
			if b, _ := json.Marshal(x.trace); strings.Contains(string(b), `"unknown_model":true`) != tt.unknown {
				t.Errorf("the trace %s: want unknown_model only when %v", b, tt.unknown)
			}
		})
	}
}
