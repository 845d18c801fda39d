package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/foresight-router/foresight/sim/emulator"
)

// TestEmbeddingsAndResponsesAreRouted: the OpenAI front routes /v1/embeddings and /v1/responses
// like the completions: decided by the pipeline, relayed, measured (usage in the access line),
// with a Responses stream complete at its terminal event and a bad body a 400 naming the field.
func TestEmbeddingsAndResponsesAreRouted(t *testing.T) {
	f := newFixture(t, 2)
	model := emulator.DefaultModel
	for _, tc := range []struct {
		name, path, body string
		status           int
		answer           string // what the answer must hold
		access           string // what its access line must hold ("": not checked)
	}{
		{"embeddings", "/v1/embeddings", `{"model":"` + model + `","input":["one input","and another"]}`,
			http.StatusOK, `"object":"list"`, `"prompt_tokens":`},
		{"a whole response", "/v1/responses", `{"model":"` + model + `","input":"Say hi.","max_output_tokens":3}`,
			http.StatusOK, `"output_tokens":3`, `"completion_tokens":3`},
		{"a streamed response", "/v1/responses", `{"model":"` + model + `","input":[{"role":"user","content":"Say hi."}],"max_output_tokens":3,"stream":true}`,
			http.StatusOK, "event: response.completed", `"completion_tokens":3`},
		{"embeddings without input", "/v1/embeddings", `{"model":"` + model + `"}`,
			http.StatusBadRequest, `"param":"input"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := f.post(t, tc.path, tc.body, HeaderRequestID, idOf(tc.name))
			if status != tc.status || !strings.Contains(body, tc.answer) {
				t.Fatalf("%d %.300s; want %d holding %q", status, body, tc.status, tc.answer)
			}
			if tc.access == "" {
				return
			}
			if line := accessLine(t, f, idOf(tc.name)); !strings.Contains(line, tc.access) {
				t.Errorf("access line %s; want %q in it", line, tc.access)
			}
		})
	}
}

// TestTheModelIsRewrittenAndRenamedBack: x-gateway-model-name-rewrite sends the request as another
// model, which picks the endpoints that serve it; the pool's rewrite rule (Options.ModelRewrite)
// overrides the header; the client gets its own model's name back, whole or streamed, and the
// access line names both.
func TestTheModelIsRewrittenAndRenamedBack(t *testing.T) {
	f := newFixture(t, 1)
	served := emulator.DefaultModel
	f.srv.o.ModelRewrite = func(model string) (string, string, bool) {
		if model == "canary" {
			return served, "llm/canary-rollout#0", true
		}
		return "", "", false
	}
	chat := func(model string, stream bool) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`
	}
	for _, tc := range []struct {
		name, model, header string
		stream              bool
		status              int
		rule                string
	}{
		{"no endpoint serves the alias: refused on this front", "alias", "", false, http.StatusNotFound, ""},
		{"the header, whole", "alias", served, false, http.StatusOK, ""},
		{"the header, streamed", "alias", served, true, http.StatusOK, ""},
		{"the rule over the header", "canary", "a-model-nobody-serves", false, http.StatusOK, "llm/canary-rollout#0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv := []string{HeaderRequestID, idOf(tc.name)}
			if tc.header != "" {
				kv = append(kv, HeaderModelRewrite, tc.header)
			}
			status, _, body := f.post(t, "/v1/chat/completions", chat(tc.model, tc.stream), kv...)
			if status != tc.status {
				t.Fatalf("%d %.300s; want %d", status, body, tc.status)
			}
			if status != http.StatusOK {
				return
			}
			if strings.Contains(body, served) || !strings.Contains(body, `"model":"`+tc.model+`"`) {
				t.Errorf("the client got %.400s; want its model %q in place of %q", body, tc.model, served)
			}
			access := accessLine(t, f, idOf(tc.name))
			if !strings.Contains(access, `"model":"`+served+`"`) || !strings.Contains(access, `"client_model":"`+tc.model+`"`) ||
				tc.rule != "" && !strings.Contains(access, `"model_rule":"`+tc.rule+`"`) {
				t.Errorf("access line %s: want model %q, client_model %q, model_rule %q", access, served, tc.model, tc.rule)
			}
		})
	}
}

// accessLine is the access line of the request whose x-request-id is id.
func accessLine(t *testing.T, f *fixture, id string) string {
	t.Helper()
	want, _ := json.Marshal(id)
	for _, line := range strings.Split(f.log.String(), "\n") {
		if strings.Contains(line, `"request_id":`+string(want)) && strings.Contains(line, `"message":"request"`) {
			return line
		}
	}
	t.Fatalf("no access line for request %q in %s", id, f.log.String())
	return ""
}

// idOf is a test case's name as an x-request-id.
func idOf(name string) string { return strings.NewReplacer(" ", "-", ",", "", ":", "").Replace(name) }
