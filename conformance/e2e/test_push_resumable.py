"""`couchlite push` to a couchlite receiver sends big files through the gallery's resumable uploads (negotiated:
the receiver's `GET /` announces `vendor.resumable_uploads`), so a video cut off mid-file continues from the byte
the receiver has, not from zero; the relay in between counts the bytes that went through. The photo is then the
outbox's very revision on the receiver, and the replication that follows sends nothing more for it."""

from __future__ import annotations

import os
import random
import subprocess
import urllib.parse

import requests

from receive_support import MAGIC
from tcp_link import AppendCut, Link

# COUCHLITE_RESUME_BYTES=1073741827 runs the same test on a 1 GiB video, by hand (BENCHMARKS.md has the figures).
SIZE = int(os.environ.get("COUCHLITE_RESUME_BYTES", 24 * 1024 * 1024 + 3))


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
    cut = AppendCut(after=SIZE * 6 // 10)
    link = Link(peer.port, cut=cut)
    target = f"http://admin:pass@127.0.0.1:{link.port}/drop"
    try:
        out = subprocess.run([os.environ["COUCHLITE_BIN"], "push", str(folder), target, "--data-dir",
                              str(tmp_path / "sender")], capture_output=True, timeout=300 + SIZE // 2**22)
    finally:
        link.close()
    err = out.stderr.decode()
    assert out.returncode == 0, err
    assert cut.done.is_set()
    # It went on from the middle: the appends carried the file once and a bit, never twice.
    assert "resumes at byte" in err, err
    resumed_at = int(err.split("resumes at byte ")[1].split()[0])
    assert SIZE * 4 // 10 < resumed_at < SIZE, err
    assert cut.appended < SIZE * 13 // 10, (cut.appended, SIZE)
    cut_at = cut.after
    print(f"\nresume: {SIZE} bytes, cut after {cut_at} appended, resumed at {resumed_at} "
          f"(lost {cut_at - resumed_at} bytes in flight), {cut.appended} bytes of appends in all")
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


def test_push_shows_bytes_during_a_big_file_and_ctrl_c_says_what_arrived(servers, tmp_path):
    # Issue 36, item 4: progress drawn while the one big file goes (bytes-weighted, a moving rate, an ETA that is
    # never absurd), and on Ctrl-C one line: what is on the peer, what of the file in flight it keeps, what to run.
    import re
    import signal
    import time

    peer = servers("peer")
    folder = tmp_path / "photos"
    folder.mkdir()
    rng, rest = random.Random(3), SIZE - len(MAGIC["mp4"])
    video = MAGIC["mp4"] + b"".join(rng.randbytes(min(1 << 24, rest - at)) for at in range(0, rest, 1 << 24))
    (folder / "long clip.mp4").write_bytes(video)
    link = Link(peer.port, rate=2_000_000)
    target = f"http://admin:pass@127.0.0.1:{link.port}/drop"
    try:
        proc = subprocess.Popen([os.environ["COUCHLITE_BIN"], "push", str(folder), target, "--data-dir",
                                 str(tmp_path / "sender")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(4)  # a few seconds into the file
        proc.send_signal(signal.SIGINT)
        _, err_bytes = proc.communicate(timeout=60)
    finally:
        link.close()
    err = err_bytes.decode()
    assert proc.returncode == 130, err
    # Plain lines (stderr is a pipe), at most one a second, with bytes moving before the file is done.
    moving = [line for line in err.splitlines() if re.match(r"push: 0/1 photos  [0-9.]+ [kM]B/", line)]
    assert moving, err
    etas = [re.search(r"ETA (\S+)", line).group(1) for line in moving if "ETA" in line]
    for eta in etas:
        assert eta == "--:--" or re.fullmatch(r"\d+:\d\d", eta), (eta, err)  # under an hour: never 11:28:18
    assert any(eta != "--:--" for eta in etas), err
    assert "push: interrupted: 0 of the 1 photos and videos" in err, err
    kept = re.search(r"the first ([0-9.]+) MB of long clip\.mp4 arrived and are kept there", err)
    assert kept and float(kept.group(1)) > 0, err
    assert "run the same command again" in err, err
