"""serve(): runs a stage as a plugin process of a Foresight host (mirrors sdk.Serve… in Go).

The process serves gRPC on a Unix socket with one asyncio event loop (grpc.aio): every RPC,
including the host's long-lived stage streams (one per concurrent caller), is a coroutine on that
loop, so open streams cost no threads and stage calls run one at a time, which is what a Python
stage gets anyway with the GIL.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

import grpc
import grpc.aio

from . import goplugin
from ._gen import (
    admitter_pb2_grpc, detector_pb2_grpc, filter_pb2_grpc, order_pb2_grpc, picker_pb2_grpc,
    plugin_pb2_grpc, producer_pb2_grpc, scorer_pb2_grpc,
)
from .cycle import (
    STAGE_ADMITTER, STAGE_DETECTOR, STAGE_FILTER, STAGE_ORDER, STAGE_PICKER, STAGE_PRODUCER,
    STAGE_SCORER,
)
from .handlers import Handlers
from .log import LineWriter, logger
from .stages import Plugin, read_paths, stage_of

__all__ = ["serve", "PROFILE_ENV"]

#: When set to a path prefix, the plugin profiles itself (cProfile) into "<prefix>.<type>.<pid>"
#: until the host stops it; the same variable makes the Go plugins write pprof profiles.
PROFILE_ENV = "FORESIGHT_PLUGIN_CPUPROFILE"

# Flow control as the Go plugins set it (plugins/sdk/goplugin.go): fixed windows large enough for
# the largest batch, no bandwidth probing. No message size limit: the host sets none either.
_SERVER_OPTIONS = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
    ("grpc.http2.bdp_probe", 0),
    ("grpc.http2.lookahead_bytes", 4 << 20),
]


def _fail(message: str) -> None:
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.stderr.flush()
    sys.exit(1)


def _check_impl(impl: Any) -> int:
    """The stage impl serves; exits with a message for the plugin's author when impl is unusable."""
    stage = stage_of(impl)
    if not isinstance(impl, Plugin) or stage == 0:
        _fail(f"foresight_plugin.serve: {type(impl).__name__} is not a stage: subclass "
              "foresight_plugin.Producer, Filter, Scorer, Admitter, Picker, Detector or Orderer")
    if not impl.type:
        _fail(f"foresight_plugin.serve: {type(impl).__name__} has no type: set the class attribute "
              'type = "my-plugin" (the type the host config declares)')
    if impl.reads is not None:
        if isinstance(impl.reads, str):
            _fail(f"foresight_plugin.serve: {impl.type}: reads must be a list of paths, not a string")
        valid = read_paths()
        for path in impl.reads:
            if path not in valid:
                _fail(f"foresight_plugin.serve: {impl.type}: unknown read path {path!r} "
                      f"(valid: {', '.join(valid)})")
    return stage


def serve(impl: Plugin, version: str = "0.0.0-dev") -> None:
    """Serves impl as a plugin process; returns only by exiting, when the host stops the plugin.

    Run by hand (without the host's magic cookie) or by a host that does not speak protocol 1, it
    prints why on stderr and exits 1.
    """
    try:
        goplugin.check_cookie()
        protocol = goplugin.negotiate()
    except goplugin.HandshakeError as e:
        _fail(str(e))
    stage = _check_impl(impl)
    # stdout is go-plugin's channel for the handshake line alone: keep the real one for it and
    # send everything else written to stdout (print, or C code writing to fd 1) to the log.
    handshake_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = LineWriter(logger, "info", stream="stdout")
    # A Ctrl-C in the host's terminal reaches every process of the group; the host stops its
    # plugins itself, so the plugin ignores SIGINT (as go-plugin's server does).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.excepthook = lambda t, e, tb: logger.exception("plugin crashed", e)
    try:
        impl.set_parameters(None)
    except Exception as e:  # noqa: BLE001
        logger.exception("the plugin's default parameters do not pass its own configure", e,
                         type=impl.type)
        sys.exit(1)
    logger.info("plugin serving", type=impl.type, version=version, protocol=protocol,
                python=sys.version.split()[0])

    profile = None
    if os.environ.get(PROFILE_ENV):
        import cProfile
        profile = cProfile.Profile()
        profile.enable()
    code = 0
    try:
        asyncio.run(_serve(impl, version, protocol, stage, handshake_out))
    except Exception as e:  # noqa: BLE001
        logger.exception("plugin server failed", e)
        code = 1
    finally:
        if profile is not None:
            profile.disable()
            out = f"{os.environ[PROFILE_ENV]}.{impl.type}.{os.getpid()}"
            try:
                profile.dump_stats(out)
            except OSError as e:
                logger.error("writing the CPU profile", error=str(e), path=out)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        # Exit at once: gRPC's threads can hold up a normal interpreter shutdown.
        os._exit(code)


def _register(server, handlers: Handlers, stage: int) -> None:
    """Registers PluginService and the stage's service on server, as coroutines over handlers."""
    h = handlers

    class PluginService(plugin_pb2_grpc.PluginServiceServicer):
        async def GetInfo(self, request, context):
            return h.get_info(request)

        async def Configure(self, request, context):
            return h.configure(request)

    plugin_pb2_grpc.add_PluginServiceServicer_to_server(PluginService(), server)

    def stream(handle):
        # One response per request, in order, until the host closes the stream.
        async def rpc(self, request_iterator, context):
            read, write, eof = context.read, context.write, grpc.aio.EOF
            while True:
                req = await read()
                if req is eof:
                    return
                await write(handle(req))
        return rpc

    if stage == STAGE_PRODUCER:
        class ProducerService(producer_pb2_grpc.ProducerServiceServicer):
            Produce = stream(h.produce)

            async def Observe(self, request, context):
                return h.observe(request)
        producer_pb2_grpc.add_ProducerServiceServicer_to_server(ProducerService(), server)
    elif stage == STAGE_FILTER:
        class FilterService(filter_pb2_grpc.FilterServiceServicer):
            Filter = stream(h.filter)
        filter_pb2_grpc.add_FilterServiceServicer_to_server(FilterService(), server)
    elif stage == STAGE_SCORER:
        class ScorerService(scorer_pb2_grpc.ScorerServiceServicer):
            Score = stream(h.score)
        scorer_pb2_grpc.add_ScorerServiceServicer_to_server(ScorerService(), server)
    elif stage == STAGE_ADMITTER:
        class AdmitterService(admitter_pb2_grpc.AdmitterServiceServicer):
            Admit = stream(h.admit)
        admitter_pb2_grpc.add_AdmitterServiceServicer_to_server(AdmitterService(), server)
    elif stage == STAGE_PICKER:
        class PickerService(picker_pb2_grpc.PickerServiceServicer):
            Pick = stream(h.pick)
        picker_pb2_grpc.add_PickerServiceServicer_to_server(PickerService(), server)
    elif stage == STAGE_DETECTOR:
        class SaturationDetectorService(detector_pb2_grpc.SaturationDetectorServiceServicer):
            Detect = stream(h.detect)
        detector_pb2_grpc.add_SaturationDetectorServiceServicer_to_server(
            SaturationDetectorService(), server)
    elif stage == STAGE_ORDER:
        class OrderService(order_pb2_grpc.OrderServiceServicer):
            Order = stream(h.order)
        order_pb2_grpc.add_OrderServiceServicer_to_server(OrderService(), server)


def _goplugin_services(stopping: asyncio.Event):
    """go-plugin's own services, on raw bytes (see goplugin.py): health, controller, stdio."""

    async def check(request: bytes, context) -> bytes:
        try:
            answer = goplugin.health_check(request)
        except ValueError as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed HealthCheckRequest: {e}")
        if answer is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
        return answer

    async def shutdown(request: bytes, context) -> bytes:
        logger.debug("host asked the plugin to shut down")
        stopping.set()
        return b""

    async def stream_stdio(request: bytes, context) -> None:
        # Open until the server stops; nothing is sent (stdout goes to the log, see _serve).
        await stopping.wait()

    return (
        grpc.method_handlers_generic_handler(
            "grpc.health.v1.Health", {"Check": grpc.unary_unary_rpc_method_handler(check)}),
        grpc.method_handlers_generic_handler(
            "plugin.GRPCController", {"Shutdown": grpc.unary_unary_rpc_method_handler(shutdown)}),
        grpc.method_handlers_generic_handler(
            "plugin.GRPCStdio", {"StreamStdio": grpc.unary_stream_rpc_method_handler(stream_stdio)}),
    )


async def _watch_parent(stopping: asyncio.Event, interval: float = 1.0) -> None:
    """Stops the plugin when its host is gone (re-parented), so that no plugin outlives a host
    that was killed before it could shut its plugins down."""
    parent = os.getppid()
    while not stopping.is_set():
        await asyncio.sleep(interval)
        if os.getppid() != parent:
            logger.warn("the host process is gone; stopping", host_pid=parent)
            stopping.set()


async def _serve(impl: Plugin, version: str, protocol: int, stage: int, handshake_out) -> None:
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stopping.set)

    cert = None
    client_pem = os.environ.get("PLUGIN_CLIENT_CERT", "")
    if client_pem:
        cert = goplugin.server_certificate(client_pem)

    server = grpc.aio.server(options=_SERVER_OPTIONS)
    server.add_generic_rpc_handlers(_goplugin_services(stopping))
    _register(server, Handlers(impl, version, logger), stage)

    path = goplugin.socket_path()
    address = "unix:" + path
    if cert is not None:
        creds = grpc.ssl_server_credentials([(cert.key_pem, cert.cert_pem)],
                                            root_certificates=cert.client_cert_pem,
                                            require_client_auth=True)
        server.add_secure_port(address, creds)
    else:
        server.add_insecure_port(address)
    await server.start()
    try:
        goplugin.share_with_group(path)
        # The handshake: one line on the real stdout, which stays open and silent afterwards
        # (go-plugin's client drains and drops whatever comes later).
        handshake_out.write(goplugin.handshake_line(path, cert, protocol) + "\n")
        handshake_out.flush()

        watcher = asyncio.create_task(_watch_parent(stopping))
        await stopping.wait()
        watcher.cancel()
        await server.stop(0.2)
    finally:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    logger.debug("plugin stopped")
