"""`couchlite receive --tls auto`: the URL and the QR code are https://, the certificate's fingerprint is
shown beside the code (and in `--json`), `--qr-pin` puts it in the QR URL's fragment, and a push over
HTTPS verified against the generated certificate lands in the folder."""

from __future__ import annotations

import hashlib
import os
import random
import re
import subprocess
import time
import urllib.parse

import pytest

from processes import printed_instructions
from receive_support import check_folder, inline_doc, photo
from replicator import Endpoint, Replicator
from test_receive_e2e import receivers, terminal_rows, write_png, zbar  # noqa: F401 (receivers: a fixture)

TLS = ("--tls", "auto", "--tls-port", "0")


def cert_fingerprint(data_dir: str) -> tuple[str, str]:
    """The generated certificate's SHA-256 fingerprint, as AB:CD:… and as lowercase hex."""
    pem = open(os.path.join(data_dir, "tls-cert.pem")).read()
    der = __import__("ssl").PEM_cert_to_DER_cert(pem)
    hex_digest = hashlib.sha256(der).hexdigest()
    return ":".join(hex_digest[i:i + 2] for i in range(0, 64, 2)).upper(), hex_digest


def test_tls_receive_url_and_qr_code_are_https_with_the_fingerprint(receivers, tmp_path):
    receiver = receivers(*TLS, "--qr-png", str(tmp_path / "code.png"))
    info = receiver.start()
    colons, _ = cert_fingerprint(receiver.data_dir)
    assert info["url"].startswith("https://" + info["user"] + ":")
    assert info["fingerprint_sha256"] == colons
    assert info["app_url"] == info["url"], "no pin in the apps' URL without --qr-pin"
    # The phone's code opens the drop page over HTTPS, signed in by a token in the fragment.
    host = urllib.parse.urlsplit(info["url"]).netloc.rpartition("@")[2]
    assert info["qr_url"] == info["signin_url"]
    assert info["signin_url"].startswith(f"https://{host}/_photos/#signin=")
    assert zbar(str(tmp_path / "code.png")) == info["signin_url"]


def test_qr_pin_puts_the_fingerprint_in_the_qr_url_fragment(receivers, tmp_path):
    receiver = receivers(*TLS, "--qr-pin", "--qr", "app", "--qr-png", str(tmp_path / "code.png"))
    info = receiver.start()
    _, hex_digest = cert_fingerprint(receiver.data_dir)
    assert info["qr_url"] == info["app_url"] == info["url"] + "#sha256=" + hex_digest
    assert zbar(str(tmp_path / "code.png")) == info["qr_url"]
    assert "#" not in info["url"], "the printed URL stays usable by stock clients"


def test_push_over_https_verified_against_the_certificate_lands_in_folder(servers, receivers):
    rng = random.Random(15)
    source = servers("source")
    src = requests_session()
    assert src.put(f"http://127.0.0.1:{source.port}/photos").status_code == 201
    beach = photo("jpg", 200_000, rng)
    r = src.post(f"http://127.0.0.1:{source.port}/photos/_bulk_docs", json={
        "docs": [inline_doc("beach", {"IMG_0001.JPG": ("image/jpeg", beach)}, taken="2024-06-01T10:00:00Z")],
        "new_edits": False})
    assert r.status_code == 201, r.text

    receiver = receivers(*TLS)
    started = time.time()
    receiver.start()
    target = Endpoint(receiver.server_url, receiver.db)
    # The URL's host is a LAN address (or loopback): the certificate names it, so verification passes.
    target.session.verify = os.path.join(receiver.data_dir, "tls-cert.pem")
    target.session.trust_env = False  # else REQUESTS_CA_BUNDLE would replace `verify`
    stats = Replicator(Endpoint(source.url, "photos"), target).run()
    assert stats.completed and stats.multipart_puts >= 1
    check_folder(receiver.out, {"IMG_0001.JPG": (beach, 1717236000.0)}, started, time.time())
    assert receiver.stop() == 0


def requests_session():
    import requests
    s = requests.Session()
    s.auth = ("admin", "pass")
    return s


def test_terminal_shows_the_fingerprint_beside_an_https_qr_code(tmp_path):
    lines = printed_instructions(
        [os.environ["COUCHLITE_BIN"], "receive", "--port", "0", *TLS, "--qr-pin", "--qr", "app", "--data-dir",
         str(tmp_path / "data"), "--out", str(tmp_path / "out"), "--admin", "admin:pass"])
    colons, hex_digest = cert_fingerprint(str(tmp_path / "data"))
    url = next(l.strip() for l in lines if l.strip().startswith("https://"))
    assert urllib.parse.urlsplit(url).fragment == "sha256=" + hex_digest
    assert any(l.strip() == colons for l in lines), "the fingerprint is printed for the sender to compare"
    block = [l for l in lines if l and set(l) <= set(" \u2580\u2584\u2588") and len(l) > 20]
    write_png(str(tmp_path / "terminal.png"), terminal_rows(block))
    assert zbar(str(tmp_path / "terminal.png")) == url


def test_terminal_shows_the_phone_code_and_the_fingerprint_in_chromiums_format(tmp_path):
    """The phone's code by default; beside it the certificate's SHA-256 as Chromium's certificate viewer shows it
    (colon-separated upper-case hex), the apps' URL, and what HTTPS with a self-signed certificate costs."""
    lines = printed_instructions(
        [os.environ["COUCHLITE_BIN"], "receive", "--port", "0", *TLS, "--data-dir", str(tmp_path / "data"),
         "--out", str(tmp_path / "out"), "--admin", "admin:pass"])
    colons, _ = cert_fingerprint(str(tmp_path / "data"))
    assert re.fullmatch(r"([0-9A-F]{2}:){31}[0-9A-F]{2}", colons)
    url = next(l.strip() for l in lines if l.strip().startswith("https://"))
    assert "/_photos/#signin=" in url and "@" not in url
    assert any(l.strip() == colons for l in lines)
    apps = next(l.strip() for l in lines if l.strip().startswith("https://drop-"))
    assert apps.endswith("/photodrop")
    text = "\n".join(lines)
    assert "self-signed certificate: the phone's browser warns once" in text
    block = [l for l in lines if l and set(l) <= set(" \u2580\u2584\u2588") and len(l) > 20]
    write_png(str(tmp_path / "terminal.png"), terminal_rows(block))
    assert zbar(str(tmp_path / "terminal.png")) == url


def test_qr_pin_without_tls_exits_64():
    out = subprocess.run([os.environ["COUCHLITE_BIN"], "receive", "--qr-pin"], capture_output=True, timeout=30)
    assert out.returncode == 64, out
    assert b"--qr-pin" in out.stderr


@pytest.mark.parametrize("flag", [b"--qr-pin", b"--tls MODE", b"--tls-port PORT"])
def test_receive_help_lists_the_tls_flags(flag):
    out = subprocess.run([os.environ["COUCHLITE_BIN"], "receive", "--help"], capture_output=True, timeout=30)
    assert flag in out.stdout


def test_drop_credentials_are_refused_on_plain_http_when_tls_is_on(receivers):
    """Issue 29, item 7: with --tls the plain port stays open (for the admin), but the one-time credentials are
    refused there, whether sent as Basic credentials or as a session cookie; over HTTPS they work."""
    import socket
    import requests
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    receiver = receivers(*TLS, "--port", str(port), "--bind", "127.0.0.1")
    receiver.start()
    plain = f"http://127.0.0.1:{port}"
    r = requests.get(f"{plain}/{receiver.db}", auth=receiver.auth)
    assert r.status_code == 403 and r.json()["error"] == "forbidden", r.text
    r = requests.post(f"{plain}/{receiver.db}/_bulk_docs", auth=receiver.auth, json={"docs": [{"_id": "x"}]})
    assert r.status_code == 403, r.text
    login = requests.Session()
    login.post(f"{plain}/_session", data={"name": receiver.auth[0], "password": receiver.auth[1]})
    assert login.get(f"{plain}/{receiver.db}").status_code == 403
    # The admin still uses the plain port; the drop credentials work over HTTPS.
    assert requests.get(f"{plain}/{receiver.db}", auth=("admin", "pass")).status_code == 200
    r = requests.get(f"{receiver.base}/{receiver.db}", auth=receiver.auth,
                     verify=os.path.join(receiver.data_dir, "tls-cert.pem"))
    assert r.status_code == 200, r.text
    assert requests.get(f"{plain}/{receiver.db}/x", auth=("admin", "pass")).status_code == 404


def test_short_code_guessing_spends_the_code_after_ten_wrong_codes(receivers):
    """Issue 40: the short code `receive` shows (for `push --to NAME`) is traded at POST /_photos/api/pair for the
    one-time credentials. Over plain HTTP it is refused unread (and not counted); ten wrong codes in all spend it,
    after which the right one gets nothing too; the credentials themselves keep working."""
    import socket
    import requests
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    receiver = receivers(*TLS, "--port", str(port), "--bind", "127.0.0.1")
    info = receiver.start()
    code = info["code"]
    assert len(code) == 9 and code[4] == "-" and not set(code) & set("ILOU"), code
    verify = os.path.join(receiver.data_dir, "tls-cert.pem")
    pair = f"{receiver.base}/_photos/api/pair"

    def trade(typed, url=pair):
        return requests.post(url, headers={"X-PhotoDrop-Code": typed}, verify=verify, timeout=10)

    for _ in range(20):
        r = trade(code, f"http://127.0.0.1:{port}/_photos/api/pair")
        assert r.status_code == 403 and r.json()["error"] == "forbidden", r.text
    r = requests.post(pair, verify=verify, timeout=10)
    assert r.status_code == 400 and r.json()["error"] == "bad_request", r.text
    assert trade("ABC").status_code == 400 and trade("ABCD-234!").status_code == 400  # malformed: not counted
    r = trade(code.lower().replace("-", ""))
    assert r.status_code == 200, r.text
    assert (r.json()["user"], r.json()["password"]) == receiver.auth and r.json()["db"] == receiver.db
    wrong = "ZZZZ-ZZZZ" if code != "ZZZZ-ZZZZ" else "YYYY-YYYY"
    for left in range(9, 0, -1):
        r = trade(wrong)
        assert r.status_code == 401 and r.json()["error"] == "unauthorized", r.text
        assert f"{left} more" in r.json()["reason"]
    r = trade(wrong)
    assert r.status_code == 403, r.text
    r = trade(code)
    assert r.status_code == 403 and "no longer works" in r.json()["reason"], r.text
    r = requests.get(f"{receiver.base}/{receiver.db}", auth=receiver.auth, verify=verify, timeout=10)
    assert r.status_code == 200, r.text
