package admin

import (
	_ "embed"
	"net/http"
)

// page is the dashboard: one hand-written file of HTML, CSS and JavaScript with no external
// resource, so it works where the admin listener is reachable and nothing else is.
//
//go:embed dashboard.html
var page []byte

// pagePolicy lets the page run its own inline script and style and fetch from the listener that
// served it, and nothing else: no other origin, no frame, no form post.
const pagePolicy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
	"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// servePage answers GET /dashboard. The page holds no data, so it needs no token; it asks for
// one (from its URL's fragment) to read GET /admin/dashboard.json.
func servePage(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pagePolicy)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(page)
}
