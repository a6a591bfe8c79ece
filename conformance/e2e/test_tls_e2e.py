"""HTTPS end to end with real clients: curl (`--cacert`, `--pinnedpubkey`), Python's `ssl` verifying
against the generated certificate, a wrong CA refused; the `--tls auto` certificate's names, storage,
reuse and renewal; `--tls-cert/--tls-key` files; `--port off`; the flags and their environment variables."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import socket
import ssl
import stat
import subprocess

import pytest

from processes import process_fixture
from tls_support import TLSServer


@pytest.fixture
def tls_servers(request):
    """`tls_servers(*flags, name=…)` makes a TLSServer (not started); all are stopped afterwards."""
    binary = os.environ["COUCHLITE_BIN"]

    def make(root: str, index: int, *flags: str, name: str | None = None) -> TLSServer:
        return TLSServer(binary, root, *flags, name=name or f"tls{index}")

    yield from process_fixture(request, "couchlite-tls-", make)


def openssl(*args: str, input: bytes | None = None) -> bytes:
    out = subprocess.run(["openssl", *args], input=input, capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout


def der_fingerprint(pem_path: str) -> str:
    der = openssl("x509", "-in", pem_path, "-outform", "DER")
    digest = hashlib.sha256(der).hexdigest().upper()
    return ":".join(digest[i:i + 2] for i in range(0, 64, 2))


def spki_pin(pem_path: str) -> str:
    """curl's `--pinnedpubkey sha256//…`: base64 of SHA-256 of the DER SubjectPublicKeyInfo."""
    public = openssl("x509", "-in", pem_path, "-noout", "-pubkey")
    der = openssl("pkey", "-pubin", "-outform", "DER", input=public)
    return "sha256//" + base64.b64encode(hashlib.sha256(der).digest()).decode()


def curl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["curl", "-sS", "--max-time", "10", *args], capture_output=True, timeout=30)


# --- real clients ------------------------------------------------------------------------------

def test_curl_with_cacert_verifies_the_generated_certificate(tls_servers):
    server = tls_servers("--tls", "auto").start()
    for host in ["127.0.0.1", "localhost"]:
        out = curl("--cacert", server.cert_path, "-u", "admin:pass", f"https://{host}:{server.https_port}/_session")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["userCtx"]["name"] == "admin"
    # Without the certificate, curl's system store does not know it.
    out = curl(f"{server.https}/")
    assert out.returncode == 60, out  # CURLE_PEER_FAILED_VERIFICATION


def test_curl_with_pinnedpubkey_accepts_the_pin_and_refuses_another(tls_servers):
    server = tls_servers("--tls", "auto").start()
    other = tls_servers("--tls", "auto").start()
    out = curl("-k", "--pinnedpubkey", spki_pin(server.cert_path), f"{server.https}/_up")
    assert out.returncode == 0 and json.loads(out.stdout) == {"status": "ok"}, out
    out = curl("-k", "--pinnedpubkey", spki_pin(other.cert_path), f"{server.https}/_up")
    assert out.returncode == 90, out  # CURLE_SSL_PINNEDPUBKEYNOTMATCH


def test_python_ssl_verifies_against_the_certificate(tls_servers):
    server = tls_servers("--tls", "auto").start()
    context = server.verified_context()
    context.set_alpn_protocols(["h2", "http/1.1"])
    with socket.create_connection(("127.0.0.1", server.https_port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.selected_alpn_protocol() == "http/1.1"
            assert tls.version() == "TLSv1.3"
            der = tls.getpeercert(binary_form=True)
            digest = hashlib.sha256(der).hexdigest().upper()
            assert ":".join(digest[i:i + 2] for i in range(0, 64, 2)) == server.fingerprint
            tls.sendall(b"GET /_up HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert tls.recv(4096).startswith(b"HTTP/1.1 200 OK\r\n")
            # Keep-alive works over TLS as over plain TCP.
            tls.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := tls.recv(4096):
                data += chunk
            assert data.startswith(b"HTTP/1.1 200 OK\r\n") and b'"couchdb":"Welcome"' in data
    # TLS 1.2 is accepted too, with forward-secret AEAD suites only.
    tls12 = server.verified_context()
    tls12.maximum_version = ssl.TLSVersion.TLSv1_2
    with socket.create_connection(("127.0.0.1", server.https_port), timeout=5) as raw:
        with tls12.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            name, version, _ = tls.cipher()
            assert version == "TLSv1.2" and name.startswith("ECDHE-") and ("GCM" in name or "CHACHA" in name)


def test_wrong_ca_is_refused(tls_servers):
    server = tls_servers("--tls", "auto").start()
    other = tls_servers("--tls", "auto").start()
    with socket.create_connection(("127.0.0.1", server.https_port), timeout=5) as raw:
        with pytest.raises(ssl.SSLCertVerificationError):
            other.verified_context().wrap_socket(raw, server_hostname="127.0.0.1")
    out = curl("--cacert", other.cert_path, f"{server.https}/")
    assert out.returncode == 60, out
    assert server.get("/_up")[0] == 200  # the refused clients did not disturb it


def test_weak_protocols_and_cipher_suites_are_refused(tls_servers):
    server = tls_servers("--tls", "auto").start()
    weak = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    weak.check_hostname = False
    weak.verify_mode = ssl.CERT_NONE
    weak.maximum_version = ssl.TLSVersion.TLSv1_2
    weak.set_ciphers("AES128-SHA:AES256-SHA:ECDHE-ECDSA-AES128-SHA")  # CBC, and no forward secrecy
    with socket.create_connection(("127.0.0.1", server.https_port), timeout=5) as raw:
        with pytest.raises(ssl.SSLError):
            weak.wrap_socket(raw)
    assert server.get("/_up")[0] == 200


# --- --tls auto: the certificate ------------------------------------------------------------

def test_generated_certificate_names_the_machine_and_is_owner_only(tls_servers):
    server = tls_servers("--tls", "auto").start()
    assert "generated a self-signed TLS certificate" in server.stdout
    assert der_fingerprint(server.cert_path) == server.fingerprint
    text = openssl("x509", "-in", server.cert_path, "-noout", "-text").decode()
    assert "DNS:localhost" in text and "IP Address:127.0.0.1" in text and "IP Address:0:0:0:0:0:0:0:1" in text
    assert f"DNS:{socket.gethostname()}" in text
    assert "CA:FALSE" in text and "TLS Web Server Authentication" in text and "id-ecPublicKey" in text
    assert "prime256v1" in text or "P-256" in text
    days = int(subprocess.run(
        ["bash", "-c", f"echo $(( ($(date -d \"$(openssl x509 -in '{server.cert_path}' -noout -enddate | cut -d= -f2)\" +%s) - $(date +%s)) / 86400 ))"],
        capture_output=True, timeout=30).stdout)
    assert 820 <= days <= 825
    for path in [server.cert_path, server.key_path]:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path


def test_certificate_is_reused_across_restarts(tls_servers):
    server = tls_servers("--tls", "auto").start()
    first = server.fingerprint
    server.stop()
    server.start()
    assert server.fingerprint == first
    assert "generated" not in server.stdout


def test_mismatched_or_unreadable_files_are_replaced(tls_servers):
    server = tls_servers("--tls", "auto").start()
    other = tls_servers("--tls", "auto").start()
    first = server.fingerprint
    server.stop()
    shutil.copy(other.key_path, server.key_path)  # a key that is not the certificate's
    server.start()
    assert server.fingerprint not in (first, other.fingerprint)
    assert "does not match" in server.stdout
    server.stop()
    with open(server.cert_path, "w") as f:
        f.write("garbage\n")
    server.start()
    assert "generated a self-signed TLS certificate" in server.stdout
    assert der_fingerprint(server.cert_path) == server.fingerprint
    assert server.get("/_up")[0] == 200


def test_certificate_near_expiry_is_renewed(tls_servers):
    server = tls_servers("--tls", "auto").start()
    server.stop()
    # The same key with a certificate that has 10 days left.
    openssl("req", "-x509", "-key", server.key_path, "-days", "10", "-subj", "/CN=old", "-out", server.cert_path)
    old = der_fingerprint(server.cert_path)
    server.start()
    assert server.fingerprint != old
    assert "expires within 30 days" in server.stdout


# --- --tls-cert / --tls-key, --port off, flags ---------------------------------------------

@pytest.mark.parametrize("kind", ["rsa", "ec"])
def test_tls_cert_and_key_files_are_served(tls_servers, kind):
    server = tls_servers(name=f"files-{kind}")
    os.makedirs(server.root, exist_ok=True)
    key, cert = os.path.join(server.root, "key.pem"), os.path.join(server.root, "cert.pem")
    newkey = ["-newkey", "rsa:2048"] if kind == "rsa" else ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"]
    openssl("req", "-x509", *newkey, "-nodes", "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=files",
            "-addext", "subjectAltName=IP:127.0.0.1")
    server.start("--tls-cert", cert, "--tls-key", key)
    assert server.fingerprint == der_fingerprint(cert)
    out = curl("--cacert", cert, f"{server.https}/_up")
    assert out.returncode == 0, out
    assert not os.path.exists(server.cert_path), "--tls-cert must not generate anything"


def test_port_off_serves_only_https(tls_servers):
    server = tls_servers("--tls", "auto").start("--port", "off")
    assert server.http_port is None
    assert "listening on http://" not in server.stdout
    assert server.get("/_up")[0] == 200


def test_environment_variables_configure_tls(tls_servers):
    server = tls_servers()
    env = dict(os.environ, COUCHLITE_TLS="auto", COUCHLITE_TLS_PORT="0", COUCHLITE_PORT="off")
    server.start(env=env)
    assert server.http_port is None and server.get("/_up")[0] == 200


@pytest.mark.parametrize("args", [["--tls", "on"], ["--tls-cert", "/x.pem"], ["--tls-key", "/x.pem"],
                                  ["--port", "off"], ["--tls", "auto", "--tls-port", "70000"],
                                  ["--header-timeout", "0"]])
def test_bad_tls_flags_exit_64(args):
    out = subprocess.run([os.environ["COUCHLITE_BIN"], *args], capture_output=True, timeout=30)
    assert out.returncode == 64, out
    assert b"usage: couchlite" in out.stderr


def test_unreadable_certificate_files_stop_the_start(tmp_path):
    out = subprocess.run([os.environ["COUCHLITE_BIN"], "--port", "0", "--data-dir", str(tmp_path / "d"),
                          "--tls-cert", str(tmp_path / "missing.pem"), "--tls-key", str(tmp_path / "missing.key")],
                         capture_output=True, timeout=30)
    assert out.returncode == 1, out
    assert b"missing.pem" in out.stderr and b"listening" not in out.stdout


def test_help_lists_the_tls_options():
    out = subprocess.run([os.environ["COUCHLITE_BIN"], "--help"], capture_output=True, timeout=30)
    for flag in [b"--tls MODE", b"--tls-cert FILE", b"--tls-key FILE", b"--tls-port PORT", b"COUCHLITE_TLS_PORT",
                 b"--header-timeout"]:
        assert flag in out.stdout, flag


def test_session_cookie_is_secure_over_https_only(tls_servers):
    server = tls_servers("--tls", "auto").start()
    form = "name=admin&password=pass"
    headers = ["-H", "Content-Type: application/x-www-form-urlencoded", "-D", "-", "-o", "/dev/null"]
    out = curl("--cacert", server.cert_path, *headers, "-d", form, f"{server.https}/_session")
    cookie = next(l for l in out.stdout.decode().splitlines() if l.lower().startswith("set-cookie:"))
    assert "; Secure" in cookie and "HttpOnly" in cookie
    out = curl(*headers, "-d", form, f"http://127.0.0.1:{server.http_port}/_session")
    cookie = next(l for l in out.stdout.decode().splitlines() if l.lower().startswith("set-cookie:"))
    assert "Secure" not in cookie
