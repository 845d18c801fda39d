package workload

import (
	"testing"
)

// BenchmarkScenario generates 20,000 requests for 8 servers (the routing bench's default size).
func BenchmarkScenario(b *testing.B) {
	for _, name := range []string{"A", "B", "C", "D", "sharegpt", "production"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Scenario(name, Params{Servers: 8, Requests: 20000, Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, tc := range []struct{ name, file string }{
		{"azure-conv", "azure2023_conv.csv"}, {"azure-code", "azure2023_code.csv"}, {"mooncake", "mooncake_conversation_trace.jsonl"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			path := tracePath(b, tc.file)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Scenario(tc.name, Params{Servers: 8, Seed: 1, TracePath: path}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
