package kvevents

import (
	"errors"
	"fmt"
	"math"
)

// Decode reads one KVEventBatch payload (the third frame of a message) into b, in either of the
// encodings vLLM's releases use: msgspec's array-like structs, [ts, events, data_parallel_rank]
// with each event ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, …],
// or maps, {"ts": …, "events": […], …} with each event {"type": "BlockStored", …}. Trailing
// fields an encoder omitted (msgspec's omit_defaults, or an older release that had fewer) keep
// their zero values; fields a newer release appends, unknown map keys and events of unknown tags
// are skipped (the latter counted in b.Skipped). Older releases' num_toks_per_block is read as
// BlockSize. The payload is taken faithfully: Decode does not check that an event's token count
// matches its blocks, which is the consumer's business.
//
// Decode fills b's TS, Events, DPRank and Skipped; it leaves b.Seq, the message's sequence frame,
// to the caller. It reuses the capacity of b.Events and of each event's Hashes and Tokens, so
// decoding batch after batch into the same b allocates nothing once the slices have grown to the
// stream's sizes (a Medium is allocated only when it changes). Nothing in b refers to payload
// afterwards.
//
// It returns an error, naming the event and field and the byte offset, when the payload is empty,
// is not an array or map at top level, is truncated, has bytes after the batch, holds a value of
// the wrong type where a field's is known (a block hash must be an int, bytes or str; a token id
// an int in uint32's range; block_size and group_idx non-negative ints; the tag a str), or
// claims a length that its remaining bytes cannot hold — so a hostile payload cannot make Decode
// allocate more than a few times its own size. After an error b holds a partial batch.
func Decode(payload []byte, b *Batch) error {
	b.TS, b.DPRank, b.Skipped = 0, 0, 0
	b.Events = b.Events[:0]
	if len(payload) == 0 {
		return errors.New("kvevents: empty payload")
	}
	r := reader{b: payload}
	var err error
	switch c := payload[0]; {
	case isArray(c):
		err = r.batchArray(b)
	case isMap(c):
		err = r.batchMap(b)
	default:
		return fmt.Errorf("kvevents: batch: expected array or map, got %s", typeName(c))
	}
	if err != nil {
		return fmt.Errorf("kvevents: %w", err)
	}
	if r.off != len(payload) {
		return fmt.Errorf("kvevents: %d bytes after the batch", len(payload)-r.off)
	}
	return nil
}

// batchArray reads the array-like batch: [ts, events, data_parallel_rank?, …].
func (r *reader) batchArray(b *Batch) error {
	n, err := r.arrayLen()
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	if n < 2 {
		return fmt.Errorf("batch: array of %d fields, want at least ts and events", n)
	}
	if b.TS, err = r.float(); err != nil {
		return fmt.Errorf("ts: %w", err)
	}
	if err = r.events(b); err != nil {
		return err
	}
	if n >= 3 {
		if b.DPRank, err = r.optIndex(); err != nil {
			return fmt.Errorf("data_parallel_rank: %w", err)
		}
	}
	for i := 3; i < n; i++ {
		if err := r.skip(); err != nil {
			return fmt.Errorf("batch: field %d: %w", i, err)
		}
	}
	return nil
}

// batchMap reads the map batch: {"ts": …, "events": […], "data_parallel_rank": …}.
func (r *reader) batchMap(b *Batch) error {
	n, err := r.mapLen()
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	for range n {
		key, ok, err := r.key()
		if err != nil {
			return fmt.Errorf("batch: key: %w", err)
		}
		switch {
		case ok && string(key) == "ts":
			if b.TS, err = r.float(); err != nil {
				return fmt.Errorf("ts: %w", err)
			}
		case ok && string(key) == "events":
			if err = r.events(b); err != nil {
				return err
			}
		case ok && string(key) == "data_parallel_rank":
			if b.DPRank, err = r.optIndex(); err != nil {
				return fmt.Errorf("data_parallel_rank: %w", err)
			}
		default:
			if err := r.skip(); err != nil {
				return fmt.Errorf("batch: %q: %w", key, err)
			}
		}
	}
	return nil
}

// events reads the events list into b.Events, reusing its slots: an event decodes into the next
// slot within capacity, whose Hashes and Tokens keep their arrays, and a skipped event gives its
// slot back.
func (r *reader) events(b *Batch) error {
	n, err := r.arrayLen()
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	evs := b.Events[:0]
	b.Skipped = 0
	for i := range n {
		if len(evs) < cap(evs) {
			evs = evs[:len(evs)+1]
		} else {
			evs = append(evs, Event{})
		}
		keep, err := r.event(&evs[len(evs)-1])
		if err != nil {
			b.Events = evs
			return fmt.Errorf("event %d: %w", i, err)
		}
		if !keep {
			evs = evs[:len(evs)-1]
			b.Skipped++
		}
	}
	b.Events = evs
	return nil
}

// field identifies an event field, by position in the array-like form and by key in the map.
type field uint8

const (
	fSkip field = iota // a field read past: lora_id, lora_name, extra_keys, kv_cache_spec_*, …
	fHashes
	fParent
	fTokens
	fBlockSize
	fMedium
	fGroup
)

// The fields of the array-like events after their tag, in vLLM's order (BlockStored: block_hashes,
// parent_block_hash, token_ids, block_size, lora_id, medium, lora_name, extra_keys, group_idx,
// kv_cache_spec_kind, kv_cache_spec_sliding_window; BlockRemoved: block_hashes, medium,
// group_idx). Positions beyond these are skipped.
var (
	storedFields  = []field{fHashes, fParent, fTokens, fBlockSize, fSkip, fMedium, fSkip, fSkip, fGroup}
	removedFields = []field{fHashes, fMedium, fGroup}
)

// String is vLLM's name of the field, for errors.
func (f field) String() string {
	switch f {
	case fHashes:
		return "block_hashes"
	case fParent:
		return "parent_block_hash"
	case fTokens:
		return "token_ids"
	case fBlockSize:
		return "block_size"
	case fMedium:
		return "medium"
	case fGroup:
		return "group_idx"
	}
	return "field"
}

// mapField is the field a map event's key names.
func mapField(key []byte) field {
	switch string(key) {
	case "block_hashes":
		return fHashes
	case "parent_block_hash":
		return fParent
	case "token_ids":
		return fTokens
	case "block_size", "num_toks_per_block":
		return fBlockSize
	case "medium":
		return fMedium
	case "group_idx":
		return fGroup
	}
	return fSkip
}

// kindOf is the Kind of a vLLM tag, 0 for a tag this package does not know.
func kindOf(tag []byte) Kind {
	switch string(tag) {
	case "BlockStored":
		return Stored
	case "BlockRemoved":
		return Removed
	case "AllBlocksCleared":
		return Cleared
	}
	return 0
}

// event reads one event into ev, which it resets first (keeping the arrays of Hashes and Tokens,
// and Medium to reuse when the new one is equal). It reports false for an event of an unknown
// tag, read past.
func (r *reader) event(ev *Event) (keep bool, err error) {
	prevMedium := ev.Medium
	*ev = Event{Hashes: ev.Hashes[:0], Tokens: ev.Tokens[:0]}
	if r.off >= len(r.b) {
		return false, r.truncated()
	}
	switch c := r.b[r.off]; {
	case isArray(c):
		return r.eventArray(ev, prevMedium)
	case isMap(c):
		return r.eventMap(ev, prevMedium)
	default:
		return false, fmt.Errorf("expected array or map, got %s at byte %d", typeName(c), r.off)
	}
}

// eventArray reads an array-like event: its tag, then its fields by position.
func (r *reader) eventArray(ev *Event, prevMedium string) (bool, error) {
	n, err := r.arrayLen()
	if err != nil {
		return false, err
	}
	if n == 0 {
		return false, errors.New("empty array, no tag")
	}
	tag, err := r.str()
	if err != nil {
		return false, fmt.Errorf("tag: %w", err)
	}
	ev.Kind = kindOf(tag)
	var fields []field
	switch ev.Kind {
	case 0:
		for range n - 1 {
			if err := r.skip(); err != nil {
				return false, fmt.Errorf("%q: %w", tag, err)
			}
		}
		return false, nil
	case Stored:
		fields = storedFields
	case Removed:
		fields = removedFields
	}
	for i := 1; i < n; i++ {
		f := fSkip
		if i-1 < len(fields) {
			f = fields[i-1]
		}
		if err := r.field(ev, f, prevMedium); err != nil {
			return false, fmt.Errorf("%s: %s: %w", ev.Kind, f, err)
		}
	}
	return true, nil
}

// eventMap reads a map event: its fields by key, in any order, and its tag under "type". The
// fields a kind does not have are cleared once the tag is known, as the array form would leave
// them; a map without "type" is an error.
func (r *reader) eventMap(ev *Event, prevMedium string) (bool, error) {
	n, err := r.mapLen()
	if err != nil {
		return false, err
	}
	var tag []byte
	for range n {
		key, ok, err := r.key()
		if err != nil {
			return false, fmt.Errorf("key: %w", err)
		}
		if ok && string(key) == "type" {
			if tag, err = r.str(); err != nil {
				return false, fmt.Errorf("type: %w", err)
			}
			continue
		}
		f := fSkip
		if ok {
			f = mapField(key)
		}
		if err := r.field(ev, f, prevMedium); err != nil {
			return false, fmt.Errorf("%q: %w", key, err)
		}
	}
	if tag == nil {
		return false, errors.New("map without a \"type\"")
	}
	switch ev.Kind = kindOf(tag); ev.Kind {
	case 0:
		return false, nil
	case Removed:
		ev.Parent, ev.HasParent, ev.Tokens, ev.BlockSize = 0, false, ev.Tokens[:0], 0
	case Cleared:
		*ev = Event{Kind: Cleared, Hashes: ev.Hashes[:0], Tokens: ev.Tokens[:0]}
	}
	return true, nil
}

// field reads the value of field f into ev.
func (r *reader) field(ev *Event, f field, prevMedium string) error {
	var err error
	switch f {
	case fHashes:
		ev.Hashes, err = r.hashes(ev.Hashes[:0])
	case fParent:
		if r.isNil() {
			ev.Parent, ev.HasParent = 0, false
			return nil
		}
		ev.Parent, err = r.hash()
		ev.HasParent = err == nil
	case fTokens:
		ev.Tokens, err = r.tokens(ev.Tokens[:0])
	case fBlockSize:
		ev.BlockSize, err = r.optIndex()
	case fMedium:
		ev.Medium, err = r.medium(prevMedium)
	case fGroup:
		ev.Group, err = r.optIndex()
	default:
		err = r.skip()
	}
	return err
}

// hashes reads a list of block hashes (nil reads as none) into h's array when it is large enough.
// Ints, the usual form, are read inline; bytes and str go through hash.
func (r *reader) hashes(h []uint64) ([]uint64, error) {
	if r.isNil() {
		return h, nil
	}
	n, err := r.arrayLen()
	if err != nil {
		return h, err
	}
	h = grow(h, n)
	b := r.b
	for i := range h {
		if r.off+9 <= len(b) {
			switch c := b[r.off]; {
			case c == 0xcf || c == 0xd3: // uint64, int64: vLLM's 64-bit hashes
				h[i] = be64(b[r.off+1:])
				r.off += 9
				continue
			case c <= 0x7f:
				h[i] = uint64(c)
				r.off++
				continue
			}
		}
		if h[i], err = r.hash(); err != nil {
			return h[:i], fmt.Errorf("%d: %w", i, err)
		}
	}
	return h, nil
}

// tokens reads a list of token ids (nil reads as none) into t's array when it is large enough.
func (r *reader) tokens(t []uint32) ([]uint32, error) {
	if r.isNil() {
		return t, nil
	}
	n, err := r.arrayLen()
	if err != nil {
		return t, err
	}
	t = grow(t, n)
	b := r.b
	for i := range t {
		if r.off+5 <= len(b) {
			switch c := b[r.off]; {
			case c <= 0x7f:
				t[i] = uint32(c)
				r.off++
				continue
			case c == 0xcd:
				t[i] = uint32(b[r.off+1])<<8 | uint32(b[r.off+2])
				r.off += 3
				continue
			case c == 0xce:
				t[i] = be32(b[r.off+1:])
				r.off += 5
				continue
			}
		}
		v, err := r.int()
		if err == nil && (v < 0 || v > math.MaxUint32) {
			err = fmt.Errorf("token id %d out of range", v)
		}
		if err != nil {
			return t[:i], fmt.Errorf("%d: %w", i, err)
		}
		t[i] = uint32(v)
	}
	return t, nil
}

// medium reads an optional str; equal to prev it returns prev, and vLLM's usual values are
// constants, so a steady stream allocates no strings.
func (r *reader) medium(prev string) (string, error) {
	if r.isNil() {
		return "", nil
	}
	s, err := r.str()
	switch {
	case err != nil:
		return "", err
	case string(s) == prev:
		return prev, nil
	case string(s) == "GPU":
		return "GPU", nil
	case string(s) == "CPU":
		return "CPU", nil
	}
	return string(s), nil
}
