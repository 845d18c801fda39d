package share

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// The NATS exchange's models: one object per replica in the object store (chunked by the
// store, so a set of any model size fits: the default 16 trees make a set of about 100 KB, 200
// trees about 1.2 MB, more than a message may hold), holding one model set as EncodeSet writes
// it.

// setMagic and setVersion begin an encoded model set.
var setMagic = [8]byte{'F', 'S', 'M', 'O', 'D', 'E', 'L', 'S'}

const (
	setVersion  = 1
	maxMetaSize = 1 << 20
)

// ErrInvalidSet marks bytes that are not a whole model set of this encoding.
var ErrInvalidSet = errors.New("not a valid model set")

// EncodeSet writes set as one object: a header (magic, encoding version), then its meta.json
// (internal/model's, with the models' SHA-256), the TTFT model's text and the TPOT model's, each
// preceded by its length.
func EncodeSet(set *model.Set) ([]byte, error) {
	m := set.Meta
	ttft, tpot := set.TTFT.Text(), set.TPOT.Text()
	m.TTFTSHA256, m.TPOTSHA256 = digest(ttft), digest(tpot)
	meta, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(setMagic)+2+3*binary.MaxVarintLen64+len(meta)+len(ttft)+len(tpot))
	b = append(b, setMagic[:]...)
	b = binary.LittleEndian.AppendUint16(b, setVersion)
	for _, part := range [][]byte{meta, ttft, tpot} {
		b = binary.AppendUvarint(b, uint64(len(part)))
		b = append(b, part...)
	}
	return b, nil
}

// DecodeSet reads a set EncodeSet wrote and parses its models over these features, with
// internal/model's checks: a set trained over other features is an error wrapping
// model.ErrOutdated, models that do not match their recorded checksums are an error.
func DecodeSet(data []byte, ttftFeatures, tpotFeatures []string) (*model.Set, error) {
	meta, ttft, tpot, err := splitSet(data)
	if err != nil {
		return nil, err
	}
	return parseSet(meta, ttft, tpot, ttftFeatures, tpotFeatures)
}

// splitSet reads an encoded set's meta and model texts without parsing the models.
func splitSet(data []byte) (meta model.Meta, ttft, tpot []byte, err error) {
	if len(data) < len(setMagic)+2 || !bytes.Equal(data[:len(setMagic)], setMagic[:]) {
		return meta, nil, nil, fmt.Errorf("%w: it does not start with the model set magic", ErrInvalidSet)
	}
	if v := binary.LittleEndian.Uint16(data[len(setMagic):]); v != setVersion {
		return meta, nil, nil, fmt.Errorf("%w: encoding version %d; this producer reads version %d", ErrInvalidSet, v, setVersion)
	}
	rest := data[len(setMagic)+2:]
	var parts [3][]byte
	for i, limit := range [3]uint64{maxMetaSize, model.MaxBytes, model.MaxBytes} {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > limit || n > uint64(len(rest)-k) {
			return meta, nil, nil, fmt.Errorf("%w: part %d is truncated or too long", ErrInvalidSet, i+1)
		}
		parts[i], rest = rest[k:k+int(n)], rest[k+int(n):]
	}
	if len(rest) != 0 {
		return meta, nil, nil, fmt.Errorf("%w: %d bytes after the models", ErrInvalidSet, len(rest))
	}
	if err := json.Unmarshal(parts[0], &meta); err != nil {
		return meta, nil, nil, fmt.Errorf("%w: meta: %w", ErrInvalidSet, err)
	}
	return meta, parts[1], parts[2], nil
}

func parseSet(meta model.Meta, ttft, tpot []byte, ttftFeatures, tpotFeatures []string) (*model.Set, error) {
	var err error
	switch {
	case meta.TTFTFeatures != nil && !slices.Equal(meta.TTFTFeatures, ttftFeatures):
		err = fmt.Errorf("the TTFT model was trained on features %v; this producer gives %v", meta.TTFTFeatures, ttftFeatures)
	case meta.TPOTFeatures != nil && !slices.Equal(meta.TPOTFeatures, tpotFeatures):
		err = fmt.Errorf("the TPOT model was trained on features %v; this producer gives %v", meta.TPOTFeatures, tpotFeatures)
	case meta.TTFTSHA256 != digest(ttft) || meta.TPOTSHA256 != digest(tpot):
		return nil, fmt.Errorf("%w: the models do not match their recorded checksums", ErrInvalidSet)
	}
	if err != nil && meta.Source == "trained" {
		return nil, fmt.Errorf("%w: %w", model.ErrOutdated, err)
	} else if err != nil {
		return nil, err
	}
	set := &model.Set{Meta: meta}
	if set.TTFT, err = model.Parse(ttft, len(ttftFeatures)); err != nil {
		return nil, fmt.Errorf("the TTFT model: %w", err)
	}
	if set.TPOT, err = model.Parse(tpot, len(tpotFeatures)); err != nil {
		return nil, fmt.Errorf("the TPOT model: %w", err)
	}
	return set, nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// publishModel puts set as this replica's object: the store swaps it in whole, a reader gets the
// previous set or this one.
func (e *NATSExchanger) publishModel(set *model.Set) error {
	data, err := EncodeSet(set)
	if err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	_, err = e.obs.PutBytes(ctx, e.cfg.ReplicaID, data)
	return err
}

// BestModel returns the model set to serve before this replica's own first training, and the
// replica that published it, by Exchanger.BestModel's rule (better) among the objects in the
// bucket, this replica's own included (a restarted one serves its own). It reads one object at a
// time and parses the models of only those that would be chosen; an object that does not load is
// skipped with a warning. It returns nil while not connected.
func (e *NATSExchanger) BestModel(ttft, tpot []string, usable func(*model.Meta) bool) (*model.Set, string) {
	if e.nc == nil || e.obs == nil || e.nc.Status() != nats.CONNECTED {
		return nil, ""
	}
	ctx, cancel := e.ctx()
	infos, err := e.obs.List(ctx)
	cancel()
	if err != nil {
		if !errors.Is(err, jetstream.ErrNoObjectsFound) {
			sdk.Log().Debug().Err(err).Msg("share: listing the shared models")
		}
		return nil, ""
	}
	slices.SortFunc(infos, func(a, b *jetstream.ObjectInfo) int { return strings.Compare(a.Name, b.Name) })
	var best *model.Set
	var from string
	for _, info := range infos {
		id := info.Name
		if CheckID(id) != nil {
			continue
		}
		set, err := e.candidate(id, ttft, tpot, usable, best, from)
		switch {
		case errors.Is(err, model.ErrOutdated):
			sdk.Log().Debug().Err(err).Str("peer", id).Msg("share: a replica of another producer version published these models")
		case err != nil:
			// Also an object replaced while it was read: the next exchange tries again.
			sdk.Log().Warn().Err(err).Str("peer", id).Msg("share: skipping a replica's models")
		case set != nil:
			best, from = set, id
		}
	}
	return best, from
}

// candidate returns replica id's set when it is one to serve and better than best (from replica
// from), else nil.
func (e *NATSExchanger) candidate(id string, ttft, tpot []string, usable func(*model.Meta) bool, best *model.Set, from string) (*model.Set, error) {
	ctx, cancel := e.ctx()
	data, err := e.obs.GetBytes(ctx, id)
	cancel()
	if err != nil {
		return nil, err
	}
	meta, ttftText, tpotText, err := splitSet(data)
	switch {
	case err != nil:
		return nil, err
	case meta.Source != "trained" || !usable(&meta) || best != nil && !better(&model.Set{Meta: meta}, id, best, from):
		return nil, nil
	}
	return parseSet(meta, ttftText, tpotText, ttft, tpot)
}
