package workload

import (
	"strings"
	"testing"
)

func TestParseClass(t *testing.T) {
	good := []struct {
		in   string
		want Class
	}{
		{"chat:0.8:ttft=500:tpot=50", Class{Name: "chat", Weight: 0.8, SLO: SLO{TTFTMs: 500, TPOTMs: 50}, Streaming: true}},
		{"batch:0.2:priority=-1:nostream", Class{Name: "batch", Weight: 0.2, Priority: -1}},
		{"plain:1", Class{Name: "plain", Weight: 1, Streaming: true}},
	}
	for _, tt := range good {
		got, err := ParseClass(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseClass(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	bad := []struct{ in, says string }{
		{"chat", "NAME:WEIGHT"},
		{":1", "NAME:WEIGHT"},
		{"chat:x", `weight "x"`},
		{"chat:-1", "weight"},
		{"chat:1:ttft=0", "ttft wants milliseconds > 0"},
		{"chat:1:tpot=fast", "tpot wants milliseconds"},
		{"chat:1:priority=high", "priority wants an integer"},
		{"chat:1:nostream=yes", "nostream takes no value"},
		{"chat:1:slo=5", `unknown option "slo"`},
	}
	for _, tt := range bad {
		if _, err := ParseClass(tt.in); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("ParseClass(%q) error %v, want one saying %q", tt.in, err, tt.says)
		}
	}
}
