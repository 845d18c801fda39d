package extproc

import (
	"bytes"
	"io"
)

// feed runs a reader-driven relay (proxy.Routed.Relay) over a body that arrives in pieces, one
// ext_proc message at a time, and gives back for each piece what the relay wrote from it. The
// relay runs on its own goroutine and reads from the pieces; when it has used every byte given so
// far and asks for more, everything it could write from them is written (openai.Relay flushes
// before every read that could block), so that output belongs in the answer to this piece. A
// partial event stays inside the relay until the rest of it comes.
type feed struct {
	in       chan []byte   // pieces for the relay; closed at the end of the body
	want     chan struct{} // the relay used all it was given and waits for more
	finished chan struct{} // the relay returned (err says how)
	out      bytes.Buffer  // written by the relay while the caller waits
	err      error
}

// startFeed starts relay, which reads the pieces from src and writes to dst, and waits until it
// asks for its first piece.
func startFeed(relay func(dst io.Writer, src io.Reader) error) *feed {
	f := &feed{in: make(chan []byte), want: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		f.err = relay(&f.out, &feedReader{f: f})
		close(f.finished)
	}()
	f.wait()
	return f
}

// push gives the relay one piece and returns what it wrote from it; after the relay returned,
// the piece passes through unchanged.
func (f *feed) push(piece []byte) []byte {
	select {
	case f.in <- piece:
	case <-f.finished:
		return append(f.take(), piece...)
	}
	f.wait()
	return f.take()
}

// end tells the relay the body ended and returns the rest of what it wrote and how it ended.
// It is safe to call more than once.
func (f *feed) end() ([]byte, error) {
	select {
	case <-f.finished:
	default:
		close(f.in)
		<-f.finished
	}
	return f.take(), f.err
}

// wait blocks until the relay asks for more or returns.
func (f *feed) wait() {
	select {
	case <-f.want:
	case <-f.finished:
	}
}

// take returns and clears what the relay wrote; the relay is waiting or gone, so it does not
// write meanwhile.
func (f *feed) take() []byte {
	b := bytes.Clone(f.out.Bytes())
	f.out.Reset()
	return b
}

// feedReader is the relay's side: it reads the current piece, and when it is used up tells the
// caller and waits for the next.
type feedReader struct {
	f   *feed
	cur []byte
}

func (r *feedReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		r.f.want <- struct{}{}
		piece, ok := <-r.f.in
		if !ok {
			return 0, io.EOF
		}
		r.cur = piece
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}
