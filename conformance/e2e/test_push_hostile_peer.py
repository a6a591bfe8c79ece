"""`couchlite push` against a hostile server (issue 29, item 5): the URL comes from a QR code, so the
server may answer anything. Each test plays one attack from a raw-socket server and checks that push
ends with a clear error naming the server, never claims the photos are on it, and stays within a
bounded peak RSS (ru_maxrss from wait4, the VmHWM of /proc/PID/status at exit).

Before the fix an endless chunked `_revs_diff` took push to 1.09 GB, 63 MiB of `[[],[],…]` to 1.2 GB
(and push then printed "all 2 photos are on"), and a server dripping a byte now and then held it for ever.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import threading
import time

from conftest import free_port

PEAK_LIMIT_KIB = 300 * 1024


def make_photos(root) -> None:
    root.mkdir()
    for i in range(2):
        # A JPEG's first bytes: push sends only what its bytes show to be a photo or video.
        (root / f"p{i}.jpg").write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + random.Random(i).randbytes(50_000))


class HostileServer:
    """Answers the requests push makes; `attack(conn, count)` answers `POST …/_revs_diff` number `count`
    (from 1): it returns "close" (answered; close the connection), "answered" (keep it) or None (answer
    honestly: everything asked about is missing)."""

    def __init__(self, attack, routes=None):
        self.attack = attack
        # routes(method, path) -> (status, body) for requests answered before the honest ones, or None.
        self.routes = routes
        self.port = free_port()
        self.revs_diffs = 0
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.listener.settimeout(0.5)
        self.stopped = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/drop"

    def serve(self) -> None:
        while not self.stopped:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self.connection, args=(conn,), daemon=True).start()

    def connection(self, conn: socket.socket) -> None:
        buffer = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines[1:])}
                length = int(headers.get("content-length", "0"))
                while len(buffer) < length:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                body, buffer = buffer[:length], buffer[length:]
                path = target.split("?")[0]
                routed = self.routes(method, path) if self.routes else None
                if routed is not None:
                    self.reply(conn, *routed)
                elif method == "POST" and path.endswith("/_revs_diff"):
                    self.revs_diffs += 1
                    outcome = self.attack(conn, self.revs_diffs)
                    if outcome == "close":
                        return
                    if outcome == "answered":
                        continue
                    asked = json.loads(body)
                    self.reply(conn, 200, {k: {"missing": v} for k, v in asked.items()})
                elif method == "GET" and path.rstrip("/") == "/drop":
                    self.reply(conn, 200, {"db_name": "drop", "update_seq": "0", "instance_start_time": "0"})
                elif "/_local/" in path and method == "GET":
                    self.reply(conn, 404, {"error": "not_found", "reason": "missing"})
                elif "/_local/" in path or path.endswith("/_ensure_full_commit"):
                    self.reply(conn, 201, {"ok": True, "id": "x", "rev": "0-1"})
                elif method == "POST" and path.endswith("/_bulk_docs"):
                    self.reply(conn, 201, [])
                else:
                    self.reply(conn, 404, {"error": "not_found", "reason": "missing"})
        except OSError:
            return
        finally:
            conn.close()

    @staticmethod
    def reply(conn: socket.socket, status: int, value) -> None:
        body = json.dumps(value).encode()
        conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                     .encode() + body)

    def close(self) -> None:
        self.stopped = True
        self.listener.close()


def run_push(folder, url: str, data_dir: str, timeout: float, env_extra: dict | None = None):
    """Runs push; returns (returncode or None when it had to be killed, stderr, peak RSS KiB, seconds)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    start = time.monotonic()
    proc = subprocess.Popen([os.environ["COUCHLITE_BIN"], "push", str(folder), url, "--data-dir", data_dir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err_chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)
    reader.start()
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    killer.cancel()
    elapsed = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join(5)
    code = None if proc.returncode == -9 else proc.returncode
    return code, b"".join(err_chunks).decode(errors="replace"), usage.ru_maxrss, elapsed


def attack_and_push(tmp_path, attack, timeout: float = 60, env_extra: dict | None = None):
    folder = tmp_path / "photos"
    make_photos(folder)
    server = HostileServer(attack)
    try:
        return run_push(folder, server.url, str(tmp_path / "sender"), timeout, env_extra)
    finally:
        server.close()


def assert_no_claim(err: str) -> None:
    assert "photos are on" not in err, err


def test_an_endless_chunked_revs_diff_ends_push_with_an_error_and_bounded_memory(tmp_path):
    def endless(conn, count):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece = b'{"a":[' + b'"1-abc",' * 8000
        chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        try:
            while True:
                conn.sendall(chunk)
        except OSError:
            return "close"

    code, err, peak, _ = attack_and_push(tmp_path, endless)
    print(f"endless chunked _revs_diff: exit {code}, peak RSS {peak // 1024} MiB")
    assert code == 1, err
    assert "127.0.0.1" in err and "_revs_diff" in err and "larger than 16 MiB" in err, err
    assert_no_claim(err)
    assert peak < PEAK_LIMIT_KIB, f"peak RSS {peak} KiB"


def test_63_mib_of_empty_arrays_as_revs_diff_ends_push_with_an_error_and_bounded_memory(tmp_path):
    def flood(conn, count):
        unit = b"[]," * (1 << 20)
        total = 63 * len(unit) + 3
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {total}\r\n\r\n".encode())
        try:
            conn.sendall(b"[")
            for _ in range(63):
                conn.sendall(unit)
            conn.sendall(b"[]]")
        except OSError:
            pass
        return "close"

    code, err, peak, _ = attack_and_push(tmp_path, flood)
    print(f"63 MiB of []: exit {code}, peak RSS {peak // 1024} MiB")
    assert code == 1, err
    assert "127.0.0.1" in err and "_revs_diff" in err, err
    assert_no_claim(err)
    assert peak < PEAK_LIMIT_KIB, f"peak RSS {peak} KiB"


def test_a_revs_diff_answering_an_array_is_an_error_naming_the_server_not_success(tmp_path):
    def array(conn, count):
        HostileServer.reply(conn, 200, [])
        return "close"

    code, err, _, _ = attack_and_push(tmp_path, array)
    assert code == 1, err
    assert "the server at http://127.0.0.1:" in err and "answered _revs_diff with an array, not an object" in err, err
    assert_no_claim(err)


def test_a_later_revs_diff_answering_an_array_does_not_make_push_claim_the_photos_are_on_the_server(tmp_path):
    # The first _revs_diff (what the peer lacks) is honest; the replication's own answers `[]`, which read as
    # "nothing missing" let push print "all 2 photos are on" with nothing sent.
    def later(conn, count):
        if count == 1:
            return None
        HostileServer.reply(conn, 200, [])
        return "close"

    code, err, _, _ = attack_and_push(tmp_path, later)
    assert code == 1, err
    assert "answered _revs_diff with an array, not an object" in err, err
    assert_no_claim(err)


def test_a_server_that_says_nothing_is_missing_then_lists_the_photos_does_not_get_a_success_claim(tmp_path):
    # 1: honest (all missing); 2: the replication's, `{}` (nothing missing, so nothing is sent); 3: the
    # confirmation afterwards, honest again: the photos are not there, and push must not claim they are.
    def liar(conn, count):
        if count != 2:
            return None
        HostileServer.reply(conn, 200, {})
        return "answered"

    code, err, _, _ = attack_and_push(tmp_path, liar)
    assert code == 1, err
    assert "does not confirm 2 of the 2 photos" in err, err
    assert_no_claim(err)


def drip(head_first: bool):
    def attack(conn, count):
        body = b'{"x":' + b" " * 100_000 + b"}"
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        data = body if head_first else head + body
        try:
            if head_first:
                conn.sendall(head)
            for byte in data:
                conn.sendall(bytes([byte]))
                time.sleep(0.5)
        except OSError:
            pass
        return "close"
    return attack


def test_a_server_dripping_its_reply_head_a_byte_at_a_time_ends_push_with_a_clear_error(tmp_path):
    code, err, _, elapsed = attack_and_push(tmp_path, drip(head_first=False), timeout=60,
                                            env_extra={"COUCHLITE_PEER_TIMEOUT": "2"})
    assert code == 69, (code, err)
    assert "127.0.0.1" in err and "is too slow" in err and "_revs_diff" in err, err
    assert elapsed < 30, elapsed
    assert_no_claim(err)


def test_a_server_dripping_its_reply_body_a_byte_at_a_time_ends_push_with_a_clear_error(tmp_path):
    code, err, _, elapsed = attack_and_push(tmp_path, drip(head_first=True), timeout=60,
                                            env_extra={"COUCHLITE_PEER_TIMEOUT": "2"})
    assert code == 69, (code, err)
    assert "127.0.0.1" in err and "is too slow" in err and "_revs_diff" in err, err
    assert elapsed < 30, elapsed
    assert_no_claim(err)


def test_a_receiver_answering_an_upload_offset_past_the_file_ends_push_with_an_error_not_a_trap(tmp_path):
    # A couchlite-like receiver (resumable uploads announced) answers the upload's offset as the largest integer:
    # the next piece's end was offset + 64 MiB, an overflow that trapped. Now it is refused, naming the offset.
    def routes(method, path):
        if method == "GET" and path == "/":
            return 200, {"couchdb": "Welcome", "vendor": {"name": "couchlite", "resumable_uploads": 1}}
        if method == "PUT" and path == "/drop":
            return 412, {"error": "file_exists", "reason": "exists"}
        if method == "POST" and path.endswith("/uploads"):
            return 201, {"id": "u1", "offset": 9223372036854775807}
        return None

    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "big.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + random.Random(7).randbytes(5 * 1024 * 1024))
    server = HostileServer(lambda conn, count: None, routes)
    try:
        code, err, _, _ = run_push(folder, server.url, str(tmp_path / "sender"), timeout=60)
    finally:
        server.close()
    assert code == 1, (code, err)  # an error exit, not a signal (a trap is SIGILL/SIGTRAP)
    assert "upload offset (9223372036854775807) outside big.mp4" in err, err
