"""Hostile input on the HTTPS port: random bytes, a ClientHello cut short, plain HTTP, a stalled handshake,
and 500 handshakes opened and never finished. Each ends in a clean close (or a 400 where HTTP can still be
spoken), the server keeps answering meanwhile, and its threads and memory stay bounded."""

from __future__ import annotations

import os
import random
import shutil
import socket
import tempfile
import time

import pytest

from tls_support import TLSServer, client_hello, closed_within

HEADER_TIMEOUT_S = 3


@pytest.fixture
def server(request):
    root = tempfile.mkdtemp(prefix="couchlite-tls-hostile-")
    s = TLSServer(os.environ["COUCHLITE_BIN"], root, "--tls", "auto", "--header-timeout", str(HEADER_TIMEOUT_S))
    s.start()
    yield s
    s.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(s.stdout, s.log_text()[-4000:])
    shutil.rmtree(root, ignore_errors=True)


def connect(server: TLSServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.https_port), timeout=5)


@pytest.mark.parametrize("first", [b"", b"\x16"], ids=["garbage", "garbage-after-a-handshake-byte"])
def test_random_bytes_are_closed(server, first):
    rng = random.Random(7)
    for _ in range(5):
        with connect(server) as s:
            s.sendall(first + bytes(rng.randrange(256) for _ in range(4096)))
            assert closed_within(s, HEADER_TIMEOUT_S + 2)
    assert server.get("/_up")[0] == 200


def test_client_hello_cut_short_is_closed(server):
    hello = client_hello()
    for cut in [1, 5, 20, len(hello) // 2, len(hello) - 1]:
        with connect(server) as s:
            s.sendall(hello[:cut])
            s.shutdown(socket.SHUT_WR)  # the rest never comes
            started = time.monotonic()
            assert closed_within(s, HEADER_TIMEOUT_S + 2), cut
            assert time.monotonic() - started < 1, f"an EOF mid-hello is seen at once (cut {cut})"
    assert server.get("/_up")[0] == 200


def test_stalled_handshake_is_dropped_at_the_header_timeout(server):
    with connect(server) as s:
        s.sendall(client_hello()[:40])
        started = time.monotonic()
        assert closed_within(s, HEADER_TIMEOUT_S + 3)
        assert HEADER_TIMEOUT_S - 0.5 <= time.monotonic() - started <= HEADER_TIMEOUT_S + 2


def test_plain_http_to_the_tls_port_gets_a_400_and_a_close(server):
    with connect(server) as s:
        s.sendall(b"GET /_up HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        s.settimeout(5)
        while chunk := s.recv(4096):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"Connection: close" in head
    assert b'"error":"bad_request"' in body and b"HTTPS" in body
    assert server.get("/_up")[0] == 200


def test_500_unfinished_handshakes_leave_the_server_responsive_and_bounded(server):
    hello = client_hello()
    for _ in range(20):  # warm up: threads, OpenSSL's tables, malloc arenas
        assert server.get("/_up")[0] == 200
    rss_before, threads_before = server.rss_bytes(), server.threads()
    held = []
    try:
        for index in range(500):
            s = connect(server)
            # Half send a whole ClientHello and never read the answer; half stop inside it.
            s.sendall(hello if index % 2 == 0 else hello[:60])
            held.append(s)
        time.sleep(0.5)
        started = time.monotonic()
        status, body = server.get("/_up")
        assert status == 200 and b'"ok"' in body
        assert time.monotonic() - started < 2, "a normal HTTPS request waits behind the stalled handshakes"
        growth = server.rss_bytes() - rss_before
        print(f"500 stalled handshakes: RSS +{growth / 2**20:.1f} MiB, {server.threads() - threads_before} threads,"
              f" an HTTPS request meanwhile took {time.monotonic() - started:.3f} s")
        assert server.threads() >= threads_before + 400, "the handshakes should each hold a thread meanwhile"
        assert growth < 96 * 1024 * 1024, f"RSS grew {growth / 2**20:.1f} MiB for 500 stalled handshakes"
        # The header timeout frees them all.
        deadline = time.monotonic() + HEADER_TIMEOUT_S + 10
        while server.threads() > threads_before + 5:
            assert time.monotonic() < deadline, f"{server.threads()} threads left of {threads_before}"
            time.sleep(0.2)
    finally:
        for s in held:
            s.close()
    assert server.get("/_up")[0] == 200
