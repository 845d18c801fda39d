package admin

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestWithoutTokenOnlyThisMachine: with no token, the API answers only requests from this
// machine that name the listener by a loopback Host and come from no other site's page; the
// requests a browser on another site can be made to send (DNS rebinding: the site's Host; a
// cross-origin POST: the site's Origin) are refused before any route runs.
func TestWithoutTokenOnlyThisMachine(t *testing.T) {
	tests := []struct {
		name         string
		method, path string
		header       []string
		want         int
		message      string // an excerpt of a refusal's message
	}{
		{"curl on the machine", "POST", "/admin/reload", nil, 200, ""},
		{"localhost with its port", "POST", "/admin/reload", []string{"Host", "localhost:9090"}, 200, ""},
		{"[::1] from ::1", "POST", "/admin/reload", []string{"Host", "[::1]:9090", "RemoteAddr", "[::1]:40000"}, 200, ""},
		{"another port (a port-forward)", "POST", "/admin/reload", []string{"Host", "localhost:19090", "Origin", "http://localhost:19090"}, 200, ""},
		{"the dashboard's own page", "GET", "/admin/dashboard.json", []string{"Origin", "http://127.0.0.1:9090"}, 200, ""},
		// DNS rebinding: the browser resolves the attacker's name to 127.0.0.1 and sends its Host.
		{"a rebound name", "POST", "/admin/reload", []string{"Host", "evil.example:9090"}, 403,
			`the Host header "evil.example:9090" names no loopback address (localhost, 127.0.0.1, [::1])`},
		{"a rebound name reading", "GET", "/metrics", []string{"Host", "evil.example:9090"}, 403, "names no loopback address"},
		// A form or fetch of another site: text/plain needs no preflight, and the Origin tells.
		{"a cross-site POST", "POST", "/admin/reload", []string{"Origin", "https://evil.example", "Content-Type", "text/plain"}, 403,
			`the Origin header "https://evil.example" is not this listener's`},
		{"another loopback port's page", "PUT", "/admin/stages/picker", []string{"Origin", "http://localhost:3000"}, 403, "is not this listener's"},
		{"a sandboxed page", "POST", "/admin/reload", []string{"Origin", "null"}, 403, `the Origin header "null"`},
		{"from another host", "POST", "/admin/reload", []string{"RemoteAddr", "10.1.2.3:5000"}, 403, "not a loopback address"},
		// Public routes stay open: a probe and a page without data.
		{"health from a rebound name", "GET", "/health", []string{"Host", "evil.example"}, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &control{}
			code, body := do(t, Handler(observed(c, "")), tc.method, tc.path, `{"type":"max-score-picker"}`, tc.header...)
			var e struct{ Error struct{ Message string } }
			_ = json.Unmarshal([]byte(body), &e)
			if code != tc.want || !strings.Contains(e.Error.Message, tc.message) {
				t.Errorf("%d %s, want %d %q", code, body, tc.want, tc.message)
			}
			if tc.want == 403 && (c.source != "" || c.slot != "") {
				t.Errorf("the refused request reached the control: reload %q, swap %q", c.source, c.slot)
			}
		})
	}
}

// TestReadToken: the read-only token opens the routes that change nothing and no other; the
// admin token opens all of them.
func TestReadToken(t *testing.T) {
	const admin, read = "admin-token-0123456789", "read-token-0123456789"
	o := observed(&control{}, admin)
	o.ReadToken = read
	h := Handler(o)
	tests := []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/metrics", read, 200},
		{"GET", "/debug/decisions", read, 200},
		{"GET", "/admin/dashboard.json", read, 200},
		{"GET", "/admin/pipeline", read, 200},
		{"GET", "/admin/experiments", read, 404}, // through the guard: the route's own answer
		{"POST", "/admin/reload", read, 401},
		{"PUT", "/admin/stages/picker", read, 401},
		{"GET", "/metrics", admin, 200},
		{"POST", "/admin/reload", admin, 200},
		{"PUT", "/admin/stages/picker", admin, 200},
		{"GET", "/metrics", "", 401},
		{"GET", "/metrics", "wrong-token-0123456789", 401},
	}
	for _, tc := range tests {
		var header []string
		if tc.token != "" {
			header = []string{"Authorization", "Bearer " + tc.token}
		}
		if code, body := do(t, h, tc.method, tc.path, `{"type":"max-score-picker"}`, header...); code != tc.want {
			t.Errorf("%s %s with %q: %d %s, want %d", tc.method, tc.path, tc.token, code, body, tc.want)
		}
	}
	if _, body := do(t, h, "GET", "/metrics", ""); !strings.Contains(body, "server.readToken or $FORESIGHT_READ_TOKEN") {
		t.Errorf("a read route's 401 does not name the read-only token: %s", body)
	}

	// A read-only token alone: the routes that change state stay this machine's own.
	o = observed(&control{}, "")
	o.ReadToken = read
	h = Handler(o)
	if code, _ := do(t, h, "GET", "/metrics", ""); code != 401 {
		t.Errorf("GET /metrics without the read-only token: %d, want 401", code)
	}
	if code, _ := do(t, h, "POST", "/admin/reload", "", "Host", "evil.example"); code != 403 {
		t.Errorf("POST /admin/reload from a rebound name with only a read-only token: %d, want 403", code)
	}
	if code, _ := do(t, h, "POST", "/admin/reload", ""); code != 200 {
		t.Errorf("POST /admin/reload from this machine with only a read-only token: %d, want 200", code)
	}
}
