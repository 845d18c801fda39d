package endpoints

import (
	"context"
	"fmt"

	"github.com/foresight-router/foresight/internal/filewatch"
)

// WatchDebounce is how long Watch waits after the last event before it reads the file.
const WatchDebounce = filewatch.Debounce

// Watch calls onChange with the new list whenever the file at path changes, and onError when a
// changed file cannot be read or does not parse (the caller keeps the old list). It watches the
// file's directory, so a rename over the file (editors, Kubernetes ConfigMap symlink swaps) is
// seen; after WatchDebounce without events it reads the file and reports only if its content
// differs from the last read. Its baseline is the content when Watch starts: read the initial
// list with LoadFile before calling it. It returns nil when ctx ends, or an error if the
// directory cannot be watched. Callbacks run in Watch's goroutine, one at a time.
func Watch(ctx context.Context, path string, onChange func([]Endpoint), onError func(error)) error {
	return filewatch.Watch(ctx, path, func(data []byte) {
		eps, err := parseFile(path, data)
		if err != nil {
			onError(err)
			return
		}
		onChange(eps)
	}, func(err error) {
		onError(fmt.Errorf("the endpoints file: %w", err))
	})
}
