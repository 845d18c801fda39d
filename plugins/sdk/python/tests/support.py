"""Shared helpers of the kit's tests: paths, the example scorer module, plugin processes."""

from __future__ import annotations

import base64
import datetime as dt
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]          # plugins/sdk/python
REPO = KIT.parents[2]
GEN = REPO / "proto" / "gen" / "python"
SCORER_MAIN = REPO / "plugins" / "python-scorer" / "main.py"
FIXTURE = Path(__file__).resolve().parent / "fixture_plugin.py"
PYTHON = "/usr/bin/python3"

for p in (KIT, GEN):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import foresight_plugin as fp  # noqa: E402
from foresight_plugin import goplugin  # noqa: E402


def load_scorer_module():
    """plugins/python-scorer/main.py as a module (its main() does not run)."""
    spec = importlib.util.spec_from_file_location("cost_aware_scorer_main", SCORER_MAIN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def host_env(**extra) -> dict:
    """The environment a Foresight host gives a plugin (without AutoMTLS unless added)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PLUGIN_") and k != goplugin.COOKIE_KEY}
    env[goplugin.COOKIE_KEY] = goplugin.COOKIE_VALUE
    env["PLUGIN_PROTOCOL_VERSIONS"] = "1"
    env["PLUGIN_MIN_PORT"] = "0"
    env["PLUGIN_MAX_PORT"] = "0"
    env.update(extra)
    return env


def client_identity():
    """A one-time client certificate and key (PEM) made the way go-plugin's client makes its own:
    self-signed ECDSA P-521, CN and SAN localhost, CA, client and server auth."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP521R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "HashiCorp")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(seconds=30))
            .not_valid_after(now + dt.timedelta(hours=262980))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH,
                                                  ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(key, hashes.SHA512()))
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert_pem, key_pem


def der_from_field(field: str) -> bytes:
    """Decodes the handshake's certificate field as Go's base64.RawStdEncoding does: the standard
    alphabet, no padding (a '=' is an error)."""
    if "=" in field:
        raise ValueError("padding in a RawStdEncoding string")
    return base64.b64decode(field + "=" * (-len(field) % 4), validate=True)


class PluginProcess:
    """A plugin started the way go-plugin's client starts it; reads the handshake line."""

    def __init__(self, argv, env, timeout=20.0):
        self.socket_dir = tempfile.mkdtemp(prefix="fp-test-")
        env = dict(env, PLUGIN_UNIX_SOCKET_DIR=self.socket_dir)
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.line = self.proc.stdout.readline().decode().rstrip("\n")
        self.timeout = timeout

    def fields(self):
        return self.line.split("|")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        out, err = self.proc.communicate(timeout=self.timeout)
        shutil.rmtree(self.socket_dir, ignore_errors=True)
        return out, err

    def wait(self, timeout=10.0):
        code = self.proc.wait(timeout=timeout)
        out, err = self.proc.communicate(timeout=timeout)
        shutil.rmtree(self.socket_dir, ignore_errors=True)
        return code, out, err
