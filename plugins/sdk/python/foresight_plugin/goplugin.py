"""The parts of hashicorp/go-plugin's protocol (v1.8.0) a non-Go gRPC plugin must speak.

What the host's go-plugin client does, and what this module answers (client.go, grpc_client.go):

1. It starts the plugin with ``FORESIGHT_PLUGIN=<cookie>`` (the handshake's magic cookie),
   ``PLUGIN_PROTOCOL_VERSIONS`` (the application protocol versions it offers, comma-separated),
   ``PLUGIN_MIN_PORT``/``PLUGIN_MAX_PORT`` (TCP only: unused on Unix) and, with AutoMTLS,
   ``PLUGIN_CLIENT_CERT`` (its one-time client certificate, PEM). -> :func:`check_cookie`,
   :func:`negotiate`, :func:`server_certificate`.
2. It reads one line from the plugin's stdout:
   ``CORE-PROTOCOL|APP-PROTOCOL|NETWORK|ADDRESS|PROTOCOL|SERVER-CERT``, e.g.
   ``1|1|unix|/tmp/plugin123|grpc|MIIB...`` where SERVER-CERT is the DER of the server's
   certificate in base64 *without padding* (Go's base64.RawStdEncoding: the client rejects '=').
   It ignores the certificate unless it is longer than 50 characters; with
   ``PLUGIN_MULTIPLEX_GRPC`` set it wants a 7th field saying whether the broker multiplexes.
   -> :func:`handshake_line`. Everything the plugin prints to stdout later is drained and dropped.
3. It dials the address with gRPC over TLS (ServerName "localhost", TLS >= 1.2), presenting its
   certificate and trusting exactly the server's, and calls:
   - ``plugin.GRPCBroker/StartStream`` (bidi): its error is ignored, so this kit, which has no
     broker (plugins that call back into the host need one; Foresight's stages do not), leaves it
     UNIMPLEMENTED;
   - ``plugin.GRPCStdio/StreamStdio`` (server stream): UNAVAILABLE or UNIMPLEMENTED turn syncing
     off quietly; this kit serves it as a stream that stays open and sends nothing (the host
     discards the synced output anyway; stdout is redirected to the log instead);
   - ``grpc.health.v1.Health/Check`` for service "plugin" (Ping): -> :func:`health_check`;
   - the plugin's services (Foresight's PluginService and stage service);
   - ``plugin.GRPCController/Shutdown`` when the host stops the plugin; it then waits 2 s for the
     process to exit before killing it. -> the server stops and the process exits 0.

Every message of these go-plugin services is encoded here by hand, so the kit needs no generated
code beyond Foresight's own.
"""

from __future__ import annotations

import base64
import datetime as _dt
import os
import secrets
import tempfile
from dataclasses import dataclass

__all__ = [
    "COOKIE_KEY", "COOKIE_VALUE", "PROTOCOL_VERSION", "CORE_PROTOCOL_VERSION", "HandshakeError",
    "check_cookie", "negotiate", "server_certificate", "handshake_line", "socket_path",
    "health_check", "HEALTH_SERVING", "ServerCert",
]

#: The handshake every Foresight plugin shares (plugins/sdk/goplugin.go).
COOKIE_KEY = "FORESIGHT_PLUGIN"
COOKIE_VALUE = "6d1b3c2f-foresight-stage-plugin"
#: The Foresight plugin protocol this kit speaks (the contracts in proto/foresight/v1).
PROTOCOL_VERSION = 1
#: go-plugin's own protocol version, the first field of the handshake line.
CORE_PROTOCOL_VERSION = 1
#: The health service name go-plugin's client checks.
HEALTH_SERVICE = "plugin"

MULTIPLEX_ENV = "PLUGIN_MULTIPLEX_GRPC"
SOCKET_DIR_ENV = "PLUGIN_UNIX_SOCKET_DIR"
SOCKET_GROUP_ENV = "PLUGIN_UNIX_SOCKET_GROUP"


class HandshakeError(Exception):
    """The process was not started the way a Foresight host starts plugins."""


def check_cookie(environ=os.environ) -> None:
    """Raises HandshakeError unless the host's magic cookie is in the environment."""
    if environ.get(COOKIE_KEY) != COOKIE_VALUE:
        raise HandshakeError(
            "This program is a Foresight plugin: it is meant to be launched by the Foresight host\n"
            "(foresight serve, check, bench, ...), which loads the plugins its config declares,\n"
            "not run by hand. Declare it in a pipeline config and run the host instead, e.g.\n"
            "  bin/foresight check --config examples/python-scorer.yaml")


def negotiate(environ=os.environ) -> int:
    """The application protocol version to serve: PROTOCOL_VERSION if the host offers it in
    PLUGIN_PROTOCOL_VERSIONS; raises HandshakeError otherwise."""
    offered = environ.get("PLUGIN_PROTOCOL_VERSIONS", "")
    versions = []
    for part in offered.split(","):
        part = part.strip()
        if part.isdigit():
            versions.append(int(part))
    if PROTOCOL_VERSION in versions:
        return PROTOCOL_VERSION
    shown = offered if offered else "none (PLUGIN_PROTOCOL_VERSIONS is not set)"
    raise HandshakeError(
        f"plugin protocol mismatch: this plugin speaks Foresight plugin protocol {PROTOCOL_VERSION}, "
        f"the host offers {shown}. Use a host release that speaks protocol {PROTOCOL_VERSION}, or a "
        "foresight_plugin kit that speaks one of the host's.")


@dataclass
class ServerCert:
    """The plugin's one-time TLS identity and the client certificate it trusts."""
    cert_pem: bytes
    key_pem: bytes
    cert_der: bytes
    client_cert_pem: bytes

    def handshake_field(self) -> str:
        """The certificate as the handshake line's 6th field: base64 of the DER, no padding."""
        return base64.b64encode(self.cert_der).decode("ascii").rstrip("=")


def server_certificate(client_cert_pem: str | bytes) -> ServerCert:
    """A fresh self-signed server certificate for AutoMTLS, like go-plugin's generateCert:
    ECDSA P-521, CN and DNS SAN "localhost" (the name the client verifies), CA (it is its own
    root in the client's pool), client and server auth, valid from 30 s ago for 262,980 hours.
    Raises ValueError when the client certificate does not parse."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if isinstance(client_cert_pem, str):
        client_cert_pem = client_cert_pem.encode()
    try:
        x509.load_pem_x509_certificate(client_cert_pem)
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"PLUGIN_CLIENT_CERT does not hold a PEM certificate: {e}") from None
    key = ec.generate_private_key(ec.SECP521R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Foresight plugin")])
    now = _dt.datetime.now(_dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(secrets.randbelow(1 << 128) | 1)
        .not_valid_before(now - _dt.timedelta(seconds=30))
        .not_valid_after(now + _dt.timedelta(hours=262980))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=True,
            data_encipherment=False, key_agreement=True, key_cert_sign=True, crl_sign=False,
            encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage(
            [ExtendedKeyUsageOID.CLIENT_AUTH, ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA512())
    )
    return ServerCert(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.TraditionalOpenSSL,
                                  serialization.NoEncryption()),
        cert_der=cert.public_bytes(serialization.Encoding.DER),
        client_cert_pem=client_cert_pem,
    )


def handshake_line(address: str, cert: ServerCert | None, protocol: int = PROTOCOL_VERSION,
                   environ=os.environ) -> str:
    """The line go-plugin's client reads from stdout (without the newline)."""
    line = f"{CORE_PROTOCOL_VERSION}|{protocol}|unix|{address}|grpc|{cert.handshake_field() if cert else ''}"
    if environ.get(MULTIPLEX_ENV):
        line += "|false"  # no broker, so no broker multiplexing
    return line


def socket_path(environ=os.environ) -> str:
    """A fresh path for the plugin's Unix socket, in PLUGIN_UNIX_SOCKET_DIR or the temp dir."""
    directory = environ.get(SOCKET_DIR_ENV) or None
    fd, path = tempfile.mkstemp(prefix="plugin", dir=directory)
    os.close(fd)
    os.unlink(path)  # it has to not exist for the socket
    return path


def share_with_group(path: str, environ=os.environ) -> None:
    """Makes the socket group-writable for PLUGIN_UNIX_SOCKET_GROUP (a name or gid), if set."""
    group = environ.get(SOCKET_GROUP_ENV)
    if not group:
        return
    import grp
    gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    os.chown(path, -1, gid)
    os.chmod(path, 0o660)


# grpc.health.v1: HealthCheckRequest {string service = 1;}
# HealthCheckResponse {ServingStatus status = 1;}, SERVING = 1.
HEALTH_SERVING = b"\x08\x01"


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(data):
            raise ValueError("truncated varint")
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def health_service(request: bytes) -> str:
    """The service field of an encoded HealthCheckRequest."""
    service, i = "", 0
    while i < len(request):
        key, i = _varint(request, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = _varint(request, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            size, i = _varint(request, i)
            if i + size > len(request):
                raise ValueError("truncated field")
            if field == 1:
                service = request[i:i + size].decode("utf-8")
            i += size
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return service


def health_check(request: bytes) -> bytes | None:
    """The encoded HealthCheckResponse for an encoded HealthCheckRequest: SERVING for the
    plugin's service and for "" (the server as a whole), None (NOT_FOUND) for any other."""
    return HEALTH_SERVING if health_service(request) in ("", HEALTH_SERVICE) else None
