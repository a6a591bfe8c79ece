"""couchlite's replicator over HTTPS (issue 15, the client side): `couchlite replicate`, `couchlite push`,
`POST /_replicate` and `_replicator` documents reach `https://` peers started with `--tls auto`, verified
by a pin (`--pin`, a URL's `#sha256=` fragment as `couchlite receive --qr-pin` puts in its QR URL, or
`couchlite_pin` in a JSON endpoint), by `--cacert` or not at all with `--insecure` (which warns). A wrong
pin, an untrusted self-signed peer and a certificate for another name are refused with a message naming
what did not match, before a single request reaches the peer."""

from __future__ import annotations

import os
import random
import re
import subprocess
import time
import urllib.parse

import pytest
import requests

from receive_support import check_folder
from test_push_command import make_folder
from test_receive_e2e import receivers  # noqa: F401 (a fixture)
from test_replication_e2e import Client, assert_identical, seed_source
from processes import process_fixture
from tls_support import TLSServer

TIMEOUT_S = 120
ADMIN = "admin:pass"
TLS = ("--tls", "auto", "--tls-port", "0", "--pbkdf2-iterations", "1000")


@pytest.fixture
def tls_servers(request):
    """`tls_servers(name)` starts a `couchlite --tls auto` (HTTP and HTTPS on free ports, requests logged,
    cheap password hashing); all are stopped afterwards."""
    binary = os.environ["COUCHLITE_BIN"]

    def start(root: str, index: int, name: str) -> TLSServer:
        return TLSServer(binary, root, "--tls", "auto", "--log-level", "info", name=name).start()

    yield from process_fixture(request, "couchlite-tls-client-", start)


@pytest.fixture
def tls_server(tls_servers):
    """The HTTPS peer."""
    return tls_servers("peer")


@pytest.fixture
def plain(tls_servers):
    """The other side, reached over plain HTTP (its `url`), running `_replicate` and `_replicator`."""
    server = tls_servers("plain")
    server.url = http_admin(server)
    return server


def https_admin(server: TLSServer, host: str = "127.0.0.1") -> str:
    return f"https://{ADMIN}@{host}:{server.https_port}"


def http_admin(server: TLSServer) -> str:
    return f"http://{ADMIN}@127.0.0.1:{server.http_port}"


def plain_hex(colons: str) -> str:
    return colons.replace(":", "").lower()


def other_pin(colons: str) -> str:
    """A well-formed fingerprint that is not this one (its first byte changed)."""
    first = "00" if not colons.startswith("00") else "01"
    return first + colons[2:]


def run(*args: str, data_dir: str) -> subprocess.CompletedProcess:
    out = subprocess.run([os.environ["COUCHLITE_BIN"], *args, "--data-dir", data_dir],
                         capture_output=True, timeout=TIMEOUT_S)
    out.err = out.stderr.decode()
    return out


def requested_paths(server: TLSServer) -> list[str]:
    """The paths of every request the server logged."""
    return re.findall(r"request client=\S+ method=\S+ path=(\S+)", server.log_text())


def verified_client(server: TLSServer, db: str) -> Client:
    client = Client(https_admin(server), db)
    client.ep.session.verify = server.cert_path
    client.ep.session.trust_env = False  # else REQUESTS_CA_BUNDLE would replace `verify`
    return client


# --- both directions ---------------------------------------------------------------------

def test_replicate_pushes_and_pulls_the_reference_mix_over_https_pinned(plain, tls_server, tmp_path):
    src = Client(plain.url, "photos")
    src.create()
    atts = seed_source(src)

    # Push from the plain server's `_replicate` into the HTTPS one: couchlite_pin in the endpoint object.
    resp = requests.post(f"{plain.url}/_replicate", timeout=TIMEOUT_S, json={
        "source": "photos", "create_target": True,
        "target": {"url": f"{https_admin(tls_server)}/pushed", "couchlite_pin": tls_server.fingerprint}})
    assert resp.status_code == 200, resp.text
    assert_identical(src, verified_client(tls_server, "pushed"), atts)

    # Pull with `couchlite replicate`: the pin in the URL's fragment, lowercase hex as a QR URL has it.
    source = f"{https_admin(tls_server)}/pushed#sha256={plain_hex(tls_server.fingerprint)}"
    out = run("replicate", source, f"{plain.url}/pulled", "--create-target", data_dir=str(tmp_path / "d"))
    assert out.returncode == 0, out.err
    assert_identical(src, Client(plain.url, "pulled"), atts)
    paths = requested_paths(tls_server)
    assert any(p.startswith("/pushed/_changes") for p in paths), paths  # the pull's requests are logged…
    assert not any("#" in p or "sha256" in p for p in paths), "…and the fragment never reaches the peer"
    assert "warning" not in out.err


def test_push_and_pull_a_tls_receiver_pinned_by_its_qr_url(receivers, plain, tmp_path):
    receiver = receivers(*TLS, "--qr-pin", "--qr", "app", "--log-level", "info")
    started = time.time()
    info = receiver.start()
    qr = urllib.parse.urlsplit(info["qr_url"])
    assert qr.scheme == "https" and qr.fragment.startswith("sha256="), info

    folder = tmp_path / "photos"
    files = make_folder(str(folder), names=["beach.jpg", "sub/ski.png"], size=120_000)
    out = run("push", str(folder), info["qr_url"], data_dir=str(tmp_path / "sender"))
    assert out.returncode == 0, out.err
    assert "all 2 photos are on https://" in out.err and "warning" not in out.err, out.err
    check_folder(receiver.out, {os.path.basename(n): (d, None) for n, d in files.items()},
                 started - 3600 * 24 * 365, time.time() + 5)

    # The other direction with the same pin: the receiver's admin pulls the drop database back.
    host = qr.netloc.rpartition("@")[2]
    back = f"https://{ADMIN}@{host}{qr.path}#{qr.fragment}"
    resp = requests.post(f"{plain.url}/_replicate", timeout=TIMEOUT_S,
                         json={"source": back, "target": "back", "create_target": True})
    assert resp.status_code == 200, resp.text
    rows = requests.get(f"{plain.url}/back/_all_docs?include_docs=true", timeout=10).json()["rows"]
    names = sorted(row["doc"]["name"] for row in rows)
    assert names == ["beach.jpg", "ski.png"], rows
    for row in rows:
        name = row["doc"]["name"]
        got = requests.get(f"{plain.url}/back/{row['id']}/{name}", timeout=10).content
        assert got == files["beach.jpg" if name == "beach.jpg" else "sub/ski.png"]


# --- refusals ----------------------------------------------------------------------------

def test_wrong_pin_is_refused_with_both_fingerprints_and_nothing_is_sent(receivers, tmp_path):
    receiver = receivers(*TLS, "--qr-pin", "--log-level", "info")
    info = receiver.start()
    wrong = other_pin(info["fingerprint_sha256"])
    url = info["url"] + "#sha256=" + wrong
    folder = tmp_path / "photos"
    make_folder(str(folder), names=["beach.jpg"], size=50_000)
    out = run("push", str(folder), url, data_dir=str(tmp_path / "sender"))
    assert out.returncode == 76, out.err
    assert f"its SHA-256 fingerprint {info['fingerprint_sha256']} does not match the pin {wrong}" in out.err
    # The same with --pin, colon-less and lower case.
    again = run("push", str(folder), info["url"], "--pin", plain_hex(wrong), data_dir=str(tmp_path / "sender"))
    assert again.returncode == 76 and "does not match the pin" in again.err, again.err
    time.sleep(0.3)
    before = re.findall(r"path=(\S+)", receiver.log_text())
    assert not any(p.startswith(f"/{info['db']}") for p in before), f"a request reached the receiver: {before}"
    admin = requests.get(f"{receiver.admin_url}/{info['db']}", timeout=10,
                         verify=os.path.join(receiver.data_dir, "tls-cert.pem"))
    assert admin.json()["doc_count"] == 0
    receiver.wait_for_log(f"path=/{info['db']}")  # requests are logged: the check above could fail
    assert os.listdir(receiver.out) == [] if os.path.isdir(receiver.out) else True


def test_untrusted_self_signed_peer_is_refused_without_pin_or_insecure(tls_server, tmp_path):
    data_dir = str(tmp_path / "d")
    local = run("replicate", "--help", data_dir=data_dir)
    assert local.returncode == 0
    out = run("replicate", f"{http_admin(tls_server)}/_users", f"{https_admin(tls_server)}/untrusted",
              "--create-target", data_dir=data_dir)
    assert out.returncode == 76, out.err
    assert "refused the certificate of 127.0.0.1" in out.err and "self-signed" in out.err, out.err
    assert "--pin" in out.err and "--cacert" in out.err, "the message says how to trust it"
    paths = requested_paths(tls_server)
    assert any(p.startswith("/_users") for p in paths), paths  # the source was read: requests are logged
    assert not any("untrusted" in p for p in paths)


def test_cacert_trusts_the_generated_certificate_by_address_and_name(tls_server, plain, tmp_path):
    src = Client(plain.url, "src")
    src.create()
    src.bulk([{"_id": f"d{i}", "i": i} for i in range(20)])
    for i, host in enumerate(["127.0.0.1", "localhost"]):
        out = run("replicate", f"{plain.url}/src", f"{https_admin(tls_server, host)}/ca{i}", "--create-target",
                  "--cacert", tls_server.cert_path, data_dir=str(tmp_path / "d"))
        assert out.returncode == 0, out.err
        assert verified_client(tls_server, f"ca{i}").info()["doc_count"] == 20


def test_insecure_works_and_warns(tls_server, plain, tmp_path):
    Client(plain.url, "src").create()
    Client(plain.url, "src").put({"_id": "one"})
    out = run("replicate", f"{plain.url}/src", f"{https_admin(tls_server)}/insecure", "--create-target",
              "--insecure", data_dir=str(tmp_path / "d"))
    assert out.returncode == 0, out.err
    assert re.search(r"warning: the certificate of 127\.0\.0\.1:\d+ is not verified", out.err), out.err
    assert verified_client(tls_server, "insecure").info()["doc_count"] == 1


def test_certificate_for_another_name_is_refused_naming_both(tmp_path, plain):
    key, cert = str(tmp_path / "key.pem"), str(tmp_path / "cert.pem")
    made = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                           "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=elsewhere.test",
                           "-addext", "subjectAltName=DNS:elsewhere.test"], capture_output=True, timeout=60)
    assert made.returncode == 0, made.stderr
    other = TLSServer(os.environ["COUCHLITE_BIN"], str(tmp_path), "--tls-cert", cert, "--tls-key", key,
                      "--log-level", "info", name="other")
    other.start()
    try:
        Client(plain.url, "src").create()
        out = run("replicate", f"{plain.url}/src", f"{https_admin(other)}/named", "--create-target",
                  "--cacert", cert, data_dir=str(tmp_path / "d"))
        assert out.returncode == 76, out.err
        assert "the certificate names elsewhere.test, not '127.0.0.1'" in out.err, out.err
        assert not any("named" in p for p in requested_paths(other))
    finally:
        other.stop()


def test_pin_options_on_plain_http_urls_are_usage_errors(tmp_path):
    pin = "AB" * 32
    for args in (["replicate", "http://h:1/a", "http://h:1/b", "--pin", pin],
                 ["replicate", "a", "http://h:1/b", "--insecure"],
                 ["push", str(tmp_path), "http://h:1/b", "--cacert", "/etc/hostname"],
                 ["push", str(tmp_path), f"http://h:1/b#sha256={pin}"],
                 ["replicate", "a", "https://h:1/b", "--pin", "AB:CD"],
                 ["replicate", "a", "https://h:1/b#sha256=abcd"],
                 ["replicate", "a", "https://h:1/b", "--cacert", str(tmp_path / "missing.pem")]):
        out = run(*args, data_dir=str(tmp_path / "d"))
        assert out.returncode == 64, (args, out.err)


# --- _replicate and _replicator ----------------------------------------------------------

def test_replicate_endpoint_fields_are_checked_and_a_wrong_pin_is_a_failed_replication(plain, tls_server):
    Client(plain.url, "src").create()
    target = f"{https_admin(tls_server)}/viaapi"

    def post(target_field):
        return requests.post(f"{plain.url}/_replicate", timeout=TIMEOUT_S,
                             json={"source": "src", "target": target_field, "create_target": True})

    for bad in ({"url": target, "couchlite_pin": "AB:CD"}, {"url": target, "couchlite_pin": 12},
                {"url": target, "couchlite_insecure": "yes"}, {"url": target, "couchlite_cacert": "/nonexistent"},
                {"url": f"{http_admin(tls_server)}/x", "couchlite_insecure": True}):
        r = post(bad)
        assert r.status_code == 400 and r.json()["error"] == "bad_request", (bad, r.text)
    r = post({"url": target, "couchlite_pin": other_pin(tls_server.fingerprint)})
    assert r.status_code == 500 and r.json()["error"] == "replication_failed", r.text
    assert "does not match the pin" in r.json()["reason"]
    r = post(target)
    assert r.status_code == 500 and "self-signed" in r.json()["reason"], r.text
    assert not any("viaapi" in p for p in requested_paths(tls_server))
    r = post({"url": target, "couchlite_cacert": tls_server.cert_path})
    assert r.status_code == 200, r.text
    r = post({"url": target, "couchlite_insecure": True})
    assert r.status_code == 200, r.text
    assert "is not verified (insecure)" in open(plain.log_path).read()


def wait_for_state(server, doc_id, timeout=30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = requests.get(f"{server.url}/_replicator/{doc_id}", timeout=5).json()
        if doc.get("_replication_state") in ("completed", "failed"):
            return doc
        time.sleep(0.05)
    raise AssertionError(f"{doc_id} has no final state")


def test_replicator_documents_reach_https_peers_by_pin(plain, tls_server):
    src = Client(plain.url, "src")
    src.create()
    src.bulk([{"_id": f"d{i}"} for i in range(5)])
    deadline = time.monotonic() + 15
    while requests.get(f"{plain.url}/_replicator", timeout=5).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    job = {"source": "src", "create_target": True,
           "target": f"{https_admin(tls_server)}/job#sha256={plain_hex(tls_server.fingerprint)}"}
    assert requests.put(f"{plain.url}/_replicator/pinned", json=job, timeout=5).status_code == 201
    doc = wait_for_state(plain, "pinned")
    assert doc["_replication_state"] == "completed", doc
    assert verified_client(tls_server, "job").info()["doc_count"] == 5

    wrong = {"source": "src", "target": {"url": f"{https_admin(tls_server)}/job2",
                                         "couchlite_pin": other_pin(tls_server.fingerprint)}}
    assert requests.put(f"{plain.url}/_replicator/wrong", json=wrong, timeout=5).status_code == 201
    doc = wait_for_state(plain, "wrong")
    assert doc["_replication_state"] == "failed" and "does not match the pin" in doc["_replication_state_reason"]


def test_replicator_member_cannot_make_the_server_read_a_cacert_file(plain, tls_server):
    """An attack: once `_replicator` lets a user write, `couchlite_cacert` must not make the server open a
    path of that user's choosing (probing which files exist, reading one it should not)."""
    a = plain
    deadline = time.monotonic() + 15
    while requests.get(f"{a.url}/_replicator", timeout=5).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert requests.put(f"{a.url}/_users/org.couchdb.user:mallory", timeout=5, json={
        "name": "mallory", "password": "m", "type": "user", "roles": []}).status_code == 201
    assert requests.put(f"{a.url}/_replicator/_security", timeout=5, json={
        "admins": {"names": [], "roles": []}, "members": {"names": ["mallory"], "roles": []}}).status_code == 200
    for doc_id, path in (("probe", tls_server.cert_path), ("missing", "/nonexistent/ca.pem")):
        doc = {"source": f"{http_admin(tls_server)}/_users", "target": {
            "url": f"{https_admin(tls_server)}/loot", "couchlite_cacert": path}}
        r = requests.put(f"http://mallory:m@127.0.0.1:{a.http_port}/_replicator/{doc_id}", json=doc, timeout=5)
        assert r.status_code == 201, r.text
        state = wait_for_state(a, doc_id)
        assert state["_replication_state"] == "failed", state
        reason = state["_replication_state_reason"]
        assert "only server" in reason and "admins" in reason and path not in reason, reason
    assert not any("loot" in p for p in requested_paths(tls_server))
