package kvevents

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
	"github.com/go-zeromq/zmq4"
	"github.com/google/go-cmp/cmp"
)

// These tests talk to go-zeromq/zmq4's own PUB, ROUTER, SUB and DEALER sockets, another ZMTP
// implementation than this package's framing, laid out as vLLM's ZmqEventPublisher and its
// clients use them.

// TestSubscriberWithZmq4Sockets follows a zmq4 PUB, replaying from a zmq4 ROUTER served as vLLM
// serves it, and receives malformed messages.
func TestSubscriberWithZmq4Sockets(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub := zmq4.NewPub(ctx)
	defer pub.Close()
	if err := pub.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	router := zmq4.NewRouter(ctx)
	defer router.Close()
	if err := router.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	kept := map[uint64][]byte{}
	go func() { // vLLM's _service_replay
		for {
			msg, err := router.Recv()
			if err != nil {
				return
			}
			if len(msg.Frames) != 3 || len(msg.Frames[1]) != 0 || len(msg.Frames[2]) != 8 {
				t.Errorf("replay request %q", msg.Frames)
				continue
			}
			id, start := msg.Frames[0], be64(msg.Frames[2])
			mu.Lock()
			var seqs []uint64
			for seq := range kept {
				if seq >= start {
					seqs = append(seqs, seq)
				}
			}
			slices.Sort(seqs)
			for _, seq := range seqs {
				router.Send(zmq4.NewMsgFrom(id, nil, be8(seq), kept[seq]))
			}
			mu.Unlock()
			router.Send(zmq4.NewMsgFrom(id, nil, be8(endSeq), nil))
		}
	}()
	next := uint64(0)
	send := func(deliver bool) {
		payload := AppendBatch(nil, batchFor(next, 1))
		mu.Lock()
		kept[next] = payload
		mu.Unlock()
		if deliver {
			if err := pub.Send(zmq4.NewMsgFrom(nil, be8(next), payload)); err != nil {
				t.Fatal(err)
			}
		}
		next++
	}
	sub, col, _ := startSub(t, SubscriberConfig{
		Address: "tcp://" + pub.Addr().String(), Replay: "tcp://" + router.Addr().String(),
	})
	eventually.Wait(t, deadline, "a first batch", func() bool {
		send(true)
		return len(col.all()) > 0
	})
	send(false)
	send(false)
	send(true)
	send(true)
	waitSeq(t, col, next-1)
	// A payload that does not decode is lost; a message of two frames has no place in the sequence.
	pub.Send(zmq4.NewMsgFrom(nil, be8(next), []byte{0xc1}))
	next++
	pub.Send(zmq4.NewMsgFrom(nil, be8(next)))
	send(true)
	waitSeq(t, col, next-1)

	msgs := col.all()
	checkConsecutive(t, msgs[:len(msgs)-1], 1)
	if m := msgs[len(msgs)-1]; m.Missed != 1 || m.Batch.Seq != next-1 {
		t.Errorf("after the bad payload: seq %d missing %d, want seq %d missing 1", m.Batch.Seq, m.Missed, next-1)
	}
	if st := sub.Stats(); st.Gaps != 1 || st.Replayed < 2 || st.DecodeErrors != 2 || st.Missed != 1 {
		t.Errorf("Stats = %+v, want 1 gap, 2 or more replayed, 2 decode errors, 1 missed", st)
	}
}

// TestPublisherWithZmq4Sockets reads a Publisher with a zmq4 SUB and asks its replay socket from
// a zmq4 DEALER.
func TestPublisherWithZmq4Sockets(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newTestPub(t, "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", 100, 1)
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := sub.Dial(p.Addr()); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	received := make(chan zmq4.Msg, 1000)
	go func() {
		for {
			msg, err := sub.Recv()
			if err != nil {
				return
			}
			received <- msg
		}
	}()
	var first zmq4.Msg
	eventually.Wait(t, deadline, "a first batch", func() bool {
		p.publish(t)
		select {
		case first = <-received:
			return true
		default:
			return false
		}
	})
	if len(first.Frames) != 3 || len(first.Frames[0]) != 0 || len(first.Frames[1]) != 8 {
		t.Fatalf("message %q, want topic, sequence and payload", first.Frames)
	}
	var got Batch
	if err := Decode(first.Frames[2], &got); err != nil {
		t.Fatal(err)
	}
	got.Seq = be64(first.Frames[1])
	if d := cmp.Diff(batchFor(got.Seq, 1), &got, equal); d != "" {
		t.Errorf("batch (-want +got):\n%s", d)
	}

	dealer := zmq4.NewDealer(ctx)
	defer dealer.Close()
	if err := dealer.Dial(p.ReplayAddr()); err != nil {
		t.Fatal(err)
	}
	for _, start := range []uint64{0, p.next - 1} {
		if err := dealer.Send(zmq4.NewMsgFrom(nil, be8(start))); err != nil {
			t.Fatal(err)
		}
		for want := start; ; want++ {
			msg := recvWithin(t, dealer)
			if len(msg.Frames) != 3 || len(msg.Frames[0]) != 0 || len(msg.Frames[1]) != 8 {
				t.Fatalf("replayed %q, want empty, sequence and payload", msg.Frames)
			}
			seq := be64(msg.Frames[1])
			if seq == endSeq {
				if want != p.next || len(msg.Frames[2]) != 0 || !bytes.Equal(msg.Frames[1], bytes.Repeat([]byte{0xff}, 8)) {
					t.Errorf("end marker %q after %d batches from %d, want %d", msg.Frames, want-start, start, p.next-start)
				}
				break
			}
			if seq != want {
				t.Fatalf("replayed seq %d, want %d", seq, want)
			}
			if err := Decode(msg.Frames[2], &got); err != nil {
				t.Fatal(err)
			}
			got.Seq = seq
			if d := cmp.Diff(batchFor(seq, 1), &got, equal); d != "" {
				t.Errorf("replayed batch (-want +got):\n%s", d)
			}
		}
	}
}

// recvWithin receives one message from s, failing t after deadline.
func recvWithin(t *testing.T, s zmq4.Socket) zmq4.Msg {
	t.Helper()
	type result struct {
		msg zmq4.Msg
		err error
	}
	c := make(chan result, 1)
	go func() {
		msg, err := s.Recv()
		c <- result{msg, err}
	}()
	select {
	case r := <-c:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.msg
	case <-time.After(deadline):
		t.Fatalf("nothing received within %v", deadline)
	}
	return zmq4.Msg{}
}
