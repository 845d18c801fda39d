package config

import (
	"fmt"
	"os"
	"strings"
)

// ReadTokenEnv is the environment variable that holds the read-only token (over server.readToken).
const ReadTokenEnv = "FORESIGHT_READ_TOKEN"

// MinTokenLength is the shortest admin or read token accepted: 16 characters, so that a token
// cannot be guessed over the network (32 hex digits, `openssl rand -hex 16`, is a good one).
const MinTokenLength = 16

// ReadToken returns the read-only bearer token: $FORESIGHT_READ_TOKEN, else server.readToken;
// "" when neither is set.
func (c *Config) ReadToken() string {
	if t := os.Getenv(ReadTokenEnv); t != "" {
		return t
	}
	return c.Server.ReadToken
}

// tokenProblem says why token cannot be a bearer token, or "" when it can: it must have
// MinTokenLength characters or more, all printable ASCII but the space, so that it travels
// unchanged in an Authorization header. The token itself is never part of the answer.
func tokenProblem(token string) string {
	if strings.TrimSpace(token) == "" {
		return fmt.Sprintf("must be at least %d printable characters, got only whitespace (e.g. openssl rand -hex 16)", MinTokenLength)
	}
	if len(token) < MinTokenLength {
		return fmt.Sprintf("must be at least %d characters long, got %d (e.g. openssl rand -hex 16)", MinTokenLength, len(token))
	}
	for i := 0; i < len(token); i++ {
		if b := token[i]; b <= ' ' || b >= 0x7f {
			return fmt.Sprintf("must be printable ASCII without spaces, as an Authorization header carries it; got a space, control or non-ASCII byte at offset %d", i)
		}
	}
	return ""
}

// validateTokens checks the file's server.adminToken and server.readToken (ValidateRouter);
// CheckAdminAccess checks the ones the environment gives.
func (c *Config) validateTokens() error {
	for _, f := range []struct{ field, token string }{{"adminToken", c.Server.AdminToken}, {"readToken", c.Server.ReadToken}} {
		if f.token == "" {
			continue
		}
		if why := tokenProblem(f.token); why != "" {
			return c.errorAt([]any{"server", f.field}, "%s", why)
		}
	}
	if c.Server.ReadToken != "" && c.Server.ReadToken == c.Server.AdminToken {
		return c.errorAt([]any{"server", "readToken"}, "is the admin token; give the read-only token a value of its own")
	}
	return nil
}

// checkEnvTokens checks the tokens $FORESIGHT_ADMIN_TOKEN and $FORESIGHT_READ_TOKEN give, and
// that the tokens in force differ.
func (c *Config) checkEnvTokens() error {
	for _, env := range []string{AdminTokenEnv, ReadTokenEnv} {
		if t := os.Getenv(env); t != "" {
			if why := tokenProblem(t); why != "" {
				return fmt.Errorf("$%s %s", env, why)
			}
		}
	}
	if r := c.ReadToken(); r != "" && r == c.AdminToken() {
		return fmt.Errorf("the read-only token (server.readToken or $%s) is the admin token; give it a value of its own", ReadTokenEnv)
	}
	return nil
}
