package share

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"

	"github.com/foresight-router/foresight/plugins/producer/internal/model"
	"github.com/foresight-router/foresight/plugins/sdk"
)

// publishModel writes set as this replica's models in the share (internal/model's layout: a
// version directory, then an atomic swap of its "current" link), for a replica that starts
// later to serve before its own first training.
func (e *Exchanger) publishModel(set *model.Set) error {
	return model.Save(filepath.Join(e.cfg.Dir, ModelsDir, e.cfg.ReplicaID), set)
}

// BestModel returns the model set to serve before this replica's own first training, and the
// replica that trained it: of every set in the share that loads, is over these features and
// that usable accepts, the one trained on the most rows (every replica trains on the same union
// of samples, so more rows means later), then the lowest held-out TTFT error, then the first
// replica by name. Creation times are not compared: they come from other machines' clocks. It
// returns nil when there is none; a set that does not load is skipped with a warning.
func (e *Exchanger) BestModel(ttft, tpot []string, usable func(*model.Meta) bool) (*model.Set, string) {
	root := filepath.Join(e.cfg.Dir, ModelsDir)
	entries, err := os.ReadDir(root)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			sdk.Log().Debug().Err(err).Msg("share: listing the shared models")
		}
		return nil, ""
	}
	var best *model.Set
	var from string
	for _, ent := range entries {
		id := ent.Name()
		if !ent.IsDir() || CheckID(id) != nil {
			continue
		}
		set, err := model.Load(filepath.Join(root, id), ttft, tpot)
		switch {
		case errors.Is(err, model.ErrOutdated):
			sdk.Log().Debug().Err(err).Str("peer", id).Msg("share: a replica of another producer version published these models")
			continue
		case err != nil:
			// Also a version pruned between reading "current" and its files: the next
			// exchange tries again.
			sdk.Log().Warn().Err(err).Str("peer", id).Msg("share: skipping a replica's models")
			continue
		case set == nil || set.Meta.Source != "trained" || !usable(&set.Meta):
			continue
		}
		if best == nil || better(set, id, best, from) {
			best, from = set, id
		}
	}
	return best, from
}

// better reports whether set a (from replica ida) is to be preferred to set b (from idb).
func better(a *model.Set, ida string, b *model.Set, idb string) bool {
	if c := cmp.Compare(a.Meta.TrainingRows, b.Meta.TrainingRows); c != 0 {
		return c > 0
	}
	ma, mb := a.Meta.HoldoutTTFTMAPE, b.Meta.HoldoutTTFTMAPE
	if ma != mb && ma > 0 && mb > 0 { // 0: unknown
		return ma < mb
	}
	return ida < idb
}
