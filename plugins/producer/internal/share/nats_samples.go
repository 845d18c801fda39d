package share

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// The NATS exchange's samples: publishing in acknowledged messages, reading what others
// published, and removing what gone replicas left.

// publish sends rows as messages of at most chunkBytes each and returns how many rows, from the
// first, were stored. It starts with the message whose publish failed last, under the same ID,
// when rows start with its rows.
func (e *NATSExchanger) publish(rows []sdk.Sample) (int, error) {
	published := 0
	if d := e.doubt; d != nil {
		e.doubt = nil
		if len(rows) >= d.rows {
			again, err := Encode(&File{ReplicaID: e.cfg.ReplicaID, Seq: d.seq, Nonce: e.nonce, Samples: rows[:d.rows]})
			if err == nil && bytes.Equal(again, d.data) {
				if err := e.send(d); err != nil {
					return 0, err
				}
				published, rows = d.rows, rows[d.rows:]
			}
		}
	}
	limit := e.chunkBytes()
	for len(rows) > 0 {
		m, err := e.chunk(rows, limit)
		if err != nil {
			return published, fmt.Errorf("share: %w", err)
		}
		if err := e.send(m); err != nil {
			return published, err
		}
		published, rows = published+m.rows, rows[m.rows:]
	}
	return published, nil
}

// chunkBytes is the most a message's payload may hold: 1 MB, or less under the servers' limit.
func (e *NATSExchanger) chunkBytes() int {
	return int(max(min(e.nc.MaxPayload(), maxChunkBytes)-chunkHeadroom, chunkHeadroom))
}

// chunk encodes the next message: as many of rows, from the first, as fit in limit bytes.
func (e *NATSExchanger) chunk(rows []sdk.Sample, limit int) (*sent, error) {
	n := min(len(rows), MaxRows)
	for {
		data, err := Encode(&File{ReplicaID: e.cfg.ReplicaID, Seq: e.next, Nonce: e.nonce, Samples: rows[:n]})
		if err != nil {
			return nil, err
		}
		if len(data) <= limit || n == 1 {
			e.next++
			return &sent{seq: e.next - 1, rows: n, data: data}, nil
		}
		n = max(1, min(n-1, int(float64(n)*float64(limit)/float64(len(data))*0.97)))
	}
}

// send publishes m and waits for its acknowledgement; on failure m is in doubt.
func (e *NATSExchanger) send(m *sent) error {
	ctx, cancel := e.ctx()
	defer cancel()
	msg := &nats.Msg{Subject: e.subj + e.cfg.ReplicaID, Data: m.data}
	_, err := e.js.PublishMsg(ctx, msg, jetstream.WithMsgID(fmt.Sprintf("%s%d", e.own, m.seq)), jetstream.WithExpectStream(e.stream))
	if err != nil {
		e.doubt = m
		return fmt.Errorf("share: publishing samples: %w", err)
	}
	return nil
}

// read hands merge every message stored after the last one read, up to the stream's last
// sequence now, that this run did not publish.
func (e *NATSExchanger) read(now time.Time, merge func(string, []sdk.Sample), rep *Report) error {
	ctx, cancel := e.ctx()
	defer cancel()
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		return fmt.Errorf("share: stream %s: %w", e.stream, err)
	}
	e.st = st
	info := st.CachedInfo()
	last := info.State.LastSeq
	if e.started && (!info.Created.Equal(e.created) || last < e.cursor) {
		sdk.Log().Info().Str("stream", e.stream).Uint64("was_at", e.cursor).
			Msg("share: the samples stream was created again (servers without their store?); reading it from its start")
		e.cursor = 0
	}
	if !e.started {
		e.started, e.startSeq = true, last
	}
	e.created = info.Created
	if e.cursor >= last {
		return nil
	}
	if e.cursor > 0 && info.State.FirstSeq > e.cursor+1 {
		sdk.Log().Info().Uint64("from", e.cursor+1).Uint64("to", info.State.FirstSeq-1).
			Msg("share: samples left the stream before this replica read them (a pause longer than the stream's age, or its byte limit reached)")
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: e.cursor + 1,
		AckPolicy: jetstream.AckNonePolicy, FilterSubject: e.subj + ">", InactiveThreshold: time.Minute,
		MemoryStorage: true, Replicas: 1})
	if err != nil {
		return fmt.Errorf("share: reading stream %s: %w", e.stream, err)
	}
	defer func() {
		ctx, cancel := e.ctx()
		defer cancel()
		_ = st.DeleteConsumer(ctx, cons.CachedInfo().Name) // else the server drops it when inactive
	}()
	for pending := cons.CachedInfo().NumPending; pending > 0 && e.cursor < last; {
		batch, err := cons.FetchNoWait(int(min(pending, fetchBatch)))
		if err != nil {
			return fmt.Errorf("share: reading stream %s: %w", e.stream, err)
		}
		got, past := 0, false
		for msg := range batch.Messages() {
			got++
			md, err := msg.Metadata()
			if err != nil || md.Sequence.Stream > last {
				past = past || err == nil // published after this exchange began: the next one reads it
				continue
			}
			pending = md.NumPending
			e.take(msg, md.Sequence.Stream, now, merge, rep)
			e.cursor = md.Sequence.Stream
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("share: reading stream %s: %w", e.stream, err)
		}
		if past {
			break
		}
		if got == 0 { // messages gone since the consumer began (aged out, purged), or a slow server
			ci, err := cons.Info(ctx)
			if err != nil {
				return fmt.Errorf("share: reading stream %s: %w", e.stream, err)
			}
			if ci.NumPending > 0 {
				return fmt.Errorf("share: reading stream %s: no message came although %d wait", e.stream, ci.NumPending)
			}
			break
		}
	}
	e.cursor = max(e.cursor, last)
	return nil
}

// take hands merge the rows of one message at stream sequence seq, unless this run published
// it or it is not a samples file.
func (e *NATSExchanger) take(msg jetstream.Msg, seq uint64, now time.Time, merge func(string, []sdk.Sample), rep *Report) {
	id, ok := strings.CutPrefix(msg.Subject(), e.subj)
	if !ok || CheckID(id) != nil {
		e.invalid(rep, seq, msg.Subject(), fmt.Errorf("%w: foreign subject", ErrInvalid))
		return
	}
	own := id == e.cfg.ReplicaID
	if own && strings.HasPrefix(msg.Headers().Get(jetstream.MsgIDHeader), e.own) {
		return
	}
	if !own {
		p := e.peers[id]
		if p == nil {
			p = &natsPeer{}
			e.peers[id] = p
		}
		p.newest, p.advancedAt = seq, now
	}
	data := msg.Data()
	var f *File
	err := fmt.Errorf("%w: %d bytes, at most %d", ErrInvalid, len(data), MaxFileBytes)
	if len(data) <= MaxFileBytes {
		f, err = Decode(data)
	}
	if err == nil && f.ReplicaID != id {
		err = fmt.Errorf("%w: foreign (it holds replica %q's rows)", ErrInvalid, f.ReplicaID)
	}
	if err == nil && own && f.Nonce == e.nonce {
		return // this run's, published under another ID than the header says
	}
	if err != nil {
		e.invalid(rep, seq, msg.Subject(), err)
		return
	}
	switch {
	case own && seq <= e.startSeq && !e.tookBack:
		e.tookBack = true
		sdk.Log().Info().Str("replica", id).Msg("share: taking back the samples this replica published before it restarted")
	case own && seq > e.startSeq && !e.conflict:
		e.conflict = true
		sdk.Log().Error().Str("replica", id).Str("stream", e.stream).
			Msg("share: another producer publishes under this replica ID; give every producer its own replicaID (their samples are merged, but their models replace each other)")
	}
	merge(id, f.Samples)
	rep.Files++
	rep.Merged += len(f.Samples)
}

// invalid skips a message that is not a samples file of this format (a warning the first time in
// an exchange, debug after: messages never change, so it is not read again).
func (e *NATSExchanger) invalid(rep *Report, seq uint64, subject string, err error) {
	ev := sdk.Log().Debug()
	if rep.Invalid == 0 {
		ev = sdk.Log().Warn()
	}
	rep.Invalid++
	ev.Err(err).Str("subject", subject).Uint64("seq", seq).Msg("share: skipping a samples message")
}

// collect removes the samples and the models of every replica that published nothing for
// PeerTimeout by now (nothing while now is unknown). The replicas known are those whose
// messages were read and, listed every PeerTimeout/4, those with a model in the bucket.
func (e *NATSExchanger) collect(now time.Time, rep *Report) error {
	if now.IsZero() {
		return nil
	}
	if e.listedAt.IsZero() || now.Sub(e.listedAt) >= e.cfg.PeerTimeout/4 || now.Before(e.listedAt) {
		names, err := e.modelNames()
		if err != nil {
			return fmt.Errorf("share: listing the models: %w", err)
		}
		for _, id := range names {
			if id != e.cfg.ReplicaID && e.peers[id] == nil {
				e.peers[id] = &natsPeer{}
			}
		}
		e.listedAt = now
	}
	for _, id := range slices.Sorted(maps.Keys(e.peers)) {
		p := e.peers[id]
		if p.advancedAt.IsZero() {
			p.advancedAt = now
		}
		if now.Sub(p.advancedAt) <= e.cfg.PeerTimeout {
			continue
		}
		n, err := e.remove(id)
		rep.Removed += n
		if err != nil {
			return fmt.Errorf("share: removing a gone replica's samples and models: %w", err)
		}
		sdk.Log().Info().Str("peer", id).Uint64("seq", p.newest).Dur("still_for", now.Sub(p.advancedAt)).
			Int("removed", n).Msg("share: a replica is gone (it published nothing); removed its samples and models")
		delete(e.peers, id)
	}
	return nil
}

// modelNames lists the replicas with a model in the bucket.
func (e *NATSExchanger) modelNames() ([]string, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	infos, err := e.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	names := make([]string, 0, len(infos))
	for _, info := range infos {
		if CheckID(info.Name) == nil {
			names = append(names, info.Name)
		}
	}
	return names, err
}

// remove purges a replica's samples from the stream and deletes its model object, and then the
// object's delete marker (ADR-20's layout: the object's metadata is the last message on
// $O.<bucket>.M.<base64url of its name> of stream OBJ_<bucket>), which would otherwise stay for
// every replica ID that ever was. It returns how many of the two it removed.
func (e *NATSExchanger) remove(id string) (int, error) {
	ctx, cancel := e.ctx()
	defer cancel()
	if err := e.st.Purge(ctx, jetstream.WithPurgeSubject(e.subj+id)); err != nil {
		return 0, err
	}
	err := e.obs.Delete(ctx, id)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return 1, nil
	}
	if err != nil {
		return 1, err
	}
	meta := fmt.Sprintf("$O.%s.M.%s", e.bucket, base64.URLEncoding.EncodeToString([]byte(id)))
	objs, err := e.js.Stream(ctx, "OBJ_"+e.bucket)
	if err != nil {
		return 2, err
	}
	m, err := objs.GetLastMsgForSubject(ctx, meta)
	if err != nil {
		return 2, err
	}
	var marker struct {
		Deleted bool `json:"deleted"`
	}
	if json.Unmarshal(m.Data, &marker) == nil && marker.Deleted { // not if the replica published again since
		err = objs.Purge(ctx, jetstream.WithPurgeSubject(meta), jetstream.WithPurgeSequence(m.Sequence+1))
	}
	return 2, err
}
