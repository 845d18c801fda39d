package openai

import (
	"strconv"
	"unicode/utf8"
)

// MaxEcho bounds how many bytes of a client's string an answer or a log line repeats.
const MaxEcho = 256

// Clip returns s as an error message or a log line may repeat it, whatever the client sent:
// s itself up to MaxEcho bytes; a longer s cut to at most MaxEcho bytes at a rune's start, then
// "…" and its whole length, as in "gpt-4oooo… (1048576 bytes)". Every string from the client
// that the router echoes or logs (a model, a header's value, a path, a role) goes through it.
func Clip(s string) string {
	if len(s) <= MaxEcho {
		return s
	}
	cut := MaxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
