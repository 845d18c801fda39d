package openai

import (
	"strings"
	"testing"
)

func TestClip(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"short", "gpt-4o", "gpt-4o"},
		{"empty", "", ""},
		// Exactly MaxEcho bytes is not cut.
		{"at the bound", strings.Repeat("m", 256), strings.Repeat("m", 256)},
		{"one over", strings.Repeat("m", 257), strings.Repeat("m", 256) + "… (257 bytes)"},
		{"a megabyte", strings.Repeat("m", 1<<20), strings.Repeat("m", 256) + "… (1048576 bytes)"},
		// 255 ASCII bytes, then "é" (2 bytes) across the bound: cut before it, 255 bytes kept.
		{"at a rune's start", strings.Repeat("m", 255) + strings.Repeat("é", 10), strings.Repeat("m", 255) + "… (275 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clip(tt.in); got != tt.want {
				t.Errorf("Clip of %d bytes = %q (%d bytes); want %q", len(tt.in), got, len(got), tt.want)
			}
		})
	}
}
