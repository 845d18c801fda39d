package proxy

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/internal/logbuf"
	"github.com/rs/zerolog"
)

// newObjectiveRouter is newGatewayRouter's fleet with the objectives batch (-1) and premium (2),
// on a clock the test moves.
func newObjectiveRouter(t *testing.T, now *time.Time) (*Server, *logbuf.Buffer) {
	t.Helper()
	set, err := endpoints.New(endpoints.Config{}, []endpoints.Endpoint{{ID: "a", Address: "10.0.0.1:8000"}, {ID: "b", Address: "10.0.0.2:8000"}})
	if err != nil {
		t.Fatal(err)
	}
	objectives := map[string]int32{"batch": -1, "premium": 2}
	logs := &logbuf.Buffer{}
	srv, err := New(Options{Pipeline: byID{}, Endpoints: set, MaxBodyBytes: 4096, Decisions: 8, PrefixBlocks: 1024, MaxAttempts: 2,
		Priority: func(name string) (int32, bool) { p, ok := objectives[name]; return p, ok }, Objectives: []string{"batch", "premium"},
		Log: zerolog.New(logs), Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, logs
}

// front sends a request with headers h through one of the router's entry points and returns its
// ID, its objective's priority and its objective's name as the request carries them on.
type front func(t *testing.T, srv *Server, h http.Header) (id string, priority int32, objective string)

// fronts are the entry points that read the headers: the OpenAI API's decision, a gateway's
// completion (Route) and a gateway's request the router does not read (RouteOpaque).
var fronts = map[string]front{
	"OpenAI API": func(t *testing.T, srv *Server, h http.Header) (string, int32, string) {
		x, e := srv.decideRequest(context.Background(), openai.Chat, h, []byte(chatBody(false, "")), time.Now(), scope{})
		if e != nil {
			t.Fatalf("refused: %+v", e)
		}
		defer srv.endFlight(x.first)
		return x.meta.id, x.cycle.Request.Priority, x.meta.objective
	},
	"gateway": func(t *testing.T, srv *Server, h http.Header) (string, int32, string) {
		r, ref := srv.Route(context.Background(), openai.Chat, h, []byte(chatBody(false, "")), time.Now(), nil, false)
		if ref != nil {
			t.Fatalf("refused: %+v", ref.Err)
		}
		defer r.Finish("")
		return r.RequestID(), r.x.cycle.Request.Priority, r.x.meta.objective
	},
	"gateway, load only": func(t *testing.T, srv *Server, h http.Header) (string, int32, string) {
		r, ref := srv.RouteOpaque(context.Background(), h, "", nil, time.Now(), nil)
		if ref != nil {
			t.Fatalf("refused: %+v", ref.Err)
		}
		defer r.Finish("")
		return r.RequestID(), r.x.cycle.Request.Priority, r.x.meta.objective
	},
}

var generatedID = regexp.MustCompile(`^[0-9a-f]{16}$`)

// TestGatewayHeadersAreTakenAsTheInferenceExtensionTakesThem: both fronts read the gateway's
// objective header (the router's own wins), give an unknown objective the default priority 0
// instead of a 400, and replace a malformed x-request-id with a new one instead of a 400.
func TestGatewayHeadersAreTakenAsTheInferenceExtensionTakesThem(t *testing.T) {
	tests := []struct {
		name      string
		headers   []string
		id        string // "new": 16 fresh hex digits
		priority  int32
		objective string
	}{
		{"the gateway's objective", []string{HeaderGatewayObjective, "batch"}, "new", -1, "batch"},
		{"the router's objective wins", []string{HeaderObjective, "premium", HeaderGatewayObjective, "batch"}, "new", 2, "premium"},
		{"an unknown objective", []string{HeaderObjective, "gold"}, "new", 0, "gold"},
		{"an unknown gateway objective", []string{HeaderGatewayObjective, "gold"}, "new", 0, "gold"},
		{"a well-formed request id", []string{HeaderRequestID, "req-1"}, "req-1", 0, ""},
		{"a request id with a space", []string{HeaderRequestID, "a b"}, "new", 0, ""},
		{"a request id with a control byte", []string{HeaderRequestID, "a\x01b"}, "new", 0, ""},
		{"a request id over 256 bytes", []string{HeaderRequestID, strings.Repeat("x", 257)}, "new", 0, ""},
	}
	for name, send := range fronts {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				now := time.Now()
				srv, _ := newObjectiveRouter(t, &now)
				h := http.Header{}
				for i := 0; i+1 < len(tt.headers); i += 2 {
					h.Set(tt.headers[i], tt.headers[i+1])
				}
				id, priority, objective := send(t, srv, h)
				if tt.id == "new" && !generatedID.MatchString(id) || tt.id != "new" && id != tt.id {
					t.Errorf("request id %q; want %s", id, tt.id)
				}
				if priority != tt.priority || objective != tt.objective {
					t.Errorf("objective %q at priority %d; want %q at %d", objective, priority, tt.objective, tt.priority)
				}
			})
		}
	}
}

// TestWhatTheRouterTookInsteadIsLogged: a replaced x-request-id is logged with the client's,
// clipped, each time; an unknown objective once a minute per name.
func TestWhatTheRouterTookInsteadIsLogged(t *testing.T) {
	now := time.Now()
	srv, logs := newObjectiveRouter(t, &now)
	send := fronts["gateway"]
	warnings := func() int { return strings.Count(logs.String(), "unknown inference objective") }
	steps := []struct {
		name      string
		objective string
		advance   time.Duration
		warnings  int // in all, after the step
	}{
		{"gold, first", "gold", 0, 1},
		{"gold again", "gold", time.Second, 1},
		{"silver, first", "silver", 0, 2},
		{"gold after a minute", "gold", time.Minute, 3},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		h := http.Header{}
		h.Set(HeaderObjective, s.objective)
		send(t, srv, h)
		if got := warnings(); got != s.warnings {
			t.Errorf("%s: %d warnings; want %d", s.name, got, s.warnings)
		}
	}
	// An unknown objective is repeated clipped, in the warning and the access line alike.
	before := len(logs.String())
	h := http.Header{}
	h.Set(HeaderObjective, strings.Repeat("o", 32<<10))
	send(t, srv, h)
	if n, clipped := len(logs.String())-before, strings.Count(logs.String(), strings.Repeat("o", 256)+"… (32768 bytes)"); n > 4096 || clipped != 2 {
		t.Errorf("%d bytes of log, the objective clipped %d times; want it clipped in the warning and the access line", n, clipped)
	}
	h = http.Header{}
	h.Set(HeaderRequestID, strings.Repeat("y", 300))
	id, _, _ := send(t, srv, h)
	if !strings.Contains(logs.String(), `"client_request_id":"`+strings.Repeat("y", 256)+`… (300 bytes)"`) ||
		!strings.Contains(logs.String(), `"request_id":"`+id+`"`) {
		t.Errorf("log %s; want the new id %s with the client's, clipped", logs, id)
	}
}

// TestWarningsAreBounded: a name is new once a period; past maxNames names a period, none is.
func TestWarningsAreBounded(t *testing.T) {
	var w warnings
	at := time.Unix(0, 0)
	for i := range maxNames {
		if !w.first(string(rune('a'+i)), at) {
			t.Fatalf("name %d of %d not new", i, maxNames)
		}
	}
	if w.first("one too many", at) || w.first("a", at.Add(time.Second)) {
		t.Error("a name past maxNames, or seen this period, is new")
	}
	if !w.first("a", at.Add(warningPeriod)) {
		t.Error("a name seen in the last period is not new in this one")
	}
}
