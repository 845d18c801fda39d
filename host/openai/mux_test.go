package openai

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMuxAnswersUnroutedRequestsInOpenAIsShape(t *testing.T) {
	m := NewMux()
	m.HandleFunc(http.MethodPost, "/v1/completions", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	m.HandleFunc(http.MethodGet, "/v1/models", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	m.HandleFunc(http.MethodPut, "/admin/stages/{slot}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	tests := []struct {
		method, path string
		status       int
		allow, code  string
		message      string
	}{
		{"POST", "/v1/completions", http.StatusTeapot, "", "", ""},
		{"HEAD", "/v1/models", http.StatusTeapot, "", "", ""},
		{"PUT", "/admin/stages/picker", http.StatusTeapot, "", "", ""},
		{"GET", "/v1/completions", http.StatusMethodNotAllowed, "POST", "method_not_allowed", "/v1/completions does not take GET; it takes POST"},
		{"DELETE", "/v1/models", http.StatusMethodNotAllowed, "GET, HEAD", "method_not_allowed", "/v1/models does not take DELETE; it takes GET, HEAD"},
		{"GET", "/admin/stages/picker", http.StatusMethodNotAllowed, "PUT", "method_not_allowed", "/admin/stages/picker does not take GET; it takes PUT"},
		{"GET", "/v2/nothing", http.StatusNotFound, "", "unknown_route",
			"no route GET /v2/nothing; the routes are POST /v1/completions, GET /v1/models, PUT /admin/stages/{slot}"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			m.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			if got := rec.Header().Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			if tc.code == "" {
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			var body struct {
				Error struct{ Message, Type, Code string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if body.Error.Code != tc.code || body.Error.Type != TypeInvalidRequest || !strings.Contains(body.Error.Message, tc.message) {
				t.Errorf("error %+v, want code %s and a message with %q", body.Error, tc.code, tc.message)
			}
		})
	}
}
