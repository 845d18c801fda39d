package chaos

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foresight-router/foresight/internal/splitmix"
)

// MaxCutAfter bounds the events a truncated stream keeps: each is cut after 0 to MaxCutAfter
// of them, seeded. A cut after 0 events ends the stream before its first one, which the router
// may still move to another endpoint; a cut after 1 or more reaches the client part-way.
const MaxCutAfter = 3

// TruncatedCounts is what a Truncator did to the streams it relayed.
type TruncatedCounts struct {
	// Streams is the streamed answers it relayed (event streams), truncated or not.
	Streams int64 `json:"streams"`
	// CutBeforeFirst is the streams it ended before their first event; CutAfterFirst those it
	// ended after one or more: each ended cleanly (a well-formed end of the HTTP body) with
	// neither the rest of its events nor its data: [DONE].
	CutBeforeFirst int64 `json:"cut_before_first_event"`
	CutAfterFirst  int64 `json:"cut_after_first_event"`
}

// Truncator is a reverse proxy in front of one server that ends every Every-th event stream it
// relays early, after a seeded number of events in [0, MaxCutAfter], as a server does whose
// engine process exits or whose sidecar gives up between two events while the HTTP connection
// ends cleanly: the body ends well-formed, without data: [DONE]. Everything else — whole
// answers, /metrics, /health, /v1/models — passes through untouched. Close stops it.
type Truncator struct {
	srv   *http.Server
	ln    net.Listener
	every int64
	seed  uint64

	streams, before, after atomic.Int64
	whole                  atomic.Bool // Spare was called: every stream passes whole
	wg                     sync.WaitGroup
}

// StartTruncator starts a Truncator on a free loopback port in front of target (host:port),
// cutting every every-th stream (every ≥ 1).
func StartTruncator(target string, every int, seed uint64) (*Truncator, error) {
	if every < 1 {
		return nil, fmt.Errorf("a truncator cuts every n-th stream, n ≥ 1; got %d", every)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &Truncator{ln: ln, every: int64(every), seed: seed}
	up := &url.URL{Scheme: "http", Host: target}
	rp := &httputil.ReverseProxy{
		Rewrite:        func(r *httputil.ProxyRequest) { r.SetURL(up) },
		FlushInterval:  -1, // every event as it comes, as the engine sent it
		ModifyResponse: t.modify,
		Transport:      &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second},
	}
	t.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		_ = t.srv.Serve(ln)
	}()
	return t, nil
}

// Addr is the truncator's host:port, to give the router in place of the server's.
func (t *Truncator) Addr() string { return t.ln.Addr().String() }

// Counts returns what the truncator did so far.
func (t *Truncator) Counts() TruncatedCounts {
	return TruncatedCounts{Streams: t.streams.Load(), CutBeforeFirst: t.before.Load(), CutAfterFirst: t.after.Load()}
}

// Spare makes the truncator relay every stream from now on whole, uncounted, as when the fault is
// over: what follows (bench soak's drain) is then not confounded with it.
func (t *Truncator) Spare() { t.whole.Store(true) }

// Close stops the truncator and ends the streams it is relaying.
func (t *Truncator) Close() {
	_ = t.srv.Close()
	t.wg.Wait()
}

// modify picks the streams to cut: every Every-th event stream, after a number of events drawn
// from its rank and the seed.
func (t *Truncator) modify(resp *http.Response) error {
	if t.whole.Load() || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return nil
	}
	n := t.streams.Add(1)
	if n%t.every != 0 {
		return nil
	}
	keep := int(splitmix.Mix(t.seed+uint64(n)*splitmix.Gamma) % (MaxCutAfter + 1))
	resp.Body = &cutBody{r: bufio.NewReader(resp.Body), c: resp.Body, keep: keep, t: t}
	return nil
}

// cutBody is a stream's body that ends after keep events, unless the stream ends first.
type cutBody struct {
	r    *bufio.Reader
	c    io.Closer
	keep int
	t    *Truncator

	seen    int          // events passed through
	pending bytes.Buffer // the current event's bytes, passed on once it is whole
	out     bytes.Buffer // whole events not yet read
	ended   bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	for b.out.Len() == 0 && !b.ended {
		line, err := b.r.ReadBytes('\n')
		b.pending.Write(line)
		if err != nil {
			b.out.Write(b.pending.Bytes()) // the stream's own end: pass it on as it is
			b.pending.Reset()
			if b.out.Len() == 0 {
				return 0, err
			}
			b.ended = true
			break
		}
		if len(bytes.TrimRight(line, "\r\n")) > 0 {
			continue // inside an event
		}
		if strings.TrimSpace(b.pending.String()) == "" { // a blank line between events
			b.out.Write(b.pending.Bytes())
			b.pending.Reset()
			continue
		}
		if b.seen == b.keep && !bytes.Contains(b.pending.Bytes(), []byte("[DONE]")) {
			// Cut here: the event and all after it are dropped, the body ends cleanly.
			if b.keep == 0 {
				b.t.before.Add(1)
			} else {
				b.t.after.Add(1)
			}
			b.pending.Reset()
			b.ended = true
			break
		}
		b.seen++
		b.out.Write(b.pending.Bytes())
		b.pending.Reset()
	}
	if b.out.Len() == 0 {
		return 0, io.EOF
	}
	return b.out.Read(p)
}

func (b *cutBody) Close() error {
	err := b.c.Close()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
