package share

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The shared directory: its listing, the names of the replicas' files, and the synced writes
// and reads of one file.

// listing is what the share directory holds, by replica ID.
type listing struct {
	files  map[string][]uint64 // sequence numbers, ascending
	temps  map[string][]string // file names being written (or left by a writer that died)
	models map[string]bool
}

// ids returns every replica ID the listing names, sorted.
func (l *listing) ids() []string {
	set := map[string]bool{}
	for id := range l.files {
		set[id] = true
	}
	for id := range l.temps {
		set[id] = true
	}
	for id := range l.models {
		set[id] = true
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (e *Exchanger) list() (*listing, error) {
	l := &listing{files: map[string][]uint64{}, temps: map[string][]string{}, models: map[string]bool{}}
	entries, err := os.ReadDir(filepath.Join(e.cfg.Dir, SamplesDir))
	if err != nil {
		return nil, fmt.Errorf("share directory: %w", err)
	}
	for _, ent := range entries {
		name := ent.Name()
		if id, seq, ok := parseName(name); ok {
			l.files[id] = append(l.files[id], seq)
		} else if id, ok := parseTemp(name); ok {
			l.temps[id] = append(l.temps[id], name)
		}
	}
	for _, seqs := range l.files {
		slices.Sort(seqs)
	}
	entries, err = os.ReadDir(filepath.Join(e.cfg.Dir, ModelsDir))
	if err != nil {
		return nil, fmt.Errorf("share directory: %w", err)
	}
	for _, ent := range entries {
		if ent.IsDir() && CheckID(ent.Name()) == nil {
			l.models[ent.Name()] = true
		}
	}
	return l, nil
}

// fileName is the name of a replica's seq-th file.
func fileName(id string, seq uint64) string { return id + "." + strconv.FormatUint(seq, 10) }

// parseName splits "<replica>.<seq>" at its last dot; anything else is not a samples file.
func parseName(name string) (id string, seq uint64, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(name[i+1:], 10, 64)
	if err != nil || seq == 0 || CheckID(name[:i]) != nil {
		return "", 0, false
	}
	return name[:i], seq, true
}

// tempName is the name a file is written under before its rename.
func tempName(nonce uint64, id string, seq uint64) string {
	return fmt.Sprintf("%s%016x-%s", tempPrefix, nonce, fileName(id, seq))
}

// parseTemp returns the replica writing a temporary file.
func parseTemp(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok || len(rest) < 18 || rest[16] != '-' {
		return "", false
	}
	id, _, ok := parseName(rest[17:])
	return id, ok
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func readFile(path string) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrInvalid, st.Size(), MaxFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decode(data)
}
