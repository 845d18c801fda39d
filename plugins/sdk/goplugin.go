package sdk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/foresight-router/foresight/plugins/sdk/internal/wire"
	pb "github.com/foresight-router/foresight/proto/foresight/v1"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
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

// grpcServer is the plugin's half of the go-plugin glue for one stage: it registers PluginService
// and the stage's service for impl. The host's half is transport.GRPCPlugin.
type grpcServer struct {
	plugin.NetRPCUnsupportedPlugin
	stage   Stage
	reg     *instances
	version string // the binary's semver
}

var _ plugin.GRPCPlugin = (*grpcServer)(nil)

// GRPCServer registers PluginService and the stage's service for impl on s.
func (p *grpcServer) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	register, err := p.stageService()
	if err != nil {
		return err
	}
	pb.RegisterPluginServiceServer(s, &pluginServer{reg: p.reg, stage: p.stage, ver: p.version})
	register(s)
	return nil
}

// stageService returns the registration of impl's service for stage, or an error when impl does
// not implement that stage.
func (p *grpcServer) stageService() (func(*grpc.Server), error) {
	var register func(*grpc.Server)
	impl, reg := p.reg.def, p.reg
	switch p.stage {
	case StageProducer:
		if _, ok := impl.(Producer); ok {
			register = func(s *grpc.Server) { pb.RegisterProducerServiceServer(s, &producerServer{reg: reg}) }
		}
	case StageFilter:
		if _, ok := impl.(Filter); ok {
			register = func(s *grpc.Server) { pb.RegisterFilterServiceServer(s, &filterServer{reg: reg}) }
		}
	case StageScorer:
		if _, ok := impl.(Scorer); ok {
			register = func(s *grpc.Server) { pb.RegisterScorerServiceServer(s, &scorerServer{reg: reg}) }
		}
	case StageAdmitter:
		if _, ok := impl.(Admitter); ok {
			register = func(s *grpc.Server) { pb.RegisterAdmitterServiceServer(s, &admitterServer{reg: reg}) }
		}
	case StagePicker:
		if _, ok := impl.(Picker); ok {
			register = func(s *grpc.Server) { pb.RegisterPickerServiceServer(s, &pickerServer{reg: reg}) }
		}
	case StageDetector:
		if _, ok := impl.(Detector); ok {
			register = func(s *grpc.Server) { pb.RegisterSaturationDetectorServiceServer(s, &detectorServer{reg: reg}) }
		}
	case StageOrder:
		if _, ok := impl.(Orderer); ok {
			register = func(s *grpc.Server) { pb.RegisterOrderServiceServer(s, &orderServer{reg: reg}) }
		}
	}
	if register == nil {
		return nil, fmt.Errorf("plugin %q does not implement stage %v", impl.Type(), p.stage)
	}
	return register, nil
}

// GRPCClient fails: a plugin process calls no stage.
func (p *grpcServer) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("the plugin's side of a stage has no client")
}

// ServeInstances serves a plugin process that hosts as many instances of one stage
// implementation as the host configures, each made by newImpl with its own parameters and state
// (one process for, say, a strict and a loose instance of the same filter; see Info.MultiInstance).
// newImpl is called once at start for the default instance, which answers GetInfo, and once per
// instance the host configures. It returns only when the host stops the plugin.
func ServeInstances[T Plugin](stage Stage, newImpl func() T, version string) {
	serve(ProtocolVersion, stage, multiInstance(func() Plugin { return newImpl() }), version)
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

// ServeDetector serves d as a saturation detector plugin process.
func ServeDetector(d Detector, version string) {
	ServeProtocol(ProtocolVersion, StageDetector, d, version)
}

// ServeOrderer serves o as an ordering policy plugin process.
func ServeOrderer(o Orderer, version string) { ServeProtocol(ProtocolVersion, StageOrder, o, version) }

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
//
// FORESIGHT_PLUGIN_CPUPROFILE set to a path prefix makes the plugin write a CPU profile into
// "<prefix>.<type>.<pid>" until the host stops it; the host passes its environment to plugins, so
// setting it on the host profiles every plugin. The connection to the host uses fixed
// flow-control windows and buffer pool on both sides (see transport.DialOptions).
func ServeProtocol(protocol int, stage Stage, impl Plugin, version string) {
	serve(protocol, stage, singleInstance(impl), version)
}

// serve serves the instances in reg as described at ServeProtocol.
func serve(protocol int, stage Stage, reg *instances, version string) {
	impl := reg.def
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
	setupLogging()
	Log().Info().Str("type", impl.Type()).Str("version", version).Int("protocol", protocol).
		Int("gomaxprocs", runtime.GOMAXPROCS(0)).Msg("plugin serving")
	if prefix := os.Getenv(profileEnv); prefix != "" {
		defer profileCPU(fmt.Sprintf("%s.%s.%d", prefix, impl.Type(), os.Getpid()))()
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			protocol: {stage.String(): &grpcServer{stage: stage, reg: reg, version: version}},
		},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return plugin.DefaultGRPCServer(append(opts, grpc.InitialWindowSize(wire.StreamWindow),
				grpc.InitialConnWindowSize(wire.ConnWindow), experimental.BufferPool(wire.BufferPool), grpc.ForceServerCodecV2(wire.Codec{})))
		},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: impl.Type(), Level: hclog.Info, Output: os.Stderr, JSONFormat: true,
		}),
	})
}
