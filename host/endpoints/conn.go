package endpoints

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// conn is the keep-alive HTTP/1.1 connection over which one loop scrapes a plain-http endpoint's
// /metrics. The loop's goroutine writes the request and reads the answer itself, with net/http's
// own response parser (http.ReadResponse). http.Transport would hand each request to the
// connection's writer goroutine and the answer back from its reader goroutine: three goroutine
// wake-ups a scrape, which at 20 scrapes a second per endpoint made up much of an idle router's
// CPU. A conn is used by one goroutine at a time.
type conn struct {
	url    string // for errors
	addr   string // host:port to dial
	req    []byte // the whole GET request
	dialer net.Dialer

	c    net.Conn // nil: dial at the next get
	br   *bufio.Reader
	stop func() bool // unregisters the interruption of c when the loop's context ends
}

// newConn returns the connection that GETs rawURL, an http URL, or nil when rawURL is not one.
func newConn(rawURL, accept string) *conn {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: foresight\r\nAccept: " + accept +
		"\r\nAccept-Encoding: identity\r\n\r\n"
	return &conn{
		url: rawURL, addr: addr, req: []byte(req),
		dialer: net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}, // DefaultClient's
	}
}

// errRedirect marks an answer that sends the scrape elsewhere (e.g. a /metrics mounted at
// /metrics/): the scraper then leaves the URL to its client, which follows redirects.
var errRedirect = errors.New("redirected")

// errStale marks a reused connection that the server had closed before this request reached it.
var errStale = errors.New("connection closed by the server while idle")

// get fetches the URL into body within timeout, as scraper.get does: anything but a 2xx answer
// with a body of at most MaxBodyBytes is an error. A connection the server closed while idle is
// dialed again once; one that failed otherwise is dropped and dialed at the next get. ctx ending
// interrupts a get in progress.
func (c *conn) get(ctx context.Context, timeout time.Duration, body *bytes.Buffer) error {
	reused := c.c != nil
	err := c.roundTrip(ctx, timeout, body)
	if err != nil && reused && errors.Is(err, errStale) && ctx.Err() == nil {
		c.close()
		err = c.roundTrip(ctx, timeout, body)
	}
	if err != nil {
		c.close()
	}
	return err
}

func (c *conn) roundTrip(ctx context.Context, timeout time.Duration, body *bytes.Buffer) error {
	body.Reset()
	reused := c.c != nil
	if !reused {
		nc, err := c.dialer.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			return fmt.Errorf("GET %s: %w", c.url, err)
		}
		c.c = nc
		if c.br == nil {
			c.br = bufio.NewReaderSize(nc, 16<<10)
		} else {
			c.br.Reset(nc)
		}
		c.stop = context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	}
	if err := c.c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return fmt.Errorf("GET %s: %w", c.url, err)
	}
	if _, err := c.c.Write(c.req); err != nil {
		return c.failed(reused, err)
	}
	if _, err := c.br.Peek(1); err != nil {
		return c.failed(reused, err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return fmt.Errorf("GET %s: reading the answer: %w", c.url, err)
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 && resp.Header.Get("Location") != "" {
		return fmt.Errorf("GET %s: status %s: %w", c.url, resp.Status, errRedirect)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("GET %s: status %s", c.url, resp.Status) // get drops the connection
	}
	n, err := body.ReadFrom(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: reading the body: %w", c.url, err)
	}
	if n > MaxBodyBytes {
		return fmt.Errorf("GET %s: body larger than %d bytes", c.url, MaxBodyBytes)
	}
	if resp.Close {
		c.close() // the server said so, or the body ran to the end of the connection
	}
	return nil
}

// failed is the error of a request that got no answer: stale when the connection was reused and
// the server had closed it (nothing can be told apart from that before a byte arrives).
func (c *conn) failed(reused bool, err error) error {
	if reused && !errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("GET %s: %w: %w", c.url, errStale, err)
	}
	return fmt.Errorf("GET %s: %w", c.url, err)
}

// close drops the connection, if any.
func (c *conn) close() {
	if c.c == nil {
		return
	}
	c.stop()
	_ = c.c.Close()
	c.c = nil
}
