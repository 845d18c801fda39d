package sdk

import (
	"os"
	"sync"

	"github.com/rs/zerolog"
)

// timeLayout is the timestamp layout go-plugin's stderr pump parses from plugin log lines.
const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

var (
	logOnce sync.Once
	logger  = zerolog.New(os.Stderr)
)

// setupLogging makes zerolog write what go-plugin's host expects on a plugin's stderr: one JSON
// object per line with "@level", "@message" and "@timestamp"; the host re-logs each line with the
// plugin's name and the other fields.
func setupLogging() {
	logOnce.Do(func() {
		zerolog.LevelFieldName = "@level"
		zerolog.MessageFieldName = "@message"
		zerolog.TimestampFieldName = "@timestamp"
		zerolog.TimeFieldFormat = timeLayout
		logger = zerolog.New(os.Stderr).With().Timestamp().Logger()
	})
}

// Log returns the plugin process's logger. Inside a plugin served by a Serve… helper its lines reach
// the host's log, tagged with the plugin's name; use structured fields, not formatted messages.
func Log() *zerolog.Logger {
	setupLogging()
	return &logger
}
