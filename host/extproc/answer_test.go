package extproc

import (
	"net/http"
	"testing"

	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/proxy"
)

// A request flow control answered itself carries its reason in the immediate response under
// both header names, as the OpenAI front sends it; any other refusal carries neither.
func TestADroppedRequestCarriesItsReason(t *testing.T) {
	e := &openai.Error{Status: http.StatusTooManyRequests, Type: openai.TypeRateLimit, Code: "ttl_expired", Message: "waited its TTL"}
	tests := []struct {
		name, reason string
	}{
		{"dropped", "ttl-expired"},
		{"refused otherwise", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := errorResponse(e, "req-1")
			droppedHeaders(r, tt.reason)
			ir := r.GetImmediateResponse()
			got := map[string]string{}
			for _, h := range ir.GetHeaders().GetSetHeaders() {
				got[h.GetHeader().GetKey()] = string(h.GetHeader().GetRawValue())
			}
			if ir.GetStatus().GetCode() != http.StatusTooManyRequests || got["x-request-id"] != "req-1" {
				t.Errorf("status %d, headers %v; want 429 with the request id", ir.GetStatus().GetCode(), got)
			}
			if got[proxy.HeaderDroppedReason] != tt.reason || got[proxy.HeaderDroppedReasonAlias] != tt.reason {
				t.Errorf("reason headers %q and %q, want %q in both", got[proxy.HeaderDroppedReason], got[proxy.HeaderDroppedReasonAlias], tt.reason)
			}
		})
	}
}
