package pipeline

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/foresight-router/foresight/plugins/sdk"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestFallbackLabel: every failure's trace reason keeps the error's text, and its metric label
// is one of the fixed five, whatever that text holds (a socket path differs in every process).
func TestFallbackLabel(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		reason string // in the trace
		label  string // in foresight_stage_fallbacks_total
	}{
		{"process down", errDown, "plugin down", FallbackUnavailable},
		{"deadline", context.DeadlineExceeded, "deadline exceeded", FallbackTimeout},
		{"deadline over gRPC", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), "deadline exceeded", FallbackTimeout},
		{"the stage's own error", &sdk.StatusError{Message: "no model loaded"}, "stage error: no model loaded", FallbackStageError},
		{"connection refused at a random socket path",
			status.Error(codes.Unavailable, "dial unix /tmp/plugin3920148: connect: connection refused"),
			"transport: dial unix /tmp/plugin3920148: connect: connection refused", FallbackTransport},
		{"another random path, the same label",
			status.Error(codes.Unavailable, "dial unix /tmp/plugin0017: connect: connection refused"),
			"transport: dial unix /tmp/plugin0017: connect: connection refused", FallbackTransport},
		{"an answer that does not fit", fmt.Errorf("scorer returned 2 scores for 3 endpoints"),
			"invalid answer: scorer returned 2 scores for 3 endpoints", FallbackInvalidAnswer},
		{"wrapped", fmt.Errorf("calling: %w", errors.Join(errShortBatch)),
			"invalid answer: calling: stage answered fewer cycles than the batch held", FallbackInvalidAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason := fallbackReason(tt.err)
			if reason != tt.reason {
				t.Errorf("reason %q, want %q", reason, tt.reason)
			}
			if got := FallbackLabel(reason); got != tt.label {
				t.Errorf("label of %q: %q, want %q", reason, got, tt.label)
			}
		})
	}
	if got := FallbackLabel(""); got != "" {
		t.Errorf("label of no fallback: %q, want none", got)
	}
}
