package extproc

import "time"

// bodyDeadline bounds the wait for a request's body, as the OpenAI front bounds reading it:
// server.readBodyTimeout from the end of the headers. Past it the request is answered 408
// body_timeout and its stream ends, so that a client which never sends its body does not hold a
// slot of server.maxConcurrentRequests.
type bodyDeadline struct{ t *time.Timer }

// after returns what fires when x's body is overdue: x is reading its body and
// server.readBodyTimeout has passed since its headers were handled; nil (never) in any other step.
func (d *bodyDeadline) after(x *exchange) <-chan time.Time {
	limit := x.s.o.Router.ReadBodyTimeout()
	if x.phase != phaseBody || limit <= 0 {
		d.stop()
		return nil
	}
	if d.t == nil {
		d.t = time.NewTimer(limit)
	}
	return d.t.C
}

func (d *bodyDeadline) stop() {
	if d.t != nil {
		d.t.Stop()
		d.t = nil
	}
}
