package admin

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/foresight-router/foresight/host/config"
	"github.com/foresight-router/foresight/host/openai"
)

// Who may ask what. GET /health and GET /dashboard (a page without data) are public. The read
// routes show state and change nothing: the read-only token or the admin token opens them. Every
// other route (reload, stage swaps: what changes state or launches a binary) needs the admin
// token. A route with no token configured for it answers only requests from this machine that
// name the listener by a loopback Host and come from no other site's page (sameMachine).

// readRoutes are the routes the read-only token opens.
var readRoutes = map[string]bool{
	"/metrics": true, "/debug/decisions": true, "/admin/dashboard.json": true,
	"/admin/pipeline": true, "/admin/experiments": true,
}

// public reports whether r needs nothing: the liveness probe and the dashboard's page.
func public(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/health" || r.URL.Path == "/dashboard")
}

// guard wraps next with the access rules for the admin token admin and the read-only token read
// (either may be "").
func guard(admin, read string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if public(r) {
			next.ServeHTTP(w, r)
			return
		}
		readOnly := r.Method == http.MethodGet && readRoutes[r.URL.Path]
		tokens := []string{admin}
		if readOnly {
			tokens = append(tokens, read)
		}
		if admin == "" && (!readOnly || read == "") {
			if why := sameMachine(r); why != "" {
				openai.WriteError(w, &openai.Error{Status: http.StatusForbidden, Type: openai.TypeInvalidRequest,
					Message: "without a token the admin API answers only this machine's own requests: " + why +
						" (set server.adminToken or $" + config.AdminTokenEnv + " to reach it otherwise)"})
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if !bearer(r, tokens) {
			msg := "the admin API needs the header Authorization: Bearer <token> (server.adminToken or $" + config.AdminTokenEnv + ")"
			if readOnly && read != "" {
				msg = "this route needs the header Authorization: Bearer <token> with the read-only token (server.readToken or $" +
					config.ReadTokenEnv + ") or the admin token (server.adminToken or $" + config.AdminTokenEnv + ")"
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="foresight admin"`)
			openai.WriteError(w, &openai.Error{Status: http.StatusUnauthorized, Type: openai.TypeInvalidRequest, Message: msg})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearer reports whether r carries "Authorization: Bearer T" for one of tokens (empty ones
// skipped), comparing in constant time.
func bearer(r *http.Request, tokens []string) bool {
	got := []byte(r.Header.Get("Authorization"))
	ok := false
	for _, t := range tokens {
		if t != "" && subtle.ConstantTimeCompare(got, []byte("Bearer "+t)) == 1 {
			ok = true
		}
	}
	return ok
}

// sameMachine says why r may not be one of this machine's own requests, or "" when it is: it
// comes from a loopback address, its Host names a loopback address (localhost, 127.0.0.0/8,
// [::1]; any port), and an Origin, when present, is a loopback one of the same port as the Host.
// A page of another site can still make a browser send a request to a loopback port: by DNS
// rebinding its Host is the site's name, and a cross-origin POST carries the site's Origin.
func sameMachine(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err != nil || !loopback(host) {
		return "the request came from " + r.RemoteAddr + ", not a loopback address"
	}
	host, port := splitHost(r.Host, "80")
	if !loopback(host) {
		return "the Host header " + strconv.Quote(openai.Clip(r.Host)) + " names no loopback address (localhost, 127.0.0.1, [::1])"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "the Origin header " + strconv.Quote(openai.Clip(origin)) + " is not this listener's (another site's page sent the request)"
	}
	def := "80"
	if u.Scheme == "https" {
		def = "443"
	}
	if oHost, oPort := splitHost(u.Host, def); !loopback(oHost) || oPort != port {
		return "the Origin header " + strconv.Quote(openai.Clip(origin)) + " is not this listener's (another site's page sent the request)"
	}
	return ""
}

// splitHost splits host[:port] (an IPv6 address in brackets), port def when absent.
func splitHost(hostport, def string) (host, port string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), def
}

// loopback reports whether host is localhost or a loopback IP address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
