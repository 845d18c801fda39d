package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
	"github.com/foresight-router/foresight/sim/stats"
)

// synthetic returns n outcomes arriving every 10 ms, TTFT growing from base, every shedEvery-th
// shed (0: none), with TTFT predictions off by +10% when predict.
func synthetic(n int, base time.Duration, shedEvery int, predict bool) []stats.Outcome {
	outs := make([]stats.Outcome, n)
	for i := range outs {
		ttft := base + time.Duration(i%50)*base/10
		o := stats.Outcome{
			Arrival:      time.Duration(i) * 10 * time.Millisecond,
			TTFT:         ttft,
			E2E:          ttft + 200*time.Millisecond,
			TPOTMs:       8,
			OutputTokens: 26,
		}
		if shedEvery > 0 && i%shedEvery == 0 {
			o = stats.Outcome{Arrival: o.Arrival, Shed: true}
		}
		if predict && !o.Shed {
			o.Predicted = sdk.Prediction{Valid: true, TTFTMs: 1.1 * msOf(ttft), TPOTMs: 8}
		}
		outs[i] = o
	}
	return outs
}

func strategy(name string, outs []stats.Outcome) Strategy {
	return Strategy{Name: name, Summary: stats.Summarize(outs), Outcomes: outs}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name       string
		in         Input
		svgs       int // 3 latency charts, +1 when some strategy predicted
		wantText   []string
		noPredNote bool
	}{
		{
			name: "three strategies, one predicting, one unavailable",
			in: Input{Title: "Routing bench: scenario C <4 servers>", Strategies: []Strategy{
				strategy("rr", synthetic(3000, 40*time.Millisecond, 0, false)),
				strategy("predicted-latency", synthetic(3000, 20*time.Millisecond, 7, true)),
				{Name: "oracle & friends", Unavailable: "producer not built <yet>"},
			}},
			svgs: 4,
			wantText: []string{"rr", "predicted-latency", "oracle &amp; friends", "producer not built &lt;yet&gt;",
				"Routing bench: scenario C &lt;4 servers&gt;", "Predicted vs actual TTFT"},
		},
		{
			name: "zero outcomes and all shed",
			in: Input{Title: "edge", Strategies: []Strategy{
				strategy("empty", nil),
				strategy("all-shed", synthetic(20, time.Millisecond, 1, false)),
			}},
			svgs:       3,
			wantText:   []string{"empty", "all-shed", "all-shed 20 of 20", "no served requests"},
			noPredNote: true,
		},
		{
			name:       "no strategies",
			in:         Input{},
			svgs:       3,
			wantText:   []string{"no strategy ran"},
			noPredNote: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a, b bytes.Buffer
			if err := Write(&a, tt.in); err != nil {
				t.Fatalf("Write: %v", err)
			}
			if err := Write(&b, tt.in); err != nil {
				t.Fatalf("Write (second call): %v", err)
			}
			out := a.String()
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Error("two calls with the same input differ")
			}
			if !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.HasSuffix(out, "</html>\n") {
				t.Error("output is not a complete HTML document")
			}
			if got := strings.Count(out, "<svg"); got != tt.svgs {
				t.Errorf("<svg count = %d, want %d", got, tt.svgs)
			}
			if got := strings.Count(out, "</svg>"); got != tt.svgs {
				t.Errorf("</svg> count = %d, want %d", got, tt.svgs)
			}
			for _, bad := range []string{"http://", "https://", "<script", "NaN", "Inf"} {
				if strings.Contains(out, bad) {
					t.Errorf("output contains %q", bad)
				}
			}
			for _, want := range tt.wantText {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q", want)
				}
			}
			if got := strings.Contains(out, "No strategy made predictions."); got != tt.noPredNote {
				t.Errorf("no-prediction note present = %v, want %v", got, tt.noPredNote)
			}
		})
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteError(t *testing.T) {
	if err := Write(failWriter{}, Input{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Write error = %v, want one wrapping \"disk full\"", err)
	}
}
