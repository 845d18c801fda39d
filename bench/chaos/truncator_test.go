package chaos

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A truncator in front of a server of five-event streams cuts every second one after 0 to
// MaxCutAfter events, cleanly and without data: [DONE], passes the others and every other answer
// through whole, and counts what it cut.
func TestTruncatorCutsEveryNthStream(t *testing.T) {
	const events = 5
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			_, _ = io.WriteString(w, "whole "+r.URL.Path)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range events {
			fmt.Fprintf(w, "data: {\"n\":%d}\n\n", i)
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	tr, err := StartTruncator(strings.TrimPrefix(srv.URL, "http://"), 2, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get("http://" + tr.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body) // a cut ends the body cleanly: no read error
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return string(b)
	}
	var before, after int64
	for n := 1; n <= 12; n++ {
		body := get("/v1/completions")
		got := strings.Count(body, `{"n":`)
		done := strings.Contains(body, "[DONE]")
		switch {
		case n%2 == 1 && (got != events || !done):
			t.Errorf("stream %d: %d events, [DONE] %v; want all %d and [DONE]", n, got, done, events)
		case n%2 == 0 && (got > MaxCutAfter || done):
			t.Errorf("stream %d: %d events, [DONE] %v; want at most %d and no [DONE]", n, got, done, MaxCutAfter)
		case n%2 == 0 && got == 0:
			before++
		case n%2 == 0:
			after++
			// The events it kept are the first ones, whole: each ends with its blank line.
			if !strings.HasSuffix(body, "}\n\n") {
				t.Errorf("stream %d ends mid-event: %q", n, body)
			}
		}
	}
	if c := tr.Counts(); c.Streams != 12 || c.CutBeforeFirst != before || c.CutAfterFirst != after || before+after != 6 {
		t.Errorf("counts %+v; the client saw %d cut before the first event and %d after, of 6", c, before, after)
	}
	if before == 0 || after == 0 {
		t.Errorf("seed 7 cut %d streams before their first event and %d after: want both kinds among 6", before, after)
	}
	if body := get("/metrics"); body != "whole /metrics" {
		t.Errorf("/metrics through the truncator: %q", body)
	}
	if c := tr.Counts(); c.Streams != 12 {
		t.Errorf("a whole answer counted as a stream: %+v", c)
	}
	// Spared, it relays every stream whole and counts none.
	tr.Spare()
	for n := 13; n <= 16; n++ {
		if body := get("/v1/completions"); strings.Count(body, `{"n":`) != events || !strings.Contains(body, "[DONE]") {
			t.Errorf("stream %d after Spare: %q", n, body)
		}
	}
	if c := tr.Counts(); c.Streams != 12 || c.CutBeforeFirst+c.CutAfterFirst != 6 {
		t.Errorf("counts after Spare %+v, want those before it", c)
	}
}

func TestTruncatorRefusesEveryBelowOne(t *testing.T) {
	if _, err := StartTruncator("127.0.0.1:1", 0, 1); err == nil || !strings.Contains(err.Error(), "n ≥ 1; got 0") {
		t.Errorf("every 0: %v", err)
	}
}
