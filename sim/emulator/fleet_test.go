package emulator

import (
	"slices"
	"strings"
	"testing"
)

// What a fleet writes of its addresses reads back as its addresses, in order, among the other
// lines `foresight emulate` prints around them.
func TestFleetAddrsRoundTrip(t *testing.T) {
	f, err := Start(3, 0, testPreset, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	out.WriteString("3 emulated vLLM servers (" + testPreset + "):\n")
	if err := f.WriteAddrs(&out); err != nil {
		t.Fatal(err)
	}
	out.WriteString("a log line\n")
	if got := ReadAddrs(out.String()); !slices.Equal(got, f.Addrs()) {
		t.Errorf("ReadAddrs(%q) = %v, want %v", out.String(), got, f.Addrs())
	}
	// A partial output (the process still starting) gives the addresses written so far.
	if got := ReadAddrs("3 emulated vLLM servers:\n  http://127.0.0.1:8000\n"); !slices.Equal(got, []string{"127.0.0.1:8000"}) {
		t.Errorf("partial: %v", got)
	}
}
