package sdk

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the plugin protocol this SDK speaks. It changes only when the contracts in
// proto/foresight/v1 change incompatibly; hosts and plugins negotiate it in the go-plugin handshake.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake shared by the host and every plugin. The magic cookie only
// keeps a plugin binary from being run by hand by mistake; it is not a security measure.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "FORESIGHT_PLUGIN",
	MagicCookieValue: "6d1b3c2f-foresight-stage-plugin",
}

// GRPCPlugin is the go-plugin glue for one stage: on the plugin side it registers PluginService and
// the stage's service for Impl; on the host side it returns the stage's client (see NewClient).
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Stage   Stage
	Impl    Plugin // plugin side only
	Version string // plugin side only: the binary's semver
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer registers PluginService and the stage's service for Impl on s.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	register, err := p.stageService()
	if err != nil {
		return err
	}
	pb.RegisterPluginServiceServer(s, &pluginServer{impl: p.Impl, stage: p.Stage, ver: p.Version})
	register(s)
	return nil
}

// stageService returns the registration of Impl's service for Stage, or an error when Impl does
// not implement that stage.
func (p *GRPCPlugin) stageService() (func(*grpc.Server), error) {
	var register func(*grpc.Server)
	switch p.Stage {
	case StageProducer:
		if pr, ok := p.Impl.(Producer); ok {
			register = func(s *grpc.Server) { pb.RegisterProducerServiceServer(s, &producerServer{impl: pr}) }
		}
	case StageFilter:
		if f, ok := p.Impl.(Filter); ok {
			register = func(s *grpc.Server) { pb.RegisterFilterServiceServer(s, &filterServer{impl: f}) }
		}
	case StageScorer:
		if sc, ok := p.Impl.(Scorer); ok {
			register = func(s *grpc.Server) { pb.RegisterScorerServiceServer(s, &scorerServer{impl: sc}) }
		}
	case StageAdmitter:
		if a, ok := p.Impl.(Admitter); ok {
			register = func(s *grpc.Server) { pb.RegisterAdmitterServiceServer(s, &admitterServer{impl: a}) }
		}
	case StagePicker:
		if pk, ok := p.Impl.(Picker); ok {
			register = func(s *grpc.Server) { pb.RegisterPickerServiceServer(s, &pickerServer{impl: pk}) }
		}
	}
	if register == nil {
		return nil, fmt.Errorf("plugin %q does not implement stage %v", p.Impl.Type(), p.Stage)
	}
	return register, nil
}

// GRPCClient returns the stage client over c.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return NewClient(p.Stage, c)
}

// HostPlugins is the plugin set a host offers for ProtocolVersion: one entry per stage, keyed by the
// stage name, so the host dispenses the stage its config slot expects and then checks GetInfo.
func HostPlugins() map[int]plugin.PluginSet {
	set := plugin.PluginSet{}
	for s := StageProducer; s <= StagePicker; s++ {
		set[s.String()] = &GRPCPlugin{Stage: s}
	}
	return map[int]plugin.PluginSet{ProtocolVersion: set}
}

// ServeProducer serves p as a producer plugin process; it returns only when the host stops the plugin.
func ServeProducer(p Producer, version string) {
	ServeProtocol(ProtocolVersion, StageProducer, p, version)
}

// ServeFilter serves f as a filter plugin process.
func ServeFilter(f Filter, version string) { ServeProtocol(ProtocolVersion, StageFilter, f, version) }

// ServeScorer serves s as a scorer plugin process.
func ServeScorer(s Scorer, version string) { ServeProtocol(ProtocolVersion, StageScorer, s, version) }

// ServeAdmitter serves a as an admitter plugin process.
func ServeAdmitter(a Admitter, version string) {
	ServeProtocol(ProtocolVersion, StageAdmitter, a, version)
}

// ServePicker serves p as a picker plugin process.
func ServePicker(p Picker, version string) { ServeProtocol(ProtocolVersion, StagePicker, p, version) }

// DefaultGCPercent is the GOGC that plugins (and the host) run with unless GOGC is set.
const DefaultGCPercent = 400

// ServeProtocol serves impl for stage under an explicit protocol version. Plugins use the Serve…
// helpers; this exists to stage a protocol migration and to test hosts against versions they lack.
//
// Unless the environment says otherwise, the plugin runs with GOMAXPROCS=1 and GOGC=400. A stage
// call is short and sequential, and a pipeline's plugin processes each holding one P per core
// thrash the cores they share with the host (measured on 2 cores: decision p50 2.7 ms instead of
// 4.4 ms at concurrency 1); a plugin's heap is small, so collecting a quarter as often costs little
// memory and saves CPU (with the host at 400 too: +12–25% decisions/s at concurrency 8). A plugin
// that trains or computes in parallel sets GOMAXPROCS in its config env.
func ServeProtocol(protocol int, stage Stage, impl Plugin, version string) {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
	setupLogging()
	Log().Info().Str("type", impl.Type()).Str("version", version).Int("protocol", protocol).
		Int("gomaxprocs", runtime.GOMAXPROCS(0)).Msg("plugin serving")
	if prefix := os.Getenv(ProfileEnv); prefix != "" {
		defer profileCPU(fmt.Sprintf("%s.%s.%d", prefix, impl.Type(), os.Getpid()))()
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			protocol: {stage.String(): &GRPCPlugin{Stage: stage, Impl: impl, Version: version}},
		},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(append(opts, ServerWindows()...))
		},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: impl.Type(), Level: hclog.Info, Output: os.Stderr, JSONFormat: true,
		}),
	})
}

// Flow-control windows of the host–plugin connections. gRPC starts with 64 KiB windows and
// probes the bandwidth-delay product with PING frames, and returns WINDOW_UPDATE frames as it
// reads: extra writes, reads and wake-ups on every few stage calls. Between two processes on one
// machine there is nothing to probe, so both sides set fixed windows large enough for the largest
// batch (which turns the probing off) and updates become rare.
const (
	streamWindow = 4 << 20
	connWindow   = 16 << 20
)

// ServerWindows are the plugin side's gRPC options for the fixed windows.
func ServerWindows() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.InitialWindowSize(streamWindow), grpc.InitialConnWindowSize(connWindow)}
}

// DialWindows are the host side's gRPC options for the fixed windows.
func DialWindows() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithInitialWindowSize(streamWindow), grpc.WithInitialConnWindowSize(connWindow)}
}
