package extproc

import (
	"encoding/json"
	"strings"

	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/host/proxy"
)

// reading is how the router reads a request's body.
type reading int

const (
	// parsed: the body is its API's request, decided by the pipeline; one that does not parse is
	// a 400, as the inference extension's picker answers.
	parsed reading = iota
	// probed: a completion when the body parses as one, else unread.
	probed
	// unread: a load-only pick (proxy.Server.RouteOpaque); the body passes as it came.
	unread
)

// api is the endpoint picker's routing of the paths that end in suffix (the query string
// stripped), as the inference extension's picker routes them: by suffix, so that a pool served
// under a prefix (/llama/v1/completions) routes alike.
type api struct {
	suffix  string
	kind    openai.Kind // parsed and probed: the kind the body is read as
	reading reading
}

// apis are checked in order, the inference extension's: /chat/completions before /completions,
// which it ends with. A path none matches is probed. A request whose headers end it (no body:
// GET /v1/models) is unread whatever its path.
var apis = []api{
	{"/conversations", openai.Completions, probed},
	{"/responses", openai.Responses, parsed},
	{"/chat/completions", openai.Chat, parsed},
	{"/completions", openai.Completions, parsed},
	{"/embeddings", openai.Embeddings, parsed},
}

// apiOf is the routing of path.
func apiOf(path string) api {
	path, _, _ = strings.Cut(path, "?")
	for _, a := range apis {
		if strings.HasSuffix(path, a.suffix) {
			return a
		}
	}
	return api{kind: openai.Completions, reading: probed}
}

// route has the request decided as its API reads it: by the pipeline when the router reads its
// body, with a load-only pick otherwise.
func (x *exchange) route(rewrite bool) (*proxy.Routed, *proxy.Refusal) {
	r := x.s.o.Router
	switch {
	case x.headersOnly:
		return r.RouteOpaque(x.ctx, x.header, "", nil, x.received, x.subset)
	case x.api.reading == parsed:
		return r.Route(x.ctx, x.api.kind, x.header, x.body, x.received, x.subset, rewrite)
	case x.api.reading == probed:
		if _, err := openai.Parse(x.api.kind, x.body); err == nil {
			return r.Route(x.ctx, x.api.kind, x.header, x.body, x.received, x.subset, rewrite)
		}
	}
	return r.RouteOpaque(x.ctx, x.header, modelOf(x.body), x.body, x.received, x.subset)
}

// modelOf is the body's top-level "model" string, when it is a JSON object that has one: the
// load-only pick then keeps to the endpoints that list it.
func modelOf(body []byte) string {
	var b struct {
		Model any `json:"model"`
	}
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	m, _ := b.Model.(string)
	return m
}
