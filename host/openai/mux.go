package openai

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Mux routes requests by method and path as http.ServeMux does, and answers every request it
// does not route with an OpenAI-shaped error, never ServeMux's plain text: a path it serves with
// another method gets 405 and an Allow header listing the methods it takes (GET takes HEAD too),
// any other path 404 listing the routes. Register every route before serving.
type Mux struct {
	mux     *http.ServeMux
	methods map[string][]string // path pattern → its methods, in registration order
	routes  []string            // "METHOD path", in registration order
}

// NewMux returns an empty Mux.
func NewMux() *Mux {
	m := &Mux{mux: http.NewServeMux(), methods: map[string][]string{}}
	m.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, &Error{Status: http.StatusNotFound, Type: TypeInvalidRequest, Code: "unknown_route",
			Message: fmt.Sprintf("no route %s %s; the routes are %s", Clip(r.Method), Clip(r.URL.Path), strings.Join(m.routes, ", "))})
	})
	return m
}

// HandleFunc serves method requests to the path pattern (http.ServeMux's syntax, without a method)
// with h.
func (m *Mux) HandleFunc(method, path string, h http.HandlerFunc) { m.Handle(method, path, h) }

// Handle serves method requests to the path pattern (http.ServeMux's syntax, without a method)
// with h.
func (m *Mux) Handle(method, path string, h http.Handler) {
	m.mux.Handle(method+" "+path, h)
	m.routes = append(m.routes, method+" "+path)
	if _, seen := m.methods[path]; !seen {
		// Without a method the pattern is less specific than every METHOD pattern on the same
		// path, so it only gets the methods none of them takes.
		m.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			allowed := m.allowed(path)
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			WriteError(w, &Error{Status: http.StatusMethodNotAllowed, Type: TypeInvalidRequest, Code: "method_not_allowed",
				Message: fmt.Sprintf("%s does not take %s; it takes %s", Clip(r.URL.Path), Clip(r.Method), strings.Join(allowed, ", "))})
		})
	}
	m.methods[path] = append(m.methods[path], method)
}

// allowed lists the methods path takes: GET brings HEAD, as ServeMux serves HEAD with GET's
// handler.
func (m *Mux) allowed(path string) []string {
	out := slices.Clone(m.methods[path])
	if slices.Contains(out, http.MethodGet) && !slices.Contains(out, http.MethodHead) {
		out = append(out, http.MethodHead)
	}
	return out
}

// ServeHTTP implements http.Handler.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.mux.ServeHTTP(w, r) }
