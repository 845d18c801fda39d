package pluginhost

import (
	"fmt"
	"io"
	"log"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// zlog adapts go-plugin's hclog.Logger to zerolog, so go-plugin's own messages and the log lines
// plugins write on stderr land in the host's structured log with their key-value pairs as fields.
type zlog struct {
	z     zerolog.Logger
	name  string
	args  []any
	level *atomic.Int32 // shared with the loggers derived by With and Named
}

var _ hclog.Logger = (*zlog)(nil)

func newZlog(z zerolog.Logger, level hclog.Level) *zlog {
	l := &zlog{z: z, level: new(atomic.Int32)}
	l.level.Store(int32(level))
	return l
}

func (l *zlog) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Error && killedExit(msg, args) {
		level = hclog.Debug
	}
	if level == hclog.Off || level < l.GetLevel() {
		return
	}
	var ev *zerolog.Event
	switch level {
	case hclog.Trace:
		ev = l.z.Trace()
	case hclog.Debug:
		ev = l.z.Debug()
	case hclog.Warn:
		ev = l.z.Warn()
	case hclog.Error:
		ev = l.z.Error()
	default:
		ev = l.z.Info()
	}
	if l.name != "" {
		ev = ev.Str("logger", l.name)
	}
	addPairs(ev, l.args)
	addPairs(ev, args)
	ev.Msg(msg)
}

// killedExit reports go-plugin's "plugin process exited" line for a process ended by SIGKILL. The
// host kills the plugins it stops or rejects (an incompatible protocol, a failed handshake), and
// that line, logged from go-plugin's own goroutine, can come before the host has silenced the
// client; a plugin killed by anyone else is reported by the host's own restart line. Either way it
// is no error of its own.
func killedExit(msg string, args []any) bool {
	if msg != "plugin process exited" {
		return false
	}
	for i := 0; i+1 < len(args); i += 2 {
		if fmt.Sprint(args[i]) == "error" {
			return fmt.Sprint(args[i+1]) == "signal: killed"
		}
	}
	return false
}

func addPairs(ev *zerolog.Event, args []any) {
	for i := 0; i < len(args); i += 2 {
		key := fmt.Sprint(args[i])
		if i+1 == len(args) {
			ev.Interface("EXTRA_VALUE_AT_END", args[i])
			return
		}
		if err, ok := args[i+1].(error); ok {
			ev.AnErr(key, err) // as Interface, an error value marshals to {}
			continue
		}
		ev.Interface(key, args[i+1])
	}
}

func (l *zlog) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *zlog) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *zlog) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *zlog) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *zlog) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *zlog) IsTrace() bool { return l.GetLevel() <= hclog.Trace }
func (l *zlog) IsDebug() bool { return l.GetLevel() <= hclog.Debug }
func (l *zlog) IsInfo() bool  { return l.GetLevel() <= hclog.Info }
func (l *zlog) IsWarn() bool  { return l.GetLevel() <= hclog.Warn }
func (l *zlog) IsError() bool { return l.GetLevel() <= hclog.Error }

func (l *zlog) ImpliedArgs() []any { return l.args }

func (l *zlog) With(args ...any) hclog.Logger {
	c := *l
	c.args = append(append([]any(nil), l.args...), args...)
	return &c
}

func (l *zlog) Name() string { return l.name }

func (l *zlog) Named(name string) hclog.Logger {
	c := *l
	if c.name != "" {
		name = c.name + "." + name
	}
	c.name = name
	return &c
}

func (l *zlog) ResetNamed(name string) hclog.Logger {
	c := *l
	c.name = name
	return &c
}

func (l *zlog) SetLevel(level hclog.Level) { l.level.Store(int32(level)) }
func (l *zlog) GetLevel() hclog.Level      { return hclog.Level(l.level.Load()) }

func (l *zlog) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

func (l *zlog) StandardWriter(*hclog.StandardLoggerOptions) io.Writer { return writerFunc(l.Info) }

type writerFunc func(msg string, args ...any)

func (w writerFunc) Write(p []byte) (int, error) {
	w(string(p))
	return len(p), nil
}
