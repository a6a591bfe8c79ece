#!/usr/bin/env python3
"""Request latency for a client that writes with Nagle's algorithm on, as CouchDB's replicator does (issue 28).

CouchDB's replicator opens its connections with `socket_options` `[{keepalive, true}, {nodelay, false}]` and
streams `_bulk_docs` a document at a time, so a request goes out in pieces, each small piece held back until the
previous one is acknowledged. A server that delays its ACKs (Linux does on a request/response connection) stalls
every such request by the delayed-ACK timeout, ~40 ms. This client sends `POST /db/_revs_diff` (500 ids) and
`POST /db/_bulk_docs` (500 small documents, `new_edits=false`) that way over one keep-alive connection and prints
the median, min and max milliseconds of each.

    python3 bench/nagle_requests.py --url http://admin:pass@127.0.0.1:5984 --db cluster-nagle --rounds 30
"""

from __future__ import annotations

import argparse
import base64
import json
import socket
import statistics
import sys
import time
import urllib.parse

import requests


def send(sock: socket.socket, auth: str, path: str, pieces: list[bytes]) -> float:
    """One request written piece by piece; returns the milliseconds until the whole answer arrived."""
    body_length = sum(len(p) for p in pieces)
    head = (f"POST {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Basic {auth}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {body_length}\r\n\r\n").encode()
    started = time.monotonic()
    sock.sendall(head)
    for piece in pieces:
        sock.sendall(piece)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head_bytes, rest = data.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":")[1]) for line in head_bytes.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    while len(rest) < length:
        rest += sock.recv(65536)
    assert head_bytes.split(b" ")[1] in (b"200", b"201"), head_bytes[:100]
    return (time.monotonic() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="server URL with admin credentials")
    parser.add_argument("--db", default="cluster-nagle")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    url = urllib.parse.urlsplit(args.url)
    auth = base64.b64encode(f"{url.username}:{url.password}".encode()).decode()
    requests.delete(f"{args.url}/{args.db}")
    assert requests.put(f"{args.url}/{args.db}").status_code in (201, 202)
    sock = socket.create_connection((url.hostname, url.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)  # Nagle on, as {nodelay, false}
    rev_hash = "0123456789abcdef0123456789abcdef"
    times: dict[str, list[float]] = {"_revs_diff": [], "_bulk_docs": []}
    for n in range(args.rounds):
        ids = [f"r{n}-{i:05d}" for i in range(500)]
        pieces = [b"{"] + [json.dumps(i).encode() + b':["1-' + rev_hash.encode() + b'"]' + (b"," if k < 499 else b"}")
                           for k, i in enumerate(ids)]
        times["_revs_diff"].append(send(sock, auth, f"/{args.db}/_revs_diff", pieces))
        docs = [json.dumps({"_id": i, "_rev": f"1-{rev_hash}", "_revisions": {"start": 1, "ids": [rev_hash]},
                            "type": "note", "text": "x" * 180}).encode() for i in ids]
        pieces = [b'{"new_edits":false,"docs":['] + [d + (b"," if k < 499 else b"]}") for k, d in enumerate(docs)]
        times["_bulk_docs"].append(send(sock, auth, f"/{args.db}/_bulk_docs", pieces))
    requests.delete(f"{args.url}/{args.db}")
    for name, values in times.items():
        print(json.dumps({"request": name, "median_ms": round(statistics.median(values), 1),
                          "min_ms": round(min(values), 1), "max_ms": round(max(values), 1), "rounds": len(values)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
