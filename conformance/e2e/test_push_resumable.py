"""`couchlite push` to a couchlite receiver sends big files through the gallery's resumable uploads (negotiated:
the receiver's `GET /` announces `vendor.resumable_uploads`), so a video cut off mid-file continues from the byte
the receiver has, not from zero; the relay in between counts the bytes that went through. The photo is then the
outbox's very revision on the receiver, and the replication that follows sends nothing more for it."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import threading
import urllib.parse

import requests

from receive_support import MAGIC
from test_push_command import SlowLink

# COUCHLITE_RESUME_BYTES=1073741827 runs the same test on a 1 GiB video, by hand (BENCHMARKS.md has the figures).
SIZE = int(os.environ.get("COUCHLITE_RESUME_BYTES", 24 * 1024 * 1024 + 3))


class CuttingLink(SlowLink):
    """A TCP relay (test_push_command's, at full speed) that counts the bytes sent towards the peer on
    connections carrying a resumable append (`PUT /_photos/api/…`) and drops that connection, once, after
    `cut_after` of them: closed, not only shut down, so the sender's writes fail at once, as when a link drops."""

    def __init__(self, port: int, cut_after: int):
        self.cut_after = cut_after
        self.append_bytes = 0
        self.cut_done = False
        self.lock = threading.Lock()
        super().__init__(port, rate=None)

    def _pipe(self, source, sink, limited):
        appending = False
        try:
            while chunk := source.recv(65536):
                if limited:
                    appending = appending or b"PUT /_photos/api/" in chunk
                    if appending and self._count(len(chunk)):
                        return
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass

    def _count(self, n: int) -> bool:
        """Counts `n` more bytes of appends; whether the connection is to be cut now."""
        with self.lock:
            self.append_bytes += n
            cut = not self.cut_done and self.append_bytes >= self.cut_after
            self.cut_done = self.cut_done or cut
            return cut


def test_push_of_a_video_cut_mid_file_resumes_where_the_receiver_stopped(servers, tmp_path):
    peer = servers("peer")
    assert requests.get(peer.url + "/", timeout=10).json()["vendor"]["resumable_uploads"] == 1
    folder = tmp_path / "photos"
    folder.mkdir()
    rng, rest = random.Random(1), SIZE - len(MAGIC["mp4"])
    video = MAGIC["mp4"] + b"".join(rng.randbytes(min(1 << 24, rest - at)) for at in range(0, rest, 1 << 24))
    (folder / "long clip.mp4").write_bytes(video)
    small = MAGIC["jpg"] + random.Random(2).randbytes(100_000)
    (folder / "small.jpg").write_bytes(small)
    link = CuttingLink(peer.port, cut_after=SIZE * 6 // 10)
    target = f"http://admin:pass@127.0.0.1:{link.url_port}/drop"
    try:
        out = subprocess.run([os.environ["COUCHLITE_BIN"], "push", str(folder), target, "--data-dir",
                              str(tmp_path / "sender")], capture_output=True, timeout=300 + SIZE // 2**22)
    finally:
        link.close()
    err = out.stderr.decode()
    assert out.returncode == 0, err
    assert link.cut_done
    # It went on from the middle: the appends carried the file once and a bit, never twice.
    assert "resumes at byte" in err, err
    resumed_at = int(err.split("resumes at byte ")[1].split()[0])
    assert SIZE * 4 // 10 < resumed_at < SIZE, err
    assert link.append_bytes < SIZE * 13 // 10, (link.append_bytes, SIZE)
    cut_at = link.cut_after
    print(f"\nresume: {SIZE} bytes, cut after {cut_at} appended, resumed at {resumed_at} "
          f"(lost {cut_at - resumed_at} bytes in flight), {link.append_bytes} bytes of appends in all")
    rows = requests.get(f"{peer.url}/drop/_all_docs?include_docs=true", timeout=10).json()["rows"]
    docs = {row["doc"]["name"]: row["doc"] for row in rows}
    assert set(docs) == {"long clip.mp4", "small.jpg"}
    clip = docs["long clip.mp4"]
    assert clip["_rev"].startswith("1-") and clip["type"] == "photo" and clip["size"] == SIZE
    got = requests.get(f"{peer.url}/drop/{clip['_id']}/{urllib.parse.quote('long clip.mp4')}", timeout=600)
    assert got.content == video
    # Pushing again finds everything there.
    again = subprocess.run([os.environ["COUCHLITE_BIN"], "push", str(folder), f"{peer.url}/drop", "--data-dir",
                            str(tmp_path / "sender")], capture_output=True, timeout=120)
    assert again.returncode == 0, again.stderr.decode()
    assert "0/0 photos" in again.stderr.decode(), again.stderr.decode()
