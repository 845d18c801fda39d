package proxy

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/foresight-router/foresight/host/openai"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// maxWholeBytes bounds a non-streamed upstream response the router reads to measure it.
const maxWholeBytes = 64 << 20

// maxErrorQuote bounds how much of an engine's 5xx body a failover's reason quotes.
const maxErrorQuote = 256

// errNoFirstByte cancels an attempt whose stream sent nothing within server.firstByteTimeout.
var errNoFirstByte = errors.New("no first byte")

// try sends the exchange to a's endpoint and relays the answer. It returns an error when the
// attempt failed before the client got any byte — no connection, a reset, a 5xx, a stream with
// no first event within server.firstByteTimeout, an answer that is not an OpenAI one — so that
// the request can go to the next endpoint. Otherwise out holds the answer: the engine's, its
// own error (4xx) passed through, or a stream that broke after its first byte or ended without
// its "data: [DONE]", ended with an error event and counted as failed (502, or 504 at
// server.upstreamTimeout).
//
// How the attempt ended goes to outlier detection (endpoints.Set.ReportRequest), unless the
// client left first.
func (s *Server) try(ctx context.Context, w http.ResponseWriter, x *exchange, a *attempt, out *outcome) error {
	err := s.call(ctx, w, x, a, out)
	switch {
	case x.client.Err() != nil: // says nothing of the endpoint
	case err != nil:
		s.o.Endpoints.ReportRequest(a.ep.ID, err)
	case out.status >= 500: // the stream broke after its first byte
		s.o.Endpoints.ReportRequest(a.ep.ID, errors.New(out.err))
	default:
		s.o.Endpoints.ReportRequest(a.ep.ID, nil)
	}
	return err
}

// call is try without the report.
func (s *Server) call(ctx context.Context, w http.ResponseWriter, x *exchange, a *attempt, out *outcome) error {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var timer *time.Timer
	if x.req.Stream && s.o.FirstByteTimeout > 0 { // a whole answer has no byte before it is complete
		timer = time.AfterFunc(s.o.FirstByteTimeout, func() { cancel(errNoFirstByte) })
		defer timer.Stop()
	}
	resp, err := s.send(actx, a.ep.ID, x, x.body)
	if err != nil {
		err = s.cause(actx, err)
		s.o.Endpoints.ReportFailure(a.ep.ID, err)
		return err
	}
	defer resp.Body.Close()
	s.o.Endpoints.ReportSuccess(a.ep.ID)
	if resp.StatusCode >= 500 {
		quote, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorQuote))
		return fmt.Errorf("answered %s: %s", resp.Status, bytes.TrimSpace(quote))
	}
	out.endpoint, out.predicted = a.ep.ID, a.ep.Prediction
	switch {
	case resp.StatusCode != http.StatusOK: // the engine's own answer to a bad request, as it is
		copyHeaders(w, resp)
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, io.LimitReader(resp.Body, maxWholeBytes))
		out.status, out.err = resp.StatusCode, "endpoint answered "+resp.Status
		return nil
	case x.req.Stream:
		return s.relayStream(actx, w, resp, x, a, timer, out)
	default:
		return s.relayWhole(actx, w, resp, x, a, out)
	}
}

// cause names why an attempt's request failed: its first-byte deadline, or err.
func (s *Server) cause(actx context.Context, err error) error {
	if errors.Is(context.Cause(actx), errNoFirstByte) {
		return fmt.Errorf("no first byte within %v (server.firstByteTimeout)", s.o.FirstByteTimeout)
	}
	return err
}

// send posts the body to the endpoint; an error means no response arrived.
func (s *Server) send(ctx context.Context, id string, x *exchange, body []byte) (*http.Response, error) {
	st, ok := s.o.Endpoints.Get(id)
	if !ok {
		return nil, fmt.Errorf("endpoint %s left the fleet", id)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.BaseURL()+x.req.Kind.Path(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderRequestID, x.meta.id)
	return s.client.Do(req)
}

// copyHeaders gives the client the engine's Content-Type and Cache-Control.
func copyHeaders(w http.ResponseWriter, resp *http.Response) {
	for _, h := range []string{"Content-Type", "Cache-Control"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
}

// relayWhole reads a non-streamed answer whole, then writes it to the client and measures it.
// Nothing reaches the client before the answer is complete and readable, so any failure until
// then fails over.
func (s *Server) relayWhole(actx context.Context, w http.ResponseWriter, resp *http.Response, x *exchange, a *attempt, out *outcome) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxWholeBytes))
	out.e2e = s.o.Now().Sub(a.dispatched)
	if err != nil {
		return s.cause(actx, fmt.Errorf("broke off its answer: %w", err))
	}
	answer, usage, err := openai.ReadWhole(x.req.Kind, data)
	if err != nil {
		return fmt.Errorf("answered 200 with what is not an OpenAI answer: %w", err)
	}
	copyHeaders(w, resp)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(x.rename().Apply(data))
	out.status, out.usage = http.StatusOK, usage
	s.recordAnswer(a, x, answer)
	s.measureWhole(x, a, out.e2e, true)
	return nil
}

// measureWhole teaches the producer what a whole answer shows of the engine's latency: an
// embedding's answer comes when its prefill ends, so its end-to-end time is its TTFT; a whole
// completion's mixes prefill and decoding and teaches nothing. sample false (a fallback served,
// after failed attempts) teaches nothing either.
func (s *Server) measureWhole(x *exchange, a *attempt, e2e time.Duration, sample bool) {
	if sample && x.req.Kind == openai.Embeddings {
		s.observe(x, a, sdk.Sample{ActualTTFTMs: ms(e2e)}, s.o.Now())
	}
}

// answerWriter writes a streamed answer to the client. The status line and headers go with the
// first bytes, so until then the attempt can fail over; the first-byte timer stops there (or, had
// it fired already, the write fails with errNoFirstByte and nothing is written).
type answerWriter struct {
	w       http.ResponseWriter
	resp    *http.Response
	timer   *time.Timer
	started bool
}

func (aw *answerWriter) Write(p []byte) (int, error) {
	if !aw.started {
		if aw.timer != nil && !aw.timer.Stop() {
			return 0, errNoFirstByte
		}
		aw.started = true
		copyHeaders(aw.w, aw.resp)
		aw.w.WriteHeader(http.StatusOK)
	}
	return aw.w.Write(p)
}

func (aw *answerWriter) flush() {
	if f, ok := aw.w.(http.Flusher); ok && aw.started {
		f.Flush()
	}
}

// measureStream reads the answer's TTFT, TPOT and usage from what Relay saw. A complete answer
// goes to the prefix index and, when sample says so, its TPOT to the producer.
func (s *Server) measureStream(x *exchange, a *attempt, res openai.StreamResult, out *outcome, complete, sample bool) {
	out.usage = res.Usage
	if !res.FirstContent.IsZero() {
		out.ttft = ms(res.FirstContent.Sub(a.dispatched))
		if res.Usage != nil && res.Usage.CompletionTokens >= 2 && res.Last.After(res.FirstContent) {
			out.tpot = ms(res.Last.Sub(res.FirstContent)) / float64(res.Usage.CompletionTokens-1)
		}
	}
	if !complete {
		return
	}
	s.recordAnswer(a, x, res.Answer)
	if sample && out.tpot > 0 {
		s.observe(x, a, sdk.Sample{ActualTPOTMs: out.tpot, OutputTokens: res.Usage.CompletionTokens}, s.o.Now())
	}
}

// relayStream streams the SSE answer through, without the usage chunk the client did not ask
// for. A stream that fails before its first event reached the client fails over; one that fails
// after it, or ends without "data: [DONE]", ends with an error event (openai.WriteStreamError)
// and counts as failed.
func (s *Server) relayStream(actx context.Context, w http.ResponseWriter, resp *http.Response, x *exchange, a *attempt, timer *time.Timer, out *outcome) error {
	aw := &answerWriter{w: w, resp: resp, timer: timer}
	first := func(at time.Time) {
		a.flight.FirstToken(at)
		s.observe(x, a, sdk.Sample{ActualTTFTMs: ms(at.Sub(a.dispatched))}, at)
	}
	res, err := openai.Relay(aw, resp.Body, openai.RelayOptions{Kind: x.req.Kind, Rename: x.rename(), Flush: aw.flush,
		HideUsage: x.req.HiddenUsage(), Now: s.o.Now, OnFirst: first, OnTokens: a.flight.Tokens, FlushEvery: s.o.StreamFlushInterval})
	out.e2e = s.o.Now().Sub(a.dispatched)
	if !aw.started {
		if err == nil {
			err = errors.New("ended its stream without an event")
		}
		return s.cause(actx, err)
	}
	out.status = http.StatusOK
	// Only [DONE] makes the answer complete: a failure after it reached the client (it hung up,
	// the engine reset) cut nothing, and a stream that ends cleanly without it was cut all the same.
	s.measureStream(x, a, res, out, res.Done, true)
	var source *openai.SourceError
	switch {
	case res.Done:
	case shuttingDown(x.client): // the router's grace ended (shutdown.go)
		e := shutdownStreamError(a.ep.ID, res.Chunks)
		_ = openai.WriteStreamError(aw, x.req.Kind, e, res.Partial)
		aw.flush()
		out.status, out.err = e.Status, ErrShuttingDown.Error()
	case err != nil && (!errors.As(err, &source) || x.client.Err() != nil): // the client went away
		out.status, out.err = statusClientClosed, "client went away mid-answer"
	default:
		e := brokenStream(a.ep.ID, res.Chunks, err)
		if errors.Is(actx.Err(), context.DeadlineExceeded) {
			e.Status, e.Type, e.Code = http.StatusGatewayTimeout, openai.TypeTimeout, "upstream_timeout"
			e.Message = fmt.Sprintf("endpoint %s did not finish the stream within %v (server.upstreamTimeout); the answer is incomplete", a.ep.ID, s.o.UpstreamTimeout)
		}
		_ = openai.WriteStreamError(aw, x.req.Kind, e, res.Partial)
		aw.flush()
		out.status, out.err = e.Status, "stream broken after its first byte: "+cmp.Or(err, errNoDone).Error()
	}
	return nil
}

// errNoDone is why a stream that ended at EOF without "data: [DONE]" failed.
var errNoDone = errors.New("the stream ended without data: [DONE]")

// brokenStream is the error event ending a stream the engine broke off after chunks content
// chunks: err is the read error or the stray event, nil when the stream simply ended without
// its [DONE] (a connection closed cleanly mid-answer, an engine's proxy giving up).
func brokenStream(id string, chunks int, err error) *openai.Error {
	e := &openai.Error{Status: http.StatusBadGateway, Type: openai.TypeServer, Code: "upstream_stream_broken",
		Message: fmt.Sprintf("endpoint %s broke off the stream after %d content chunks: %v; the answer is incomplete", id, chunks, err)}
	if err == nil {
		e.Message = fmt.Sprintf("endpoint %s ended the stream after %d content chunks without data: [DONE]; the answer is incomplete", id, chunks)
	}
	return e
}
