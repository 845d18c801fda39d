package kvevents

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
)

// The sockets of this package are ZMTP 3.0 connections (https://rfc.zeromq.org/spec/23/) that it
// dials, accepts and frames itself, using go-zeromq/zmq4 only for the handshake (zmq4.Open: the
// greeting, the NULL mechanism's READY metadata and the check that the peer's socket type fits).
//
// Why not zmq4's sockets (NewSub, NewDealer, NewPub, NewRouter)? Reading v0.17.0 showed, for
// what a long-lived subscriber needs:
//   - Dial retries a refused connection WithDialerMaxRetries times (10 by default; -1 forever),
//     WithDialerRetry (250 ms) apart, in time.Sleep (the socket's context is checked only between
//     attempts), then fails; it never backs off. WithDialerTimeout only sets the net.Dialer's
//     Timeout, 5 minutes by default.
//   - When a connection drops, Recv returns its error once and then blocks for good unless Dial
//     is called again. WithAutomaticReconnect makes that Dial from inside the dropped
//     connection's reader goroutine, before Recv sees the error, with the same bounded retries:
//     a publisher away longer than them leaves the socket silently dead. That Dial also writes
//     the socket's endpoint field without a lock.
//   - Each connection's reader goroutine pushes into a channel of 10 messages without watching the
//     socket's context: closing a socket while that channel is full leaks the goroutine, and a
//     PUB socket's writer goroutine (pubMWriter.run) is never stopped by Close at all.
//   - A PUB queues messages without bound by default and writes to its subscribers one after
//     the other, so one slow subscriber stalls the others.
//   - Frames are read into make([]byte, size) with size taken from the peer up to 2^63, so a
//     broken or hostile peer can make a reader allocate without bound.
//   - Open itself panics when the peer's READY names no socket type or an unknown one (see open).
//
// Owning the net.Conn instead gives a context-aware dial with our own backoff, one reader that
// ends when its connection is closed, frames bounded by maxMessage and read into reused buffers,
// and, for the Publisher, a bounded queue per subscriber that drops when full, as libzmq's PUB
// does at its high-water mark. The handshake still goes through zmq4.Open, which reads exactly
// the greeting and the READY command, so the stream is at the first frame when it returns. (zmq4
// greets as ZMTP 3.0; libzmq, vLLM's side, then sends and expects subscriptions as messages
// beginning with 1 or 0, which is what this file does.)

const (
	// maxMessage bounds the frames of one message together (and the body of a command); a peer
	// sending more is dropped. vLLM's batches are kilobytes (a step's new blocks); 64 MiB is
	// hundreds of thousands of blocks.
	maxMessage = 64 << 20
	// maxCommand bounds a ZMTP command (PING, and what this file ignores).
	maxCommand = 64 << 10
	// maxFrames bounds the frames of one message; the messages here have two or three.
	maxFrames = 8
	// handshakeTimeout bounds the ZMTP handshake of a new connection.
	handshakeTimeout = 5 * time.Second

	flagMore    = 0x01
	flagLong    = 0x02
	flagCommand = 0x04
)

// endpoint is a ZeroMQ address parsed for the net package: "tcp://host:port" or "ipc://path".
type endpoint struct {
	network, addr string
}

// ValidateAddress checks the address of a publisher to connect to: tcp://host:port (a host and a
// port in 1–65535) or ipc://path, the transports this package speaks.
func ValidateAddress(s string) error {
	_, err := parseEndpoint(s, false)
	return err
}

// parseEndpoint parses a ZeroMQ address. Only tcp:// and ipc:// are supported. When bind, a host
// "*" (ZeroMQ's every interface) is allowed and port 0 picks a free port; otherwise host and port
// must be given.
func parseEndpoint(s string, bind bool) (endpoint, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	switch {
	case !ok:
		return endpoint{}, fmt.Errorf("kvevents: address %q: want tcp://host:port or ipc://path", s)
	case scheme == "ipc":
		if rest == "" {
			return endpoint{}, fmt.Errorf("kvevents: address %q: no path", s)
		}
		return endpoint{network: "unix", addr: rest}, nil
	case scheme != "tcp":
		return endpoint{}, fmt.Errorf("kvevents: address %q: transport %q is not supported, want tcp or ipc", s, scheme)
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil {
		return endpoint{}, fmt.Errorf("kvevents: address %q: %w", s, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	switch {
	case err != nil:
		return endpoint{}, fmt.Errorf("kvevents: address %q: bad port %q", s, port)
	case !bind && (p == 0 || host == "" || host == "*"):
		return endpoint{}, fmt.Errorf("kvevents: address %q: a subscriber needs a host and a port", s)
	case host == "*":
		host = ""
	}
	return endpoint{network: "tcp", addr: net.JoinHostPort(host, port)}, nil
}

// dialer dials publishers. Keep-alive probes notice a publisher whose host vanished (no FIN) in
// about 30 s; an idle engine publishes nothing, so silence alone proves nothing.
var dialer = net.Dialer{
	Timeout:         handshakeTimeout,
	KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3},
}

// dial connects to ep and performs the ZMTP handshake as a socket of type typ, within ctx.
func dial(ctx context.Context, ep endpoint, typ zmq4.SocketType) (*wire, error) {
	c, err := dialer.DialContext(ctx, ep.network, ep.addr)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(handshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	w, err := handshake(c, typ, false, deadline)
	if !stop() {
		c.Close()
		return nil, ctx.Err()
	}
	return w, err
}

// handshake performs the ZMTP handshake on c as a socket of type typ, before deadline, and
// returns the connection ready for frames; on failure it closes c.
func handshake(c net.Conn, typ zmq4.SocketType, server bool, deadline time.Time) (*wire, error) {
	c.SetDeadline(deadline)
	if err := open(c, typ, server); err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return &wire{conn: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

// open runs zmq4.Open, turning its panic into an error: it panics ("unknown socket-type") when
// the peer's READY names no socket type or one it does not know.
func open(c net.Conn, typ zmq4.SocketType, server bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("kvevents: ZMTP handshake: %v", p)
		}
	}()
	// No identity: a ROUTER then routes by one it generates, as for any anonymous DEALER.
	_, err = zmq4.Open(c, null.Security(), typ, nil, server, nil)
	return err
}

// wire is an established ZMTP connection. readMsg belongs to one goroutine; writes may come
// from several.
type wire struct {
	conn   net.Conn
	r      *bufio.Reader
	frames [][]byte // the last message read; its arrays are reused by the next

	wmu  sync.Mutex
	wbuf []byte
}

func (w *wire) close() error { return w.conn.Close() }

// readMsg reads the next message and returns its frames, valid until the next readMsg. Commands
// between messages are handled (PING is answered with PONG) or ignored. It fails on a read error,
// a message of more than maxFrames frames or maxMessage bytes, or a command within a message.
func (w *wire) readMsg() ([][]byte, error) {
	n, total := 0, uint64(0)
	for {
		flags, err := w.r.ReadByte()
		if err != nil {
			return nil, err
		}
		var size uint64
		if flags&flagLong != 0 {
			var b [8]byte
			if _, err := io.ReadFull(w.r, b[:]); err != nil {
				return nil, err
			}
			size = binary.BigEndian.Uint64(b[:])
		} else {
			b, err := w.r.ReadByte()
			if err != nil {
				return nil, err
			}
			size = uint64(b)
		}
		if size > maxMessage-total {
			return nil, fmt.Errorf("kvevents: message larger than %d bytes", maxMessage)
		}
		if flags&flagCommand != 0 {
			if n > 0 {
				return nil, errors.New("kvevents: command inside a message")
			}
			if err := w.command(size); err != nil {
				return nil, err
			}
			continue
		}
		if n == maxFrames {
			return nil, fmt.Errorf("kvevents: message of more than %d frames", maxFrames)
		}
		if n == len(w.frames) {
			w.frames = append(w.frames, nil)
		}
		f := grow(w.frames[n], int(size))
		if _, err := io.ReadFull(w.r, f); err != nil {
			return nil, err
		}
		w.frames[n] = f
		n++
		total += size
		if flags&flagMore == 0 {
			return w.frames[:n], nil
		}
	}
}

// command reads a command of size bytes (a name length, the name, data) and answers a PING.
func (w *wire) command(size uint64) error {
	if size > maxCommand {
		return fmt.Errorf("kvevents: ZMTP command larger than %d bytes", maxCommand)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(w.r, body); err != nil {
		return err
	}
	if len(body) == 0 || int(body[0]) > len(body)-1 {
		return errors.New("kvevents: malformed ZMTP command")
	}
	name, data := string(body[1:1+body[0]]), body[1+body[0]:]
	if name != zmq4.CmdPing || len(data) < 2 {
		return nil
	}
	// PING carries a TTL (2 bytes) and a context that PONG returns.
	pong := append([]byte{byte(len(zmq4.CmdPong))}, zmq4.CmdPong...)
	pong = append(pong, data[2:]...)
	return w.write(appendFrame(nil, flagCommand, pong))
}

// send writes one message of frames.
func (w *wire) send(frames ...[]byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.wbuf = appendMsg(w.wbuf[:0], frames...)
	_, err := w.conn.Write(w.wbuf)
	return err
}

// write writes messages already in wire form (appendMsg's).
func (w *wire) write(b []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	_, err := w.conn.Write(b)
	return err
}

// appendMsg appends the wire form of a message of frames to dst.
func appendMsg(dst []byte, frames ...[]byte) []byte {
	for i, f := range frames {
		var flags byte
		if i < len(frames)-1 {
			flags = flagMore
		}
		dst = appendFrame(dst, flags, f)
	}
	return dst
}

// appendFrame appends one frame with flags (the long flag is set as the size needs).
func appendFrame(dst []byte, flags byte, body []byte) []byte {
	if len(body) > 255 {
		dst = binary.BigEndian.AppendUint64(append(dst, flags|flagLong), uint64(len(body)))
	} else {
		dst = append(dst, flags, byte(len(body)))
	}
	return append(dst, body...)
}

// seqFrame is the 8-byte big-endian sequence frame.
func seqFrame(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// endSeq is the sequence of the replay's end marker: int64 -1.
const endSeq = ^uint64(0)
