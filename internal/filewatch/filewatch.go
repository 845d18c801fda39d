// Package filewatch reports the changes of one file's content, as editors, config management and
// Kubernetes ConfigMap mounts make them.
package filewatch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Debounce is how long Watch waits after the last event before it reads the file: an editor's
// save (truncate and write, or write a temporary file and rename it over) comes as a burst of
// events.
const Debounce = 200 * time.Millisecond

// Watch calls onChange with the file's new content whenever the file at path changes, and
// onError when a changed file cannot be read (the caller keeps what it had). It watches the
// file's directory, so a rename over the file (editors, Kubernetes ConfigMap symlink swaps) is
// seen; after Debounce without events it reads the file and reports only if its content differs
// from the last read. Its baseline is the content when Watch starts. It returns nil when ctx
// ends, or an error if the directory cannot be watched. Callbacks run in Watch's goroutine, one
// at a time.
func Watch(ctx context.Context, path string, onChange func(data []byte), onError func(error)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", path, err)
	}
	defer w.Close()
	dir, base := filepath.Dir(path), filepath.Base(path)
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("watching %s: %w", dir, err)
	}
	last, _ := os.ReadFile(path) // after Add, so no change is missed in between

	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if concerns(ev.Name, base) {
				debounce.Reset(Debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			onError(fmt.Errorf("watching %s: %w", path, err))
		case <-debounce.C:
			data, err := os.ReadFile(path)
			if err != nil {
				onError(fmt.Errorf("reading %s: %w", path, err))
				continue
			}
			if bytes.Equal(data, last) {
				continue
			}
			last = data
			onChange(data)
		}
	}
}

// concerns says whether an event on name in the watched directory may change the file called
// base: an event on the file itself, or on a name starting with ".." (Kubernetes mounts a
// ConfigMap's files as symlinks through "..data", which it swaps by renaming "..data_tmp"). Other
// files of the directory are ignored, so a busy neighbour cannot hold the debounce off forever.
func concerns(name, base string) bool {
	b := filepath.Base(name)
	return b == base || strings.HasPrefix(b, "..")
}
