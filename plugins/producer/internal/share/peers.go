package share

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/foresight-router/foresight/plugins/sdk"
)

// The other replicas' files: which are new, merging them, and removing those of replicas gone.

// track updates what is known of every other replica the listing names: its newest sequence
// number and when this replica saw it advance (by its own clock; not at all while now is
// unknown). Replicas no longer listed are forgotten.
func (e *Exchanger) track(now time.Time, l *listing) {
	ids := l.ids()
	for id := range e.peers {
		if _, ok := slices.BinarySearch(ids, id); !ok {
			delete(e.peers, id)
		}
	}
	for _, id := range ids {
		if id == e.cfg.ReplicaID {
			continue
		}
		p := e.peers[id]
		if p == nil {
			p = &peer{merged: map[uint64]bool{}}
			e.peers[id] = p
		}
		var newest uint64
		if seqs := l.files[id]; len(seqs) > 0 {
			newest = seqs[len(seqs)-1]
		}
		if newest < p.newest {
			sdk.Log().Info().Str("peer", id).Uint64("seq", newest).Uint64("was", p.newest).
				Msg("share: a replica started its sequence again (its files were removed)")
			p.maxMerged = 0
		}
		if newest != p.newest || p.advancedAt.IsZero() {
			p.newest, p.advancedAt = newest, now
		}
	}
}

// readPeers hands merge the rows of every listed peer file not merged yet.
func (e *Exchanger) readPeers(l *listing, merge func(string, []sdk.Sample), rep *Report) {
	listed := map[string]bool{}
	for _, id := range l.ids() {
		p := e.peers[id]
		if p == nil {
			continue
		}
		seqs := l.files[id]
		for seq := range p.merged {
			if _, ok := slices.BinarySearch(seqs, seq); !ok {
				delete(p.merged, seq)
			}
		}
		if len(seqs) > 0 && p.maxMerged > 0 && seqs[0] > p.maxMerged+1 {
			sdk.Log().Info().Str("peer", id).Uint64("from", p.maxMerged+1).Uint64("to", seqs[0]-1).
				Msg("share: a replica's files were removed before this one read them (a long pause; shareKeep × sharePeriodMs is the most it can fall behind)")
		}
		for _, seq := range seqs {
			listed[fileName(id, seq)] = true
			if p.merged[seq] {
				continue
			}
			f := e.read(id, seq, rep)
			if f == nil {
				continue
			}
			merge(id, f.Samples)
			p.merged[seq] = true
			p.maxMerged = max(p.maxMerged, seq)
			rep.Files++
			rep.Merged += len(f.Samples)
		}
	}
	for name := range e.invalid {
		if !listed[name] {
			delete(e.invalid, name)
		}
	}
}

// read returns a replica's seq-th file, or nil (with a warning the first time) when it is gone
// or invalid.
func (e *Exchanger) read(id string, seq uint64, rep *Report) *File {
	name := fileName(id, seq)
	path := filepath.Join(e.cfg.Dir, SamplesDir, name)
	f, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) { // removed since the listing: its writer pruned it
		return nil
	}
	if err == nil && (f.ReplicaID != id || f.Seq != seq) {
		err = fmt.Errorf("%w: foreign (it holds replica %q's file %d)", ErrInvalid, f.ReplicaID, f.Seq)
	}
	if err != nil {
		rep.Invalid++
		ev := sdk.Log().Debug()
		if e.invalid[name] == 0 {
			ev = sdk.Log().Warn()
		}
		e.invalid[name]++
		ev.Err(err).Str("file", path).Int("reads", e.invalid[name]).Msg("share: skipping a samples file")
		return nil
	}
	delete(e.invalid, name)
	return f
}

// collect removes the files of every replica whose sequence has not advanced for PeerTimeout
// by now (nothing while now is unknown) and returns how many files and directories it removed.
// Another replica may be removing the same files: a file already gone is no error.
func (e *Exchanger) collect(now time.Time, l *listing) int {
	if now.IsZero() {
		return 0
	}
	removed := 0
	for _, id := range l.ids() {
		p := e.peers[id]
		if p == nil || p.advancedAt.IsZero() || now.Sub(p.advancedAt) <= e.cfg.PeerTimeout {
			continue
		}
		var paths []string
		for _, seq := range l.files[id] {
			paths = append(paths, filepath.Join(e.cfg.Dir, SamplesDir, fileName(id, seq)))
		}
		for _, name := range l.temps[id] {
			paths = append(paths, filepath.Join(e.cfg.Dir, SamplesDir, name))
		}
		if l.models[id] {
			paths = append(paths, filepath.Join(e.cfg.Dir, ModelsDir, id))
		}
		for _, path := range paths {
			if err := os.RemoveAll(path); err == nil {
				removed++
			}
		}
		sdk.Log().Info().Str("peer", id).Uint64("seq", p.newest).Dur("still_for", now.Sub(p.advancedAt)).
			Int("removed", len(paths)).Msg("share: a replica is gone (its sequence stopped advancing); removed its files")
		delete(e.peers, id)
	}
	return removed
}
