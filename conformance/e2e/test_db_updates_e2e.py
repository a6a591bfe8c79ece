"""_db_updates under a client that never reads: the feed writes through the bounded reply, so such a client
holds one blocked feed (until the write stalls out), never a growing buffer, and every event kept is one per
database and kind."""

import base64
import socket
import time

import requests

from conftest import ADMIN

READERS = 20
WRITES = 1500
DATABASES = 150
RSS_BUDGET_MIB = 40


def test_db_updates_client_that_never_reads(servers):
    a = servers("a")
    auth = base64.b64encode(f"{ADMIN[0]}:{ADMIN[1]}".encode()).decode()
    session = requests.Session()
    assert session.put(f"{a.url}/w", timeout=5).status_code == 201
    before = a.status_kib("VmRSS")
    sockets = []
    for _ in range(READERS):
        s = socket.create_connection(("127.0.0.1", a.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(f"GET /_db_updates?feed=continuous&since=0&heartbeat=50 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  f"Authorization: Basic {auth}\r\n\r\n".encode())
        sockets.append(s)
    try:
        for i in range(WRITES):
            assert session.put(f"{a.url}/w/d{i}", json={"i": i}, timeout=10).status_code == 201
        for i in range(DATABASES):
            assert session.put(f"{a.url}/many-{i}", timeout=10).status_code == 201
            assert session.delete(f"{a.url}/many-{i}", timeout=10).status_code == 200
        started = time.monotonic()
        r = session.get(f"{a.url}/_db_updates", params={"limit": "5"}, timeout=10)
        assert r.status_code == 200 and len(r.json()["results"]) == 5
        assert time.monotonic() - started < 2
        growth = (a.status_kib("VmRSS") - before) / 1024
        print(f"{READERS} readers that never read, {WRITES} writes, {DATABASES} databases: RSS +{growth:.1f} MiB")
        assert growth < RSS_BUDGET_MIB
        # One row per database and kind: `w` created and updated, each of the others created and deleted.
        rows = session.get(f"{a.url}/_db_updates", timeout=10).json()["results"]
        mine = [(row["type"], row["db_name"]) for row in rows if row["db_name"].startswith(("w", "many-"))]
        assert len(mine) == len(set(mine)) == 2 + 2 * DATABASES
    finally:
        for s in sockets:
            s.close()
