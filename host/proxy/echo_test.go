package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/openai"
)

// What a client sends that the router repeats — in an error's message, in the access log — is
// repeated at most openai.MaxEcho bytes, then its length: a long model name is not echoed whole.
func TestClientStringsAreEchoedClipped(t *testing.T) {
	long := strings.Repeat("m", 3000)     // within the fixture's server.maxBodyBytes
	header := strings.Repeat("h", 32<<10) // within server.maxHeaderBytes' default
	tests := []struct {
		name    string
		path    string
		body    string
		headers []string
		status  int
		clipped string // what the message holds of the long string
	}{
		{"model", "/v1/chat/completions", `{"model":"` + long + `","messages":[{"role":"user","content":"Hi"}]}`, nil, 404,
			`"` + long[:256] + `… (3000 bytes)"`},
		{"role", "/v1/chat/completions", `{"model":"m","messages":[{"role":"` + long + `","content":"Hi"}]}`, nil, 400,
			`got "` + long[:256] + `… (3000 bytes)"`},
		{"SLO header", "/v1/chat/completions", chatBody(false, ""), []string{HeaderSLOTTFT, header}, 400,
			`"` + header[:256] + `… (32768 bytes)"`},
		{"debug header", "/v1/chat/completions", chatBody(false, ""), []string{HeaderDebug, header}, 400,
			`"` + header[:256] + `… (32768 bytes)"`},
		{"unknown route", "/" + header, chatBody(false, ""), nil, 404, "/" + header[:255] + "… (32769 bytes)"},
	}
	f := newFixture(t, 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.log.String())
			code, _, out := f.post(t, tt.path, tt.body, tt.headers...)
			var e struct{ Error struct{ Message string } }
			if err := json.Unmarshal([]byte(out), &e); err != nil || code != tt.status {
				t.Fatalf("status %d, body of %d bytes (%v); want %d", code, len(out), err, tt.status)
			}
			if msg := e.Error.Message; !strings.Contains(msg, tt.clipped) || len(msg) > 2*openai.MaxEcho+256 {
				t.Errorf("message of %d bytes %.400q; want it to hold %.300q and little else", len(msg), msg, tt.clipped)
			}
			if n := len(f.log.String()) - before; n > 4*openai.MaxEcho+1024 {
				t.Errorf("access log of %d bytes; want the client's string clipped there too", n)
			}
		})
	}
}
