package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/foresight-router/foresight/sim/emulator"
)

// serveProcess is a `foresight serve` process and its listeners.
type serveProcess struct {
	api, admin, extProc string
}

// dialPicker connects to a router's endpoint picker at addr (closed when the test ends) and
// returns the connection and a gateway that talks to it in full-duplex mode, as GIE's does.
func dialPicker(t *testing.T, addr string) (*grpc.ClientConn, *envoy) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn, &envoy{t: t, client: extprocv3.NewExternalProcessorClient(conn),
		reqMode: filterv3.ProcessingMode_FULL_DUPLEX_STREAMED, respMode: filterv3.ProcessingMode_FULL_DUPLEX_STREAMED}
}

// startServe runs `foresight serve --config file args…` and reads its listeners from its first
// line; the process is interrupted (SIGINT, as Ctrl-C) at the end of the test.
func startServe(t *testing.T, file string, args ...string) serveProcess {
	t.Helper()
	_, line := spawnServe(t, file, args...)
	m := regexp.MustCompile(`OpenAI API on http://(\S+), admin on http://(\S+), ext_proc endpoint picker on (\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("serve's first line %q names no ext_proc listener", line)
	}
	return serveProcess{api: m[1], admin: m[2], extProc: m[3]}
}

// spawnServe starts `foresight serve --config file args…` and returns it with the first line it
// printed, which comes once its pipeline, and so every plugin process, is up. At the end of the
// test it is interrupted (SIGINT) and waited for, if it still runs.
func spawnServe(t *testing.T, file string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(hostBin, append([]string{"serve", "--config", file}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed no first line: %v; stderr: %s", err, stderr.String())
	}
	return cmd, line
}

// envoy plays the data plane of an inference gateway: for each request it replays the messages
// Envoy's ext_proc filter sends the endpoint picker, sends the request to the endpoint picked, and
// replays the answer through the picker as Envoy does.
type envoy struct {
	t                 *testing.T
	client            extprocv3.ExternalProcessorClient
	reqMode, respMode filterv3.ProcessingMode_BodySendMode
}

// trip is what the client and the endpoint saw of one request through the gateway.
type trip struct {
	immediate   *extprocv3.ImmediateResponse // the picker answered itself
	destination string                       // the x-gateway-destination-endpoint header
	metadata    string                       // the envoy.lb metadata's value
	fallback    string                       // the envoy.lb metadata's fallback endpoint
	requestID   string
	prefiller   string   // the x-prefiller-host-port header (disaggregation)
	removed     []string // the headers the pick removes
	upstream    []byte   // the body the endpoint got
	status      int
	answer      []byte // the body the client got
}

// stream is an ext_proc stream whose answers arrive on a channel.
type stream struct {
	s    extprocv3.ExternalProcessor_ProcessClient
	in   chan *extprocv3.ProcessingResponse
	errc chan error
}

func (e *envoy) open(ctx context.Context) *stream {
	s, err := e.client.Process(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	st := &stream{s: s, in: make(chan *extprocv3.ProcessingResponse, 64), errc: make(chan error, 1)}
	go func() {
		for {
			r, err := s.Recv()
			if err != nil {
				st.errc <- err
				close(st.in)
				return
			}
			st.in <- r
		}
	}()
	return st
}

func (st *stream) send(t *testing.T, r *extprocv3.ProcessingRequest) {
	t.Helper()
	if err := st.s.Send(r); err != nil {
		t.Fatal(err)
	}
}

func (st *stream) recv(t *testing.T) *extprocv3.ProcessingResponse {
	t.Helper()
	select {
	case r, ok := <-st.in:
		if !ok {
			t.Fatalf("the picker ended the stream: %v", <-st.errc)
		}
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("no answer from the picker in 20 s")
		return nil
	}
}

func headers(kv ...string) *corev3.HeaderMap {
	m := &corev3.HeaderMap{}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Headers = append(m.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	return m
}

func metadata(ns, key string, v *structpb.Value) *corev3.Metadata {
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{ns: {Fields: map[string]*structpb.Value{key: v}}}}
}

// request sends the request's messages: headers (with the subset hint when non-nil), then the
// body in two pieces when full-duplex, whole otherwise. It returns after the picker's answer to the
// request: the pick (and the body it sends on) or an immediate response.
func (e *envoy) request(st *stream, tr *trip, path, body string, subset []string, kv ...string) {
	t := e.t
	t.Helper()
	first := &extprocv3.ProcessingRequest{
		ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: e.reqMode, ResponseBodyMode: e.respMode},
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: headers(append([]string{":method", "POST", ":path", path, "content-type", "application/json"}, kv...)...)}},
	}
	if subset != nil {
		var vals []*structpb.Value
		for _, s := range subset {
			vals = append(vals, structpb.NewStringValue(s))
		}
		first.MetadataContext = metadata("envoy.lb.subset_hint", "x-gateway-destination-endpoint-subset", structpb.NewListValue(&structpb.ListValue{Values: vals}))
	}
	st.send(t, first)
	duplex := e.reqMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
	if !duplex { // Envoy waits for the headers' answer before it sends the buffered body
		if r := st.recv(t); r.GetImmediateResponse() != nil {
			tr.immediate = r.GetImmediateResponse()
			return
		} else if r.GetRequestHeaders() == nil {
			t.Fatalf("answer to the headers: %v", r)
		}
	}
	pieces := []string{body}
	if duplex {
		pieces = []string{body[:len(body)/2], body[len(body)/2:]}
	}
	for i, p := range pieces {
		st.send(t, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
			RequestBody: &extprocv3.HttpBody{Body: []byte(p), EndOfStream: i == len(pieces)-1}}})
	}
	r := st.recv(t)
	if r.GetImmediateResponse() != nil {
		tr.immediate = r.GetImmediateResponse()
		return
	}
	var common *extprocv3.CommonResponse
	if duplex {
		common = r.GetRequestHeaders().GetResponse()
	} else {
		common = r.GetRequestBody().GetResponse()
	}
	if common == nil || !common.ClearRouteCache {
		t.Fatalf("the pick %v: want a %s answer that clears the route cache", r, map[bool]string{true: "headers", false: "body"}[duplex])
	}
	tr.readPick(r, common)
	if !duplex {
		tr.upstream = common.GetBodyMutation().GetBody()
		return
	}
	tr.upstream = st.sentOn(t)
}

// readPick reads what the pick r (its common response) tells the gateway: the destination header,
// the request's ID, and the envoy.lb metadata's destination and fallback.
func (tr *trip) readPick(r *extprocv3.ProcessingResponse, common *extprocv3.CommonResponse) {
	for _, h := range common.GetHeaderMutation().GetSetHeaders() {
		switch h.GetHeader().GetKey() {
		case "x-gateway-destination-endpoint":
			tr.destination = string(h.GetHeader().GetRawValue())
		case "x-request-id":
			tr.requestID = string(h.GetHeader().GetRawValue())
		case "x-prefiller-host-port":
			tr.prefiller = string(h.GetHeader().GetRawValue())
		}
	}
	tr.removed = common.GetHeaderMutation().GetRemoveHeaders()
	lb := r.GetDynamicMetadata().GetFields()["envoy.lb"].GetStructValue().GetFields()
	tr.metadata = lb["x-gateway-destination-endpoint"].GetStringValue()
	tr.fallback = lb["x-gateway-destination-endpoint-fallback"].GetStringValue()
}

// sentOn reads the request body the picker sends on after a full-duplex pick, in streamed pieces.
func (st *stream) sentOn(t *testing.T) []byte {
	t.Helper()
	var body []byte
	for {
		piece := st.recv(t).GetRequestBody().GetResponse().GetBodyMutation().GetStreamedResponse()
		if piece == nil {
			t.Fatal("want the request body's streamed pieces after the pick")
		}
		body = append(body, piece.Body...)
		if piece.EndOfStream {
			return body
		}
	}
}

// answer sends the request to the picked endpoint and replays its answer through the picker:
// headers (with the endpoint that served it), then the body as it comes, each read one message.
func (e *envoy) answer(st *stream, tr *trip, path string) {
	t := e.t
	t.Helper()
	dest := tr.destination
	resp, err := http.Post("http://"+dest+path, "application/json", bytes.NewReader(tr.upstream))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	tr.status = resp.StatusCode
	st.send(t, &extprocv3.ProcessingRequest{
		MetadataContext: metadata("envoy.lb", "x-gateway-destination-endpoint-served", structpb.NewStringValue(dest)),
		Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: headers(":status", fmt.Sprint(resp.StatusCode), "content-type", resp.Header.Get("Content-Type"))}}})
	if r := st.recv(t); r.GetResponseHeaders() == nil {
		t.Fatalf("answer to the response headers: %v", r)
	}
	duplex := e.respMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED
	if duplex {
		buf := make([]byte, 512)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				e.bodyPiece(st, tr, buf[:n], false)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		e.bodyPiece(st, tr, nil, true)
		return
	}
	whole, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	br := e.bodyPiece(st, tr, whole, true)
	if m := br.GetBodyMutation(); m != nil {
		tr.answer = m.GetBody()
	} else {
		tr.answer = whole
	}
}

// bodyPiece sends one piece of the answer and reads the picker's answer to it: in full-duplex
// mode the pieces it sends on (appended to the client's answer), else its body response.
func (e *envoy) bodyPiece(st *stream, tr *trip, piece []byte, eos bool) *extprocv3.CommonResponse {
	t := e.t
	t.Helper()
	st.send(t, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: piece, EndOfStream: eos}}})
	r := st.recv(t).GetResponseBody().GetResponse()
	if r == nil {
		t.Fatal("want a response body answer")
	}
	if e.respMode == filterv3.ProcessingMode_FULL_DUPLEX_STREAMED {
		sr := r.GetBodyMutation().GetStreamedResponse()
		if sr == nil || sr.EndOfStream != eos {
			t.Fatalf("streamed piece %v: want end of stream %v", sr, eos)
		}
		tr.answer = append(tr.answer, sr.Body...)
	}
	return r
}

// do runs one request through the gateway: the pick, then (when picked) the endpoint's answer.
func (e *envoy) do(path, body string, subset []string, kv ...string) trip {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := e.open(ctx)
	var tr trip
	e.request(st, &tr, path, body, subset, kv...)
	if tr.immediate == nil {
		e.answer(st, &tr, path)
	}
	_ = st.s.CloseSend()
	return tr
}

const chatPath = "/v1/chat/completions"

func extChat(stream bool, maxTokens int) string {
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Through the gateway, please: tell me about routers."}],"max_tokens":%d,"stream":%v}`,
		emulator.DefaultModel, maxTokens, stream)
}

func immediateBody(t *testing.T, ir *extprocv3.ImmediateResponse) (int, string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(ir.Body, &e); err != nil {
		t.Fatalf("immediate response body %q is not an OpenAI error: %v", ir.Body, err)
	}
	return int(ir.GetStatus().GetCode()), e.Error.Code + ": " + e.Error.Message
}

// TestExtProcEndpointPicker runs `foresight serve --ext-proc` in front of two emulated servers and
// plays Envoy's side of the endpoint picker protocol: streamed and whole completions in
// full-duplex and buffered modes get a pick in the header and the metadata, among the gateway's
// subset when it sends one; the answers go back through the picker, which hides the usage it asked
// for and teaches the producer; refusals are immediate responses (503, 429, 400) and what the
// picker cannot take is a gRPC error, on which the gateway applies its failure mode.
func TestExtProcEndpointPicker(t *testing.T) {
	fleet, err := emulator.Start(2, 0, "llama-3.1-8b-h100-tp2", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Close)
	addrs := fleet.Addrs()
	yaml := fmt.Sprintf(`plugins:
  - name: predictor
    type: predicted-latency-producer
    path: ../bin/plugins/producer
  - name: rr
    type: round-robin-picker
pipeline:
  producer: {pluginRef: predictor}
  picker: {pluginRef: rr}
  stageTimeout: 5s
server: {listen: "127.0.0.1:0", adminListen: "127.0.0.1:0", maxInflightPerEndpoint: 1}
endpoints:
  static:
    - {id: a, address: %s}
    - {id: b, address: %s}
`, addrs[0], addrs[1])
	p := startServe(t, writeConfig(t, "extproc.yaml", yaml), "--ext-proc", "127.0.0.1:0")
	conn, duplex := dialPicker(t, p.extProc)

	for _, svc := range []string{"liveness", "readiness", "envoy.service.ext_proc.v3.ExternalProcessor"} {
		h, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %q: %v, %v", svc, h, err)
		}
	}
	buffered := &envoy{t: t, client: duplex.client,
		reqMode: filterv3.ProcessingMode_BUFFERED, respMode: filterv3.ProcessingMode_BUFFERED}

	t.Run("streamed completions, full duplex", func(t *testing.T) {
		for i := range 6 {
			tr := duplex.do(chatPath, extChat(true, 8), nil, "x-request-id", fmt.Sprint("duplex-", i))
			checkPick(t, tr, addrs, 2)
			if tr.requestID != fmt.Sprint("duplex-", i) {
				t.Errorf("x-request-id %q, want the client's", tr.requestID)
			}
			if !strings.Contains(string(tr.upstream), `"include_usage":true`) {
				t.Errorf("the endpoint got %s: want the stream's usage asked for", tr.upstream)
			}
			if tr.status != http.StatusOK || !strings.HasSuffix(string(tr.answer), "data: [DONE]\n\n") || strings.Contains(string(tr.answer), `"usage"`) {
				t.Errorf("the client got %d %q: want the stream to [DONE] without the usage it did not ask for", tr.status, tr.answer)
			}
		}
	})
	t.Run("whole completions, buffered", func(t *testing.T) {
		tr := buffered.do(chatPath, extChat(false, 4), nil)
		checkPick(t, tr, addrs, 2)
		if tr.status != http.StatusOK || !strings.Contains(string(tr.answer), `"completion_tokens":4`) {
			t.Errorf("the client got %d %q", tr.status, tr.answer)
		}
	})
	t.Run("the gateway's subset", func(t *testing.T) {
		for range 3 {
			if tr := duplex.do(chatPath, extChat(true, 2), []string{addrs[1]}); tr.destination != addrs[1] {
				t.Errorf("picked %q out of the subset [%s]", tr.destination, addrs[1])
			}
		}
		tr := duplex.do(chatPath, extChat(true, 2), []string{"10.0.0.1:8000"})
		if code, msg := immediateBody(t, tr.immediate); code != http.StatusServiceUnavailable || !strings.Contains(msg, "subset") {
			t.Errorf("a subset of unknown endpoints: %d %s, want 503", code, msg)
		}
	})
	t.Run("refusals are immediate responses", func(t *testing.T) {
		tr := duplex.do(chatPath, `{"model":1}`, nil)
		if code, _ := immediateBody(t, tr.immediate); code != http.StatusBadRequest {
			t.Errorf("a bad body: %d, want 400", code)
		}
		// Two requests decided and not answered yet fill both endpoints (maxInflightPerEndpoint: 1).
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var held []*stream
		for range 2 {
			st := duplex.open(ctx)
			var tr trip
			duplex.request(st, &tr, chatPath, extChat(true, 2), nil)
			if tr.immediate != nil {
				t.Fatalf("held request refused: %v", tr.immediate)
			}
			held = append(held, st)
		}
		tr = duplex.do(chatPath, extChat(true, 2), nil)
		if code, msg := immediateBody(t, tr.immediate); code != http.StatusTooManyRequests || !strings.Contains(msg, "endpoints_full") {
			t.Errorf("with every endpoint full: %d %s, want 429 endpoints_full", code, msg)
		}
		cancel() // the gateway drops both: they leave the in-flight ledger
		for _, st := range held {
			<-st.errc
		}
		eventually.Wait(t, 10*time.Second, "a pick once the held requests are gone", func() bool {
			return duplex.do(chatPath, extChat(true, 2), nil).immediate == nil
		})
	})
	t.Run("what the picker cannot take", func(t *testing.T) {
		st := duplex.open(context.Background())
		st.send(t, &extprocv3.ProcessingRequest{
			ProtocolConfig: &extprocv3.ProtocolConfiguration{RequestBodyMode: filterv3.ProcessingMode_STREAMED},
			Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
				Headers: headers(":method", "POST", ":path", chatPath)}}})
		if _, ok := <-st.in; ok {
			t.Fatal("the picker answered a STREAMED request body mode")
		}
		if err := <-st.errc; status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "FULL_DUPLEX_STREAMED") {
			t.Errorf("STREAMED request body: %v, want InvalidArgument naming the modes it takes", err)
		}
	})
	t.Run("GET /v1/models goes to a pod", func(t *testing.T) {
		st := duplex.open(context.Background())
		st.send(t, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: headers(":method", "GET", ":path", "/v1/models"), EndOfStream: true}}})
		r := st.recv(t)
		var dest string
		for _, h := range r.GetRequestHeaders().GetResponse().GetHeaderMutation().GetSetHeaders() {
			if h.GetHeader().GetKey() == "x-gateway-destination-endpoint" {
				dest = string(h.GetHeader().GetRawValue())
			}
		}
		if !slices.Contains(addrs, dest) {
			t.Fatalf("GET /v1/models: %v; want a pick of the fleet in the headers' answer", r)
		}
		resp, err := http.Get("http://" + dest + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		models, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		st.send(t, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: headers(":status", fmt.Sprint(resp.StatusCode), "content-type", "application/json")}}})
		st.recv(t)
		st.send(t, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: models, EndOfStream: true}}})
		got := st.recv(t).GetResponseBody().GetResponse().GetBodyMutation().GetStreamedResponse().GetBody()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), emulator.DefaultModel) {
			t.Errorf("the client got %d %s; want the pod's model list", resp.StatusCode, got)
		}
	})
	t.Run("a model no pod lists goes to the pool", func(t *testing.T) {
		body := strings.Replace(extChat(false, 2), emulator.DefaultModel, "my-lora-adapter", 1)
		st := duplex.open(context.Background())
		var tr trip
		duplex.request(st, &tr, chatPath, body, nil)
		if tr.immediate != nil || !slices.Contains(addrs, tr.destination) {
			t.Errorf("an unknown model: %v, destination %q; want a pick of the fleet", tr.immediate, tr.destination)
		}
		_ = st.s.CloseSend()
	})

	// Every streamed answer taught the producer its TTFT at the first token and its TPOT at the end.
	eventually.Wait(t, 10*time.Second, "the producer's samples in /metrics", func() bool {
		resp, err := http.Get("http://" + p.admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var accepted float64
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, `foresight_predictor_samples_total{result="accepted"}`) {
				fmt.Sscanf(line[strings.LastIndexByte(line, ' ')+1:], "%g", &accepted)
			}
		}
		return accepted >= 2*9 // the 6 + 3 streamed requests above at least, two samples each
	})
}

// checkPick checks that the header and the metadata name the same endpoint, the first choice
// (server.extProcDestination's default, single), and the metadata the fallback when n is 2, all
// of the fleet.
func checkPick(t *testing.T, tr trip, addrs []string, n int) {
	t.Helper()
	if tr.immediate != nil {
		t.Fatalf("refused: %d %s", tr.immediate.GetStatus().GetCode(), tr.immediate.GetBody())
	}
	if tr.destination == "" || tr.destination != tr.metadata {
		t.Fatalf("destination header %q, metadata %q: want the same endpoint", tr.destination, tr.metadata)
	}
	picked := []string{tr.destination}
	if tr.fallback != "" {
		picked = append(picked, tr.fallback)
	}
	if len(picked) != n || slices.Contains(picked[1:], picked[0]) {
		t.Errorf("picked %v: want the first choice and %d other fallbacks", picked, n-1)
	}
	for _, p := range picked {
		if !slices.Contains(addrs, p) {
			t.Errorf("picked %s, not one of the fleet %v", p, addrs)
		}
	}
}
