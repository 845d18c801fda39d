package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/sim/loadgen"
)

// The access log joins the router's access lines, however its output is cut into writes, with
// the client's results, and splits the added TTFT by prompt length.
func TestAccessLogAddedTTFT(t *testing.T) {
	a := newAccessLog()
	out := `{"level":"info","request_id":"r1","ttft_ms":100,"total_ms":1003,"e2e_ms":1000,"message":"request"}` + "\n" +
		`{"level":"warn","message":"a line without a ttft"}` + "\n" +
		`{"level":"info","request_id":"r2","ttft_ms":50.5,"total_ms":501,"e2e_ms":500,"message":"request"}` + "\n" +
		strings.Repeat("x", maxLogLine+1) + "\n" + // too long to hold: dropped, the next line still read
		`{"level":"info","request_id":"r3","ttft_ms":20,"message":"request"}` + "\n" +
		`{"level":"info","request_id":"r4","ttft_ms":10`
	for len(out) > 0 { // in pieces of 7 bytes
		n := min(7, len(out))
		if k, err := a.Write([]byte(out[:n])); k != n || err != nil {
			t.Fatalf("Write = %d, %v", k, err)
		}
		out = out[n:]
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	results := []loadgen.Result{
		{RequestID: "r1", Kind: loadgen.OK, Streamed: true, TTFT: ms(102), PromptTokens: 500},
		{RequestID: "r2", Kind: loadgen.OK, Streamed: true, TTFT: ms(60.5), PromptTokens: 12_000},
		{RequestID: "r3", Kind: loadgen.OK, Streamed: true, TTFT: ms(24), PromptTokens: 60_000},
		{RequestID: "r4", Kind: loadgen.OK, Streamed: true, TTFT: ms(30)}, // its line never ended
		{RequestID: "r1", Kind: loadgen.Shed, Streamed: true, TTFT: ms(1)},
		{RequestID: "zz", Kind: loadgen.OK, Streamed: true, TTFT: ms(1)},
	}
	got := a.added(results)
	if got == nil || got.Requests != 3 || got.Ms.P50 != 4 {
		t.Fatalf("added %+v, want 3 requests, p50 4 ms (2, 4 and 10)", got)
	}
	if got.Held.P50 != 1 {
		t.Errorf("held %+v, want p50 1 ms (total_ms − e2e_ms: 3, 1 and r3's none)", got.Held)
	}
	want := []struct{ min, n int }{{0, 1}, {2_000, 0}, {10_000, 1}, {50_000, 1}}
	for i, w := range want {
		if b := got.ByPrompt[i]; b.MinTokens != w.min || b.Requests != w.n {
			t.Errorf("bucket %d: %+v, want from %d tokens, %d requests", i, b, w.min, w.n)
		}
	}
	if b := got.ByPrompt[2]; b.Ms.P50 != 10 {
		t.Errorf("10k-50k bucket p50 %v, want 10", b.Ms.P50)
	}
	if newAccessLog().added(results) != nil {
		t.Error("an empty access log gave an added TTFT")
	}
}
