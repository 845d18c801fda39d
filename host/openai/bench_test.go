package openai

import (
	"io"
	"strings"
	"testing"
)

// BenchmarkRelayChunk measures Relay's cost per streamed token chunk (a vLLM chat delta).
func BenchmarkRelayChunk(b *testing.B) {
	const perStream = 256
	src := chatRole + strings.Repeat(chatLorem, perStream) + chatStop + chatUsage + done
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		r := strings.NewReader(src)
		b.StartTimer()
		if _, err := Relay(io.Discard, r, RelayOptions{HideUsage: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(perStream+4)), "ns/event")
}

// BenchmarkRelayResponseEvent measures Relay's cost per event of a responses stream (vLLM's
// response.output_text.delta), with the model renamed in every event.
func BenchmarkRelayResponseEvent(b *testing.B) {
	const perStream = 256
	src := respCreated + respItemAdded + strings.Repeat(respHel, perStream) + respTextDone + respCompleted
	o := RelayOptions{Kind: Responses, Rename: ModelRename{From: "m", To: "client"}}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		r := strings.NewReader(src)
		b.StartTimer()
		if _, err := Relay(io.Discard, r, o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(perStream+4)), "ns/event")
}

// BenchmarkParseChat measures parsing a chat request with a ~4 KB conversation.
func BenchmarkParseChat(b *testing.B) {
	body := []byte(`{"model":"m","stream":true,"max_tokens":128,"messages":[{"role":"system","content":"` +
		strings.Repeat("You are a helpful assistant. ", 60) + `"},{"role":"user","content":"` + strings.Repeat("What is prefix caching? ", 100) + `"}]}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r, err := Parse(Chat, body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.UpstreamBody(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrefixBlocks measures hashing a 16 KB prompt.
func BenchmarkPrefixBlocks(b *testing.B) {
	s := text("the quick brown fox jumps over the lazy dog ", 16<<10)
	b.SetBytes(int64(len(s)))
	dst := make([]uint64, 0, len(s)/BlockChars)
	for b.Loop() {
		dst = PrefixBlocks(dst[:0], s)
	}
}
