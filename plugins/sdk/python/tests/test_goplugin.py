"""go-plugin's protocol: refusal, the handshake line, AutoMTLS and the services, with real plugin
processes launched the way go-plugin's client launches them."""

import datetime as dt
import json
import os
import re
import signal
import stat
import subprocess
import unittest

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from tests.support import (
    FIXTURE, PYTHON, SCORER_MAIN, PluginProcess, client_identity, der_from_field, fp, host_env,
)
from foresight_plugin import convert, goplugin
from foresight.v1 import (
    admitter_pb2, detector_pb2, filter_pb2, order_pb2, picker_pb2, plugin_pb2, producer_pb2,
    scorer_pb2, types_pb2,
)

HANDSHAKE = re.compile(r"^1\|1\|unix\|(/[^|]+)\|grpc\|([A-Za-z0-9+/]*)$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$")


def health_request(service: str) -> bytes:
    raw = service.encode()
    return (b"\x0a" + bytes([len(raw)]) + raw) if raw else b""


def json_lines(stderr: bytes):
    """The kit's log lines (gRPC's C core writes plain lines of its own, e.g. about a refused
    TLS handshake; go-plugin's host logs those at debug level)."""
    return [json.loads(line) for line in stderr.decode().splitlines() if line.startswith("{")]


class RefusalTest(unittest.TestCase):
    """Run by hand, or by a host that does not speak protocol 1: a message and exit code 1."""

    def run_plugin(self, env):
        return subprocess.run([str(SCORER_MAIN)], env=env, capture_output=True, timeout=30)

    def test_without_the_magic_cookie(self):
        env = {k: v for k, v in host_env().items() if k != goplugin.COOKIE_KEY}
        for cookie in (None, "wrong"):
            if cookie:
                env[goplugin.COOKIE_KEY] = cookie
            with self.subTest(cookie=cookie):
                r = self.run_plugin(env)
                self.assertEqual(r.returncode, 1)
                self.assertEqual(r.stdout, b"", "nothing on stdout, which is go-plugin's channel")
                self.assertIn(b"meant to be launched by the Foresight host", r.stderr)

    def test_without_protocol_1(self):
        for versions in ("2", "2,3", ""):
            with self.subTest(versions=versions):
                r = self.run_plugin(host_env(PLUGIN_PROTOCOL_VERSIONS=versions))
                self.assertEqual(r.returncode, 1)
                self.assertEqual(r.stdout, b"")
                self.assertIn(b"speaks Foresight plugin protocol 1", r.stderr)
                self.assertIn((versions or "none").encode(), r.stderr)

    def test_a_broken_plugin_says_why_before_the_handshake(self):
        r = subprocess.run([PYTHON, str(FIXTURE), "bad-reads"], env=host_env(), capture_output=True,
                           timeout=30)
        self.assertEqual((r.returncode, r.stdout), (1, b""))
        self.assertIn(b"unknown read path 'endpoints.state.waiting'", r.stderr)
        r = subprocess.run([PYTHON, str(FIXTURE), "bad-defaults"], env=host_env(), capture_output=True,
                           timeout=30)
        self.assertEqual((r.returncode, r.stdout), (1, b""))
        entry = json_lines(r.stderr)[-1]
        self.assertEqual(entry["@level"], "error")
        self.assertIn('parameter "weight" must be in [0, 1], got -1', entry["error"])

    def test_protocol_1_among_others_is_accepted(self):
        self.assertEqual(goplugin.negotiate({"PLUGIN_PROTOCOL_VERSIONS": "3,1,2"}), 1)


class HandshakeLineTest(unittest.TestCase):
    def test_format_and_certificate_encoding(self):
        cert_pem, _ = client_identity()
        cert = goplugin.server_certificate(cert_pem)
        line = goplugin.handshake_line("/tmp/plugin123", cert, environ={})
        m = HANDSHAKE.match(line)
        self.assertIsNotNone(m, line)
        self.assertEqual(der_from_field(m.group(2)), cert.cert_der)
        self.assertGreater(len(m.group(2)), 50, "go-plugin ignores a certificate of 50 chars or fewer")
        self.assertEqual(goplugin.handshake_line("/s", None, environ={}), "1|1|unix|/s|grpc|")
        self.assertEqual(goplugin.handshake_line("/s", None, environ={"PLUGIN_MULTIPLEX_GRPC": "true"}),
                         "1|1|unix|/s|grpc||false")

    def test_server_certificate_is_what_the_go_client_verifies(self):
        cert_pem, _ = client_identity()
        c = x509.load_der_x509_certificate(goplugin.server_certificate(cert_pem).cert_der)
        self.assertEqual(c.extensions.get_extension_for_class(x509.SubjectAlternativeName)
                         .value.get_values_for_type(x509.DNSName), ["localhost"])
        self.assertIsInstance(c.public_key(), ec.EllipticCurvePublicKey)
        self.assertEqual(c.public_key().curve.name, "secp521r1")
        self.assertTrue(c.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
        self.assertIn(ExtendedKeyUsageOID.SERVER_AUTH,
                      c.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        self.assertLess(c.not_valid_before, now)
        self.assertGreater(c.not_valid_after, now + dt.timedelta(days=365 * 29))
        with self.assertRaises(ValueError):
            goplugin.server_certificate("not a certificate")

    def test_health_request_decoding(self):
        self.assertEqual(goplugin.health_check(health_request("plugin")), goplugin.HEALTH_SERVING)
        self.assertEqual(goplugin.health_check(b""), goplugin.HEALTH_SERVING)
        self.assertIsNone(goplugin.health_check(health_request("other")))
        with self.assertRaises(ValueError):
            goplugin.health_service(b"\x0a\x05ab")


class ServedPluginTest(unittest.TestCase):
    """The example scorer served with AutoMTLS, driven like the host drives it."""

    @classmethod
    def setUpClass(cls):
        cls.client_cert, cls.client_key = client_identity()
        cls.plugin = PluginProcess([str(SCORER_MAIN)], host_env(PLUGIN_CLIENT_CERT=cls.client_cert.decode()))
        m = HANDSHAKE.match(cls.plugin.line)
        if m is None:
            _, err = cls.plugin.stop()
            raise AssertionError(f"bad handshake line {cls.plugin.line!r}; stderr: {err.decode()}")
        cls.socket, field = m.group(1), m.group(2)
        server_pem = x509.load_der_x509_certificate(der_from_field(field)).public_bytes(
            serialization.Encoding.PEM)
        creds = grpc.ssl_channel_credentials(root_certificates=server_pem,
                                             private_key=cls.client_key,
                                             certificate_chain=cls.client_cert)
        cls.channel = grpc.secure_channel("unix:" + cls.socket, creds,
                                          options=[("grpc.ssl_target_name_override", "localhost")])

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.plugin.stop()

    def call(self, method, request, response_type, **kw):
        rpc = self.channel.unary_unary(method, request_serializer=type(request).SerializeToString,
                                       response_deserializer=response_type.FromString)
        return rpc(request, timeout=10, **kw)

    def test_1_socket_in_the_hosts_directory(self):
        self.assertEqual(os.path.dirname(self.socket), self.plugin.socket_dir)
        self.assertTrue(stat.S_ISSOCK(os.stat(self.socket).st_mode))

    def test_2_health(self):
        check = self.channel.unary_unary("/grpc.health.v1.Health/Check")
        self.assertEqual(check(health_request("plugin"), timeout=10), b"\x08\x01")
        self.assertEqual(check(b"", timeout=10), b"\x08\x01")
        with self.assertRaises(grpc.RpcError) as cm:
            check(health_request("nope"), timeout=10)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)

    def test_3_info_and_configure(self):
        info = self.call("/foresight.v1.PluginService/GetInfo", plugin_pb2.GetInfoRequest(),
                         plugin_pb2.GetInfoResponse)
        self.assertEqual((info.type, info.stage, info.version),
                         ("cost-aware-scorer", plugin_pb2.STAGE_SCORER,
                          (SCORER_MAIN.parent / "VERSION").read_text().strip()))
        self.assertIn("endpoints.labels", info.reads)
        bad = self.call("/foresight.v1.PluginService/Configure",
                        plugin_pb2.ConfigureRequest(parameters=b'{"nope": 1}'), plugin_pb2.ConfigureResponse)
        self.assertEqual(bad.status.code, types_pb2.STATUS_CODE_INVALID_ARGUMENT)
        self.assertEqual(bad.status.message, 'decoding parameters: json: unknown field "nope"')
        good = self.call("/foresight.v1.PluginService/Configure",
                         plugin_pb2.ConfigureRequest(parameters=b'{"acceleratorCosts": {"l4": 1}}'),
                         plugin_pb2.ConfigureResponse)
        self.assertFalse(good.HasField("status"))
        self.assertFalse(info.multi_instance)
        named = self.call("/foresight.v1.PluginService/Configure",
                          plugin_pb2.ConfigureRequest(parameters=b'{}', instance="strict#1"),
                          plugin_pb2.ConfigureResponse)
        self.assertEqual(named.status.code, types_pb2.STATUS_CODE_INVALID_ARGUMENT)
        self.assertIn("serves a single instance", named.status.message)

    def test_4_score_stream_answers_in_order(self):
        def req(ttfts):
            c = fp.Cycle(request=fp.Request(slo=fp.SLO(500, 0)), endpoints=[
                fp.Endpoint(f"e{i}", {"accelerator": "l4"}, fp.EndpointState(), fp.Prediction(True, t, 5.0))
                for i, t in enumerate(ttfts)])
            return scorer_pb2.ScoreRequest(cycles=[convert.cycle_to_proto(c)])
        stream = self.channel.stream_stream("/foresight.v1.ScorerService/Score",
                                            request_serializer=scorer_pb2.ScoreRequest.SerializeToString,
                                            response_deserializer=scorer_pb2.ScoreResponse.FromString)
        answers = list(stream(iter([req([100, 200]), req([900, 100, 300])]), timeout=10))
        self.assertEqual(len(answers), 2)
        first, second = (list(a.results[0].scores) for a in answers)
        self.assertEqual(len(first), 2)
        self.assertGreater(first[0], first[1])
        self.assertEqual(len(second), 3)
        self.assertLess(second[0], 0.5, "misses the TTFT objective: below every endpoint meeting it")
        self.assertGreater(second[1], second[2])

    def test_5_stdio_stream_opens_and_broker_is_absent(self):
        stdio = self.channel.unary_stream("/plugin.GRPCStdio/StreamStdio")
        it = stdio(b"", timeout=0.5)
        with self.assertRaises(grpc.RpcError) as cm:
            next(it)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED, "open, sending nothing")
        broker = self.channel.stream_stream("/plugin.GRPCBroker/StartStream")
        with self.assertRaises(grpc.RpcError) as cm:
            list(broker(iter([]), timeout=5))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED)

    def test_6_plaintext_is_refused(self):
        insecure = grpc.insecure_channel("unix:" + self.socket)
        with self.assertRaises(grpc.RpcError):
            insecure.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=2)
        insecure.close()

    def test_7_shutdown_exits_cleanly(self):
        shutdown = self.channel.unary_unary("/plugin.GRPCController/Shutdown")
        self.assertEqual(shutdown(b"", timeout=10), b"")  # plugin.Empty both ways
        self.plugin.proc.wait(timeout=10)
        self.assertFalse(os.path.exists(self.socket), "the socket is removed")
        code, out, err = self.plugin.wait(timeout=10)
        self.assertEqual(code, 0)
        self.assertEqual(out, b"", "nothing after the handshake line on stdout")
        entries = json_lines(err)
        self.assertTrue(entries)
        for e in entries:
            self.assertIn(e["@level"], ("trace", "debug", "info", "warn", "error"))
            self.assertRegex(e["@timestamp"], TIMESTAMP)
        serving = entries[0]
        self.assertEqual((serving["@message"], serving["type"], serving["protocol"]),
                         ("plugin serving", "cost-aware-scorer", 1))


class StagesOverTheWireTest(unittest.TestCase):
    """Every stage's service, served without TLS (a host without AutoMTLS)."""

    def serve(self, stage):
        p = PluginProcess([PYTHON, str(FIXTURE), stage], host_env())
        self.addCleanup(p.stop)
        m = HANDSHAKE.match(p.line)
        self.assertIsNotNone(m, p.line)
        self.assertEqual(m.group(2), "", "no certificate without PLUGIN_CLIENT_CERT")
        ch = grpc.insecure_channel("unix:" + m.group(1))
        self.addCleanup(ch.close)
        return p, ch

    @staticmethod
    def stream(ch, method, req, resp_type):
        rpc = ch.stream_stream(method, request_serializer=type(req).SerializeToString,
                               response_deserializer=resp_type.FromString)
        return list(rpc(iter([req]), timeout=10))[0]

    @staticmethod
    def cycle(waiting, priority=0):
        return convert.cycle_to_proto(fp.Cycle(request=fp.Request(priority=priority), endpoints=[
            fp.Endpoint(f"e{i}", state=fp.EndpointState(waiting=w)) for i, w in enumerate(waiting)]))

    def info(self, ch):
        return ch.unary_unary("/foresight.v1.PluginService/GetInfo",
                              request_serializer=plugin_pb2.GetInfoRequest.SerializeToString,
                              response_deserializer=plugin_pb2.GetInfoResponse.FromString)(
            plugin_pb2.GetInfoRequest(), timeout=10)

    def test_producer(self):
        _, ch = self.serve("producer")
        self.assertEqual(self.info(ch).stage, plugin_pb2.STAGE_PRODUCER)
        r = self.stream(ch, "/foresight.v1.ProducerService/Produce",
                        producer_pb2.ProduceRequest(cycles=[self.cycle([1, 2, 3])]), producer_pb2.ProduceResponse)
        self.assertEqual(list(r.results[0].predictions.valid), [True, True, False])
        self.assertEqual(list(r.results[0].predictions.ttft_ms), [110.0, 120.0, 0.0])
        obs = ch.unary_unary("/foresight.v1.ProducerService/Observe",
                             request_serializer=producer_pb2.ObserveRequest.SerializeToString,
                             response_deserializer=producer_pb2.ObserveResponse.FromString)(
            producer_pb2.ObserveRequest(samples=[producer_pb2.Sample()] * 3), timeout=10)
        self.assertEqual((obs.accepted, obs.stats.model_version, obs.stats.ttft.quantile_coverage), (3, 3, 0.9))

    def test_filter(self):
        _, ch = self.serve("filter")
        r = self.stream(ch, "/foresight.v1.FilterService/Filter",
                        filter_pb2.FilterRequest(cycles=[self.cycle([9, 1, 4, 5])]), filter_pb2.FilterResponse)
        self.assertEqual((list(r.results[0].kept), r.results[0].reason), ([1, 2], "waiting < 5"))

    def test_admitter(self):
        _, ch = self.serve("admitter")
        r = self.stream(ch, "/foresight.v1.AdmitterService/Admit",
                        admitter_pb2.AdmitRequest(cycles=[self.cycle([1]), self.cycle([1], priority=-1)]),
                        admitter_pb2.AdmitResponse)
        self.assertEqual([(x.admitted, x.reason) for x in r.results], [(True, ""), (False, "sheddable")])

    def test_picker(self):
        _, ch = self.serve("picker")
        req = picker_pb2.PickRequest(cycles=[self.cycle([0, 0, 0])])
        req.scores.add().values.extend([0.1, 0.7, 0.3])
        r = self.stream(ch, "/foresight.v1.PickerService/Pick", req, picker_pb2.PickResponse)
        self.assertEqual(list(r.results[0].order), [1, 2, 0])

    def test_detector(self):
        _, ch = self.serve("detector")
        self.assertEqual(self.info(ch).stage, plugin_pb2.STAGE_DETECTOR)
        r = self.stream(ch, "/foresight.v1.SaturationDetectorService/Detect",
                        detector_pb2.DetectRequest(cycles=[self.cycle([0, 1, 5]), self.cycle([2, 3])]),
                        detector_pb2.DetectResponse)
        # 2 - waiting: [2, 1, -3] with the negative count sent as 0; then [0, -1]: every one full.
        self.assertEqual([(list(x.room), x.wait_ms, x.reason) for x in r.results],
                         [([2, 1, 0], 0.0, ""), ([0, 0], -1.0, "queues-full")])

    def test_order(self):
        _, ch = self.serve("order")
        self.assertEqual(self.info(ch).stage, plugin_pb2.STAGE_ORDER)
        now = dt.datetime(2026, 11, 26, tzinfo=dt.timezone.utc)
        with_slo = convert.cycle_to_proto(fp.Cycle(
            request=fp.Request(priority=2, session_id="s1", slo=fp.SLO(300, 0)), now=now))
        r = self.stream(ch, "/foresight.v1.OrderService/Order",
                        order_pb2.OrderRequest(cycles=[with_slo, self.cycle([1], priority=-1)]),
                        order_pb2.OrderResponse)
        first, second = r.results
        self.assertEqual((first.rank, first.flow), (-2, "s1"))
        self.assertEqual(first.hopeless_after.ToDatetime(tzinfo=dt.timezone.utc),
                         now + dt.timedelta(milliseconds=100))
        self.assertEqual((second.rank, second.flow, second.HasField("hopeless_after")), (1, "", False))

    def test_scorer_prints_reach_the_log_and_errors_travel_per_cycle(self):
        p, ch = self.serve("scorer")
        configure = ch.unary_unary("/foresight.v1.PluginService/Configure",
                                   request_serializer=plugin_pb2.ConfigureRequest.SerializeToString,
                                   response_deserializer=plugin_pb2.ConfigureResponse.FromString)
        self.assertFalse(configure(plugin_pb2.ConfigureRequest(parameters=b'{"fail": true}'),
                                   timeout=10).HasField("status"))
        r = self.stream(ch, "/foresight.v1.ScorerService/Score",
                        scorer_pb2.ScoreRequest(cycles=[self.cycle([1])]), scorer_pb2.ScoreResponse)
        self.assertEqual((r.results[0].status.code, r.results[0].status.message),
                         (types_pb2.STATUS_CODE_ERROR, "RuntimeError: asked to fail"))
        p.proc.send_signal(signal.SIGINT)  # ignored, like go-plugin's server does
        p.proc.send_signal(signal.SIGTERM)  # stops it cleanly
        code, out, err = p.wait(timeout=10)
        self.assertEqual(code, 0)
        self.assertEqual(out, b"")
        entries = json_lines(err)
        printed = [e for e in entries if e.get("stream") == "stdout"]
        # At start (the defaults, before the handshake: stdout is the log from the start) and
        # when configured.
        self.assertEqual([e["@message"] for e in printed],
                         ["configured with {'fail': False}", "configured with {'fail': True}"])
        failed = [e for e in entries if e["@level"] == "error"]
        self.assertEqual(len(failed), 1)
        self.assertIn("RuntimeError: asked to fail", failed[0]["error"])


if __name__ == "__main__":
    unittest.main()
