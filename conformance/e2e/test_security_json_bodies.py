"""JSON bodies that cost many times their size (issue 29, item 4), each against a server of its own: any
authenticated user could send a 64 MiB `_bulk_docs` of `{}` (+1.1 GB) or three 64 MiB `_revs_diff` at once
(+3 GB), up to 512 MiB each and with no cap on how many at once. The parser now stops at its budget while it
parses (a few times the bytes read so far) and a server-wide budget bounds the bodies parsed at once.
Resident memory is read from /proc/<pid>/status (VmHWM, the peak).

    COUCHLITE_BIN=$(swift build --show-bin-path)/couchlite \\
        python3 -m pytest conformance/e2e/test_security_json_bodies.py -q -p no:cacheprovider -s
"""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest
import requests

from conftest import Server
from processes import process_fixture

ADMIN = ("admin", "pass")
MEMBER = ("mallory", "secret")
BODY_MIB = 64
RSS_BUDGET_MIB = 300  # extra peak resident memory the attack may cost, all bodies included


class JSONServer(Server):
    def __init__(self, binary: str, root: str, name: str):
        super().__init__(binary, name, root, ())
        self.base = f"http://127.0.0.1:{self.port}"
        self.admin = requests.Session()
        self.admin.auth = ADMIN
        self.start()

    def mib(self) -> float:
        return self.status_kib("VmHWM") / 1024


@pytest.fixture
def json_server(request):
    binary = os.environ["COUCHLITE_BIN"]
    yield from process_fixture(request, "json-e2e-", lambda root, index: JSONServer(binary, root, str(index)))


def member_database(s: JSONServer, name: str) -> None:
    """A database `mallory`, an ordinary user, may write to."""
    user = {"_id": f"org.couchdb.user:{MEMBER[0]}", "name": MEMBER[0], "password": MEMBER[1], "roles": [],
            "type": "user"}
    assert s.admin.put(f"{s.base}/_users/{user['_id']}", json=user).status_code in (201, 202)
    assert s.admin.put(f"{s.base}/{name}").status_code == 201
    security = {"admins": {"names": [], "roles": []}, "members": {"names": [MEMBER[0]], "roles": []}}
    assert s.admin.put(f"{s.base}/{name}/_security", json=security).status_code == 200


def post(s: JSONServer, path: str, body: bytes) -> tuple[int, dict]:
    """POSTs `body` as the member over a raw socket (no copy of 64 MiB in a client library)."""
    auth = requests.auth._basic_auth_str(*MEMBER)
    with socket.create_connection(("127.0.0.1", s.port)) as sock:
        sock.sendall((f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      f"Authorization: {auth}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode())
        try:
            sock.sendall(body)
        except OSError:
            pass  # the server answered and closed before reading it all
        sock.settimeout(120)
        data = b""
        while True:
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
    head, _, payload = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    return status, json.loads(payload) if payload.startswith((b"{", b"[")) else {}


def flood(prefix: bytes, item: bytes, suffix: bytes, mib: int = BODY_MIB) -> bytes:
    count = (mib * 1024 * 1024 - len(prefix) - len(suffix)) // (len(item) + 1)
    return prefix + b",".join([item] * count) + suffix


def test_64mib_bulk_docs_of_empty_documents_costs_less_than_300mb(json_server):
    s = json_server()
    member_database(s, "db")
    baseline = s.mib()
    status, reply = post(s, "/db/_bulk_docs", flood(b'{"docs":[', b"{}", b"]}"))
    peak = s.mib()
    print(f"\n64 MiB _bulk_docs of {{}}: {status} {reply}; VmHWM {baseline:.1f} MiB before, {peak:.1f} MiB after")
    assert status == 413 and reply["error"] == "too_large", (status, reply)
    assert peak - baseline < RSS_BUDGET_MIB, f"peak RSS rose from {baseline:.1f} to {peak:.1f} MiB"
    # The server still takes an ordinary big `_bulk_docs`: PouchDB sends photos inline, tens of MB.
    photo = "iVBORw0KGgo" * (3 * 1024 * 1024)
    doc = {"_id": "photo", "_attachments": {"p.png": {"content_type": "image/png", "data": photo[:32 << 20]}}}
    status, reply = post(s, "/db/_bulk_docs", json.dumps({"docs": [doc, {"_id": "small", "n": 1}]}).encode())
    assert status == 201, (status, reply)


def test_three_parallel_64mib_revs_diff_cost_less_than_300mb(json_server):
    s = json_server()
    member_database(s, "db")
    body = flood(b'{"doc":[', b'"1-a"', b"]}")
    baseline = s.mib()
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(post(s, "/db/_revs_diff", body))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    peak = s.mib()
    print(f"\n3 × 64 MiB _revs_diff: {[r[0] for r in results]}; VmHWM {baseline:.1f} MiB before, {peak:.1f} MiB after")
    assert len(results) == 3
    for status, reply in results:
        assert (status, reply.get("error")) in ((413, "too_large"), (503, "service_unavailable")), (status, reply)
    assert peak - baseline < RSS_BUDGET_MIB, f"peak RSS rose from {baseline:.1f} to {peak:.1f} MiB"
    # An ordinary `_revs_diff` still answers.
    r = requests.post(f"{s.base}/db/_revs_diff", auth=MEMBER, json={"doc": ["1-" + "a" * 32]})
    assert r.status_code == 200 and r.json() == {"doc": {"missing": ["1-" + "a" * 32]}}, r.text
