package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/host/endpoints"
	"github.com/foresight-router/foresight/sim/emulator"
)

// holder is a backend fault that starts a stream, sends one chunk and holds it open until release
// is closed (or the router hangs up), then ends it: a request the router holds for as long as the
// test wants.
type holder struct {
	started chan struct{} // one send per request that reached the backend
	release chan struct{}
}

func newHolder() *holder {
	return &holder{started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (h *holder) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, chunk("held"))
	w.(http.Flusher).Flush()
	h.started <- struct{}{}
	select {
	case <-h.release:
	case <-r.Context().Done():
		return
	}
	_, _ = io.WriteString(w, chunk(" done")+"data: [DONE]\n\n")
}

// hold sends a streamed request through the router and returns once its first chunk is back,
// with a function that reads the rest of the answer and returns it.
func hold(t *testing.T, url string, h *holder) func() string {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(chatBody(true, "")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("held request: status %d: %s", resp.StatusCode, data)
	}
	<-h.started
	return func() string {
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
}

// wantError checks an OpenAI-shaped error answer: status, code and a message naming what.
func wantError(t *testing.T, status int, out string, wantStatus int, code, names string) {
	t.Helper()
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	if status != wantStatus || json.Unmarshal([]byte(out), &e) != nil || e.Error.Code != code || !strings.Contains(e.Error.Message, names) {
		t.Errorf("status %d, body %s; want %d with code %q naming %q", status, out, wantStatus, code, names)
	}
}

// One request over server.maxConcurrentRequests is answered 429 at once, and the router takes
// requests again when one ends.
func TestRequestsOverMaxConcurrentAre429(t *testing.T) {
	h := newHolder()
	eps := []endpoints.Endpoint{{ID: "vllm-a", Address: startFaulty(t, h.serve)}}
	f := newRouterOver(t, endpoints.Config{Interval: 20 * time.Millisecond}, eps, func(o *Options) { o.MaxConcurrentRequests = 1 })
	rest := hold(t, f.url, h)
	code, out := postTo(t, f.url, chatBody(true, ""))
	wantError(t, code, out, http.StatusTooManyRequests, "router_busy", "server.maxConcurrentRequests")
	close(h.release)
	if got := rest(); !strings.Contains(got, "[DONE]") {
		t.Fatalf("the held request ended with %q", got)
	}
	if code, out := postTo(t, f.url, chatBody(false, "")); code == http.StatusTooManyRequests {
		t.Errorf("after the held request ended: %d %s; want the router to take it", code, out)
	}
	if got := f.metric(t, "foresight_requests_total"); got["429"] != 1 {
		t.Errorf("foresight_requests_total %v; want the refusal counted under 429", got)
	}
}

// An endpoint with server.maxInflightPerEndpoint of the router's requests leaves the cycle: the
// next request goes to another, and with every endpoint full it is a 429 naming the bound.
func TestFullEndpointsLeaveTheCycle(t *testing.T) {
	a, b := newHolder(), newHolder()
	eps := []endpoints.Endpoint{{ID: "vllm-a", Address: startFaulty(t, a.serve)}, {ID: "vllm-b", Address: startFaulty(t, b.serve)}}
	f := newRouterOver(t, endpoints.Config{Interval: 20 * time.Millisecond}, eps, func(o *Options) { o.MaxInflightPerEndpoint = 1 })
	restA := hold(t, f.url, a) // byID tries vllm-a first
	restB := hold(t, f.url, b) // vllm-a is full: vllm-b
	code, out := postTo(t, f.url, chatBody(true, ""))
	wantError(t, code, out, http.StatusTooManyRequests, "endpoints_full", "server.maxInflightPerEndpoint")
	close(a.release)
	close(b.release)
	restA()
	restB()
	where := map[any]int{}
	for _, l := range f.access(t) {
		where[l["endpoint"]]++
	}
	if where["vllm-a"] != 1 || where["vllm-b"] != 1 || where[nil] != 1 {
		t.Errorf("endpoints of the access lines %v; want vllm-a, vllm-b and the refusal", where)
	}
}

// A header section beyond server.maxHeaders fields or server.maxHeaderBytes bytes is a 431 in
// OpenAI's shape naming the bound.
func TestOversizedHeadersAre431(t *testing.T) {
	eps := []endpoints.Endpoint{{ID: "vllm-a", Address: startFaulty(t, faults["5xx"])}}
	f := newRouterOver(t, endpoints.Config{Interval: 20 * time.Millisecond}, eps, func(o *Options) {
		o.MaxHeaders, o.MaxHeaderBytes = 10, 1024
	})
	post := func(headers map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, f.url+"/v1/chat/completions", strings.NewReader(chatBody(false, "")))
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	many := map[string]string{}
	for i := range 12 {
		many["X-Extra-"+string(rune('a'+i))] = "1"
	}
	code, out := post(many)
	wantError(t, code, out, http.StatusRequestHeaderFieldsTooLarge, "headers_too_large", "server.maxHeaders")
	code, out = post(map[string]string{"X-Big": strings.Repeat("x", 1500)})
	wantError(t, code, out, http.StatusRequestHeaderFieldsTooLarge, "headers_too_large", "server.maxHeaderBytes")
}

// A body that does not arrive within server.readBodyTimeout is a 408 naming the bound; the slow
// client cannot hold the request.
func TestSlowBodyIs408(t *testing.T) {
	eps := []endpoints.Endpoint{{ID: "vllm-a", Address: startFaulty(t, faults["5xx"])}}
	f := newRouterOver(t, endpoints.Config{Interval: 20 * time.Millisecond}, eps, func(o *Options) { o.ReadBodyTimeout = 200 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: router\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	wantError(t, resp.StatusCode, string(data), http.StatusRequestTimeout, "body_timeout", "server.readBodyTimeout")
}

// The concurrency bound counts requests refused for other reasons too, and lets every one go:
// after a burst of bad requests the router still takes its limit.
func TestConcurrencyBoundReleasesEveryRequest(t *testing.T) {
	h := newHolder()
	eps := []endpoints.Endpoint{{ID: "vllm-a", Address: startFaulty(t, h.serve)}}
	f := newRouterOver(t, endpoints.Config{Interval: 20 * time.Millisecond}, eps, func(o *Options) { o.MaxConcurrentRequests = 2 })
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _ := postTo(t, f.url, `{"model":`); code != http.StatusBadRequest && code != http.StatusTooManyRequests {
				t.Errorf("malformed request: status %d", code)
			}
		}()
	}
	wg.Wait()
	restA := hold(t, f.url, h)
	restB := hold(t, f.url, h)
	close(h.release)
	restA()
	restB()
}

// server.maxInflightPerEndpoint holds for the requests of a round too: picks that account for
// each other may send two of a round to one endpoint, and the second is decided again when the
// first has filled it — on two endpoints with room for one each, three requests at once are two
// dispatches and a 429, never a third request in flight.
func TestARoundDoesNotOverfillAnEndpoint(t *testing.T) {
	a, b := newHolder(), newHolder()
	eps := []endpoints.Endpoint{{ID: "vllm-a", Address: startFaulty(t, a.serve)}, {ID: "vllm-b", Address: startFaulty(t, b.serve)}}
	f := newRouterOver(t, endpoints.Config{Interval: time.Hour}, eps, func(o *Options) {
		o.Pipeline, o.MaxInflightPerEndpoint = newRounds(t, false), 1
	})
	codes := make(chan int, 3)
	bodies := make(chan io.ReadCloser, 3)
	for i := range 3 {
		go func() { // prompts that share no prefix: a request's prefix match cannot have it decided again
			body := `{"model":"` + emulator.DefaultModel + `","messages":[{"role":"user","content":"` +
				strings.Repeat(fmt.Sprint(i), 64) + `"}],"max_tokens":12,"stream":true}`
			resp, err := http.Post(f.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				codes <- 0
				return
			}
			codes <- resp.StatusCode
			bodies <- resp.Body
		}()
	}
	got := []int{<-codes, <-codes, <-codes}
	close(a.release)
	close(b.release)
	for range 3 {
		body := <-bodies
		_, _ = io.Copy(io.Discard, body)
		body.Close()
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests}) || len(a.started) != 1 || len(b.started) != 1 {
		t.Errorf("statuses %v, requests held by vllm-a %d and vllm-b %d; want 200, 200, 429 and one on each", got, len(a.started), len(b.started))
	}
}

// A request whose prefix match rose, since its cycle was read, only on the endpoint it picked is
// not decided again: the rise makes its pick only better. Two requests with one long prompt on a
// single endpoint are two decisions, however the rounds split them.
func TestAPrefixRiseOnThePickStands(t *testing.T) {
	h := newHolder()
	sched := newRounds(t, false)
	f := newRouterOver(t, endpoints.Config{Interval: time.Hour}, []endpoints.Endpoint{{ID: "vllm-a", Address: startFaulty(t, h.serve)}},
		func(o *Options) { o.Pipeline = sched })
	body := `{"model":"` + emulator.DefaultModel + `","messages":[{"role":"user","content":"` +
		strings.Repeat("Tell a long story. ", 200) + `"}],"max_tokens":12,"stream":true}`
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			resp, err := http.Post(f.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	<-h.started
	<-h.started
	close(h.release)
	wg.Wait()
	if sched.decisions != 2 {
		t.Errorf("%d decisions for 2 requests, want 2", sched.decisions)
	}
}
