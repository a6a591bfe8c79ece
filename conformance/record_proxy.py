"""A transparent HTTP/1.1 proxy that records every exchange, whole, in the transcript format.

    python3 conformance/record_proxy.py LISTEN_PORT UPSTREAM_HOST:PORT OUT.jsonl

Each request is forwarded byte for byte (keep-alive, chunked bodies, `100 Continue`) and written as one JSON
line once its answer is complete (see transcripts/README.md for the format): bodies in full, as `text` when they
are UTF-8 and not multipart, else `base64`; the `Authorization` header is kept out of the file. The CBL
transcripts were recorded with it (record_cbl.py runs it in-process).
"""

import base64
import json
import socket
import sys
import threading
import time

SKIPPED_HEADERS = {"authorization", "cookie"}


def read_headers(f):
    start = f.readline(65537)
    if not start:
        return None, None
    headers = []
    while True:
        line = f.readline(65537)
        if line in (b"\r\n", b"\n", b""):
            break
        k, _, v = line.decode("latin-1").partition(":")
        headers.append((k.strip(), v.strip()))
    return start.decode("latin-1").rstrip("\r\n"), headers


def hget(headers, name):
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def read_body(f, headers, is_response=False, status=None, method=None):
    """(raw bytes to forward, decoded body)."""
    if is_response and (method == "HEAD" or status in (204, 304) or 100 <= status < 200):
        return b"", b""
    te = hget(headers, "transfer-encoding")
    if te and "chunked" in te.lower():
        raw, body = b"", b""
        while True:
            line = f.readline()
            raw += line
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while True:
                    t = f.readline()
                    raw += t
                    if t in (b"\r\n", b"\n", b""):
                        break
                break
            chunk = f.read(size)
            body += chunk
            raw += chunk + f.readline()
        return raw, body
    cl = hget(headers, "content-length")
    if cl is not None:
        b = f.read(int(cl))
        return b, b
    if is_response:
        b = f.read()
        return b, b
    return b"", b""


def encode_body(body, content_type):
    if not body:
        return None
    if "multipart" not in (content_type or "").lower():
        try:
            return {"text": body.decode("utf-8")}
        except UnicodeDecodeError:
            pass
    return {"base64": base64.b64encode(body).decode()}


class Recorder:
    def __init__(self, listen_port, upstream, out_path):
        self.upstream = upstream
        self.out = open(out_path, "a", buffering=1, encoding="utf-8")
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", listen_port))
        self.sock.listen(64)

    def serve_forever(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def serve(self, conn):
        up = socket.create_connection(self.upstream)
        try:
            cf, uf = conn.makefile("rb"), up.makefile("rb")
            while True:
                start, headers = read_headers(cf)
                if start is None:
                    break
                method, path, _ = start.split(" ", 2)
                t0 = time.time()
                head = (start + "\r\n" + "".join("%s: %s\r\n" % kv for kv in headers) + "\r\n").encode("latin-1")
                if (hget(headers, "expect") or "").lower() == "100-continue":
                    up.sendall(head)
                    rstart, rheaders = read_headers(uf)
                    status = int(rstart.split(" ")[1])
                    conn.sendall((rstart + "\r\n" + "".join("%s: %s\r\n" % kv for kv in rheaders) + "\r\n")
                                 .encode("latin-1"))
                    raw, body = read_body(cf, headers) if status == 100 else (b"", b"")
                    up.sendall(raw)
                    if status == 100:
                        rstart, rheaders = read_headers(uf)
                else:
                    raw, body = read_body(cf, headers)
                    up.sendall(head + raw)
                    rstart, rheaders = read_headers(uf)
                status = int(rstart.split(" ")[1])
                while 100 <= status < 200 and status != 101:
                    rstart, rheaders = read_headers(uf)
                    status = int(rstart.split(" ")[1])
                rraw, rbody = read_body(uf, rheaders, True, status, method)
                conn.sendall((rstart + "\r\n" + "".join("%s: %s\r\n" % kv for kv in rheaders) + "\r\n")
                             .encode("latin-1") + rraw)
                record = {
                    "t": round(t0, 3), "ms": round((time.time() - t0) * 1000, 1), "method": method, "path": path,
                    "req_headers": {k: v for k, v in headers if k.lower() not in SKIPPED_HEADERS},
                    "req_body": encode_body(body, hget(headers, "content-type")),
                    "status": status,
                    "resp_headers": {k: v for k, v in rheaders if k.lower() != "set-cookie"},
                    "resp_body": encode_body(rbody, hget(rheaders, "content-type")),
                }
                with self.lock:
                    self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
                if (hget(headers, "connection") or "").lower() == "close":
                    break
        except (OSError, ValueError):
            pass
        finally:
            conn.close()
            up.close()


if __name__ == "__main__":
    host, port = sys.argv[2].split(":")
    Recorder(int(sys.argv[1]), (host, int(port)), sys.argv[3]).serve_forever()
