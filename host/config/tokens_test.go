package config_test

import (
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
)

// TestTokenRules: an admin or read-only token has at least 16 printable characters and no
// space, and the two differ.
func TestTokenRules(t *testing.T) {
	const good = "0123456789abcdef"
	tests := []struct {
		name, server string
		err          string // an excerpt; "" for accepted
	}{
		{"16 characters", "{adminToken: " + good + "}", ""},
		{"both, different", "{adminToken: " + good + ", readToken: " + good + "x}", ""},
		{"one character", "{adminToken: x}", "test.yaml:1: server.adminToken: must be at least 16 characters long, got 1 (e.g. openssl rand -hex 16)"},
		{"whitespace only", `{adminToken: "                    "}`, "server.adminToken: must be at least 16 printable characters, got only whitespace"},
		{"a space inside", `{readToken: "0123456789 abcdef"}`, "server.readToken: must be printable ASCII without spaces, as an Authorization header carries it; got a space, control or non-ASCII byte at offset 10"},
		{"a short read token", "{readToken: s3cret}", "server.readToken: must be at least 16 characters long, got 6"},
		{"the same token twice", "{adminToken: " + good + ", readToken: " + good + "}", "server.readToken: is the admin token; give the read-only token a value of its own"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("test.yaml", []byte("server: "+tc.server+"\npipeline: {}\n"))
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("got %v, want an error with %q", err, tc.err)
			}
		})
	}
}
