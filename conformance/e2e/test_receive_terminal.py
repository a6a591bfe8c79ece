"""`couchlite receive` on a real terminal (a pseudo-terminal): the QR code is drawn black on bright white
with ANSI colours, and a live progress line is rewritten in place as photos arrive."""

from __future__ import annotations

import os
import pty
import random
import re
import select
import signal
import subprocess
import time
import urllib.parse

import requests

from receive_support import inline_doc, photo
from test_receive_e2e import terminal_rows, write_png, zbar

READ_TIMEOUT_S = 20


def read_until(fd: int, buffer: bytearray, needle: bytes, timeout: float = READ_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while needle not in buffer:
        left = deadline - time.monotonic()
        assert left > 0, f"{needle!r} not seen; got {bytes(buffer[-2000:])!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            assert chunk, f"terminal closed before {needle!r}; got {bytes(buffer[-2000:])!r}"
            buffer += chunk


def test_terminal_gets_a_coloured_qr_code_and_a_progress_line(tmp_path):
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [os.environ["COUCHLITE_BIN"], "receive", "--port", "0", "--data-dir", str(tmp_path / "data"),
         "--out", str(tmp_path / "out"), "--admin", "admin:pass"],
        stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.DEVNULL, env=env)
    os.close(slave)
    buffer = bytearray()
    try:
        read_until(master, buffer, b"Press Ctrl-C")
        text = buffer.decode().replace("\r\n", "\n")
        phone = re.search(r"^  (http://\S+)$", text, re.M).group(1)
        url = re.search(r"^  (http://drop-\S+)$", text, re.M).group(1)
        qr = [m.group(1) for m in re.finditer(r"^\x1b\[30;107m(.*)\x1b\[0m$", text, re.M)]
        assert len(qr) >= 12, "the code is not drawn in black on bright white"
        write_png(str(tmp_path / "tty.png"), terminal_rows(qr))
        assert zbar(str(tmp_path / "tty.png")) == phone and "/_photos/#signin=" in phone

        parts = urllib.parse.urlsplit(url)
        base = f"http://{parts.hostname}:{parts.port}"
        rng = random.Random(8)
        for n in (1, 2):
            doc = inline_doc(f"tty{n}", {f"tty {n}.jpg": ("image/jpeg", photo("jpg", 4_000, rng))})
            r = requests.post(f"{base}/{parts.path.strip('/')}/_bulk_docs", auth=(parts.username, parts.password),
                              json={"docs": [doc], "new_edits": False})
            assert r.status_code == 201
            read_until(master, buffer, f"received {n} photo".encode())
        tail = bytes(buffer).decode()
        assert "\r\x1b[Kreceived 1 photo, 4.0 kB: tty 1.jpg" in tail
        assert re.search(r"\r\x1b\[Kreceived 2 photos, 8\.0 kB, [0-9.]+ [kMG]?B/s: tty 2\.jpg", tail)
        assert "saved tty" not in tail, "plain log lines are for non-terminals"
        proc.send_signal(signal.SIGINT)
        read_until(master, buffer, b"Saved 2 photos")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        os.close(master)
    assert proc.returncode == 0
