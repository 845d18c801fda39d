package router

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/host/config"
	"github.com/rs/zerolog"
)

// builtinYAML is a router of built-in stages in front of an address nothing listens on: enough
// to start the listeners (the endpoint is merely unhealthy).
const builtinYAML = `
plugins:
  - {name: queue, type: queue-scorer}
pipeline:
  scorers: [{pluginRef: queue}]
server: {listen: "127.0.0.1:0", adminListen: "%s"}
endpoints:
  static: [{id: a, address: "127.0.0.1:9"}]
`

func parseRouter(t *testing.T, admin string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(t.TempDir()+"/router.yaml", []byte(strings.Replace(builtinYAML, "%s", admin, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestAdminToken(t *testing.T) {
	// Refused before anything binds: tests listen on loopback only.
	t.Setenv(config.AdminTokenEnv, "")
	t.Setenv(config.ReadTokenEnv, "")
	_, err := Start(context.Background(), parseRouter(t, "0.0.0.0:0"), zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "needs a token") {
		t.Fatalf("Start with an exposed admin listener and no token: %v", err)
	}

	// A token too short to resist guessing is refused before anything binds too.
	t.Setenv(config.AdminTokenEnv, "s3cret")
	if _, err = Start(context.Background(), parseRouter(t, "127.0.0.1:0"), zerolog.Nop()); err == nil ||
		!strings.Contains(err.Error(), "$FORESIGHT_ADMIN_TOKEN must be at least 16 characters long, got 6") {
		t.Fatalf("Start with a 6-character token: %v", err)
	}

	// A token, here on loopback, guards every admin route but /health; the read-only token
	// opens the routes that change nothing, and only those.
	t.Setenv(config.AdminTokenEnv, "s3cret-admin-token")
	t.Setenv(config.ReadTokenEnv, "s3cret-read-token")
	r, err := Start(context.Background(), parseRouter(t, "127.0.0.1:0"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	call := func(method, path, token string) int {
		req, _ := http.NewRequest(method, "http://"+r.AdminAddr()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	get := func(path, token string) int { return call(http.MethodGet, path, token) }
	if code := get("/admin/pipeline", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /admin/pipeline without the token: %d, want 401", code)
	}
	if code := get("/metrics", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a wrong token: %d, want 401", code)
	}
	if code := get("/admin/pipeline", "s3cret-admin-token"); code != http.StatusOK {
		t.Errorf("GET /admin/pipeline with the token: %d, want 200", code)
	}
	if code := get("/metrics", "s3cret-read-token"); code != http.StatusOK {
		t.Errorf("GET /metrics with the read-only token: %d, want 200", code)
	}
	if code := call(http.MethodPost, "/admin/reload", "s3cret-read-token"); code != http.StatusUnauthorized {
		t.Errorf("POST /admin/reload with the read-only token: %d, want 401", code)
	}
	if code := get("/health", ""); code != http.StatusOK {
		t.Errorf("GET /health without a token: %d, want 200", code)
	}
}
