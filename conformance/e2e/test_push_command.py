"""`couchlite push DIR URL` (issue 13): a folder of photos and videos with awkward names is sent to
a couchlite peer through a local outbox; an interrupted push is resumed; a wrong password and an
unreachable peer end with clear messages and distinct exit statuses; on a terminal the progress is
a bar redrawn in place.
"""

from __future__ import annotations

import os
import pty
import random
import select
import signal
import subprocess
import time

import pytest
import requests

from conftest import free_port
from receive_support import MAGIC
from tcp_link import Link

AWKWARD = ["plain.jpg", "with space.JPG", "sub dir/été 雪.jpeg", "sub dir/deeper/video clip.mov",
           "quote'and\"dq.png", "#hash&amp;.mp4"]


def make_folder(root: str, names=AWKWARD, size: int = 200_000) -> dict[str, bytes]:
    files = {}
    for i, name in enumerate(names):
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # Each file starts as its kind does, so a receiver recognises it as a photo or video by its bytes.
        extension = name.rsplit(".", 1)[-1].lower()
        head = MAGIC.get({"jpeg": "jpg"}.get(extension, extension), b"")
        data = head + random.Random(i).randbytes(size + i - len(head))
        with open(path, "wb") as f:
            f.write(data)
        files[name] = data
    with open(os.path.join(root, "notes.txt"), "w") as f:
        f.write("not a photo")
    if "plain.jpg" in files:
        with open(os.path.join(root, "zz copy of plain.jpg"), "wb") as f:
            f.write(files["plain.jpg"])  # same content: the same document (the first name found wins)
    return files


def push(args, data_dir, **kw):
    binary = os.environ["COUCHLITE_BIN"]
    return subprocess.run([binary, "push", *args, "--data-dir", data_dir], capture_output=True, timeout=120, **kw)


def peer_docs(server, db):
    rows = requests.get(f"{server.url}/{db}/_all_docs?include_docs=true", timeout=10).json()["rows"]
    return {row["doc"]["name"]: row["doc"] for row in rows}


def test_push_a_folder_with_awkward_names_then_again_is_a_no_op(servers, tmp_path):
    peer = servers("peer")
    folder = tmp_path / "photos"
    files = make_folder(str(folder))
    data_dir = str(tmp_path / "sender")
    out = push([str(folder), f"{peer.url}/drop"], data_dir)
    assert out.returncode == 0, out.stderr.decode()
    err = out.stderr.decode()
    assert f"{len(AWKWARD) + 1} photos and videos" in err and f"{len(AWKWARD)} new in the outbox" in err, err
    docs = peer_docs(peer, "drop")
    assert set(docs) == {os.path.basename(n) for n in AWKWARD}, sorted(docs)
    for name, data in files.items():
        base = os.path.basename(name)
        doc = docs[base]
        assert doc["type"] == "photo" and doc["size"] == len(data) and doc["_id"].startswith("photo-")
        assert "taken" in doc
        att = doc["_attachments"][base]
        assert att["length"] == len(data)
        got = requests.get(f"{peer.url}/drop/{requests.utils.quote(doc['_id'], safe='')}/"
                           f"{requests.utils.quote(base, safe='')}", timeout=10)
        assert got.content == data, name
        assert got.headers["Content-Type"].startswith(att["content_type"])
    assert docs["video clip.mov"]["_attachments"]["video clip.mov"]["content_type"] == "video/quicktime"

    again = push([str(folder), f"{peer.url}/drop"], data_dir)
    assert again.returncode == 0, again.stderr.decode()
    assert "0 new in the outbox" in again.stderr.decode()
    assert "0/0 photos" in again.stderr.decode(), again.stderr.decode()


def test_push_skips_a_renamed_text_file_and_names_it(servers, tmp_path):
    """Issue 36, item 3: photo or video by its bytes. A text file renamed .jpg is neither counted nor sent, and push
    ends saying so with its name; a photo without an extension is sent, its type taken from its bytes."""
    peer = servers("peer")
    folder = tmp_path / "photos"
    files = make_folder(str(folder), names=["beach.jpg", "clip.mp4"])
    (folder / "notes.jpg").write_text("shopping list: milk, eggs\n")
    (folder / "old").mkdir()
    (folder / "old" / "readme.mov").write_text("not a video either")
    (folder / "IMG_0042").write_bytes(files["beach.jpg"][:12] + b"another photo, no extension")
    out = push([str(folder), f"{peer.url}/drop"], str(tmp_path / "sender"))
    err = out.stderr.decode()
    assert out.returncode == 0, err
    assert "push: 3 photos and videos in" in err, err
    assert "2 skipped: not media (notes.jpg, old/readme.mov)" in err, err
    last = [line for line in err.splitlines() if line.startswith("push: all ")][-1]
    assert last.endswith("; 2 skipped: not media (notes.jpg, old/readme.mov)"), last
    docs = peer_docs(peer, "drop")
    assert set(docs) == {"beach.jpg", "clip.mp4", "IMG_0042"}, sorted(docs)
    assert docs["IMG_0042"]["_attachments"]["IMG_0042"]["content_type"] == "image/jpeg"


def test_push_include_and_exclude(servers, tmp_path):
    peer = servers("peer")
    folder = tmp_path / "photos"
    make_folder(str(folder))
    out = push([str(folder), f"{peer.url}/drop", "--include", "*.jp*g", "--exclude", "sub dir/*"],
               str(tmp_path / "sender"))
    assert out.returncode == 0, out.stderr.decode()
    assert set(peer_docs(peer, "drop")) == {"plain.jpg"}


def test_interrupted_push_resumes_with_what_did_not_arrive(servers, tmp_path):
    peer = servers("peer")
    folder = tmp_path / "photos"
    names = [f"img {i:03d}.jpg" for i in range(40)]
    make_folder(str(folder), names, size=500_000)
    data_dir = str(tmp_path / "sender")
    binary = os.environ["COUCHLITE_BIN"]
    # 20 MB at 2 MB/s: about 10 s to push, so the interrupt after three photos always lands mid-push.
    link = Link(peer.port, rate=2_000_000)
    target = f"http://admin:pass@127.0.0.1:{link.port}/drop"
    proc = subprocess.Popen([binary, "push", str(folder), target, "--data-dir", data_dir],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = requests.get(f"{peer.url}/drop", timeout=5)
        if r.status_code == 200 and r.json()["doc_count"] >= 3:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    link.cut()   # what the relay still buffers must not arrive after the count below
    time.sleep(0.5)
    arrived = requests.get(f"{peer.url}/drop", timeout=5).json()["doc_count"]
    assert proc.returncode == 130, err.decode()
    assert "run the same command again" in err.decode()
    assert 3 <= arrived < len(names), arrived

    link.rate = None
    again = push([str(folder), target], data_dir)
    link.close()
    assert again.returncode == 0, again.stderr.decode()
    text = again.stderr.decode()
    assert f"{len(names) - arrived}/{len(names) - arrived} photos" in text, (arrived, text)
    assert len(peer_docs(peer, "drop")) == len(names)


def test_push_wrong_password_and_unreachable_peer(servers, tmp_path):
    peer = servers("peer")
    folder = tmp_path / "photos"
    make_folder(str(folder), ["a.jpg"])
    data_dir = str(tmp_path / "sender")
    wrong = f"http://admin:nope@127.0.0.1:{peer.port}/drop"
    out = push([str(folder), wrong], data_dir)
    assert out.returncode == 77, out.stderr.decode()
    assert "wrong user name or password" in out.stderr.decode()
    assert "nope" not in out.stderr.decode(), "the password is printed"

    out = push([str(folder), f"http://admin:pass@127.0.0.1:{free_port()}/drop"], data_dir)
    assert out.returncode == 69, out.stderr.decode()
    assert "connection refused" in out.stderr.decode()

    out = push([str(folder / "nosuch"), f"{peer.url}/drop"], data_dir)
    assert out.returncode == 64, out.stderr.decode()
    assert "is not a folder" in out.stderr.decode()


def test_push_progress_is_a_bar_on_a_terminal(servers, tmp_path):
    peer = servers("peer")
    folder = tmp_path / "photos"
    make_folder(str(folder), [f"p{i}.jpg" for i in range(20)], size=1_000_000)
    binary = os.environ["COUCHLITE_BIN"]
    master, slave = pty.openpty()
    proc = subprocess.Popen([binary, "push", str(folder), f"{peer.url}/drop", "--data-dir", str(tmp_path / "s")],
                            stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    output = b""
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    proc.wait(timeout=30)
    os.close(master)
    text = output.decode("utf-8", "replace")
    assert proc.returncode == 0, text
    assert "\r\x1b[2K[" in text, text          # redrawn in place
    assert "] 100%  20/20 photos" in text, text
    assert "MB/s" in text and "all 20 photos are on" in text, text


@pytest.mark.parametrize("args, says", [
    (["--to", "Anna"], "--to needs --code CODE when the standard input is not a terminal"),
    (["http://127.0.0.1:9/db", "--code", "ABCD-2345"], "--code goes with --to NAME"),
    (["http://127.0.0.1:9/db", "--to", "Anna", "--code", "ABCD-2345"], "push --to NAME needs a DIR and no URL"),
    (["--to", "Anna", "--code", "ABCD-2345", "--insecure"], "--pin, --cacert and --insecure do not apply"),
])
def test_push_to_usage_errors_exit_64_before_listening(tmp_path, args, says):
    """Issue 40: `push DIR --to NAME` without a code and no terminal to ask on, or mixed with a URL or with
    certificate flags (it pins the announced certificate itself), is bad usage, refused before anything is sent."""
    os.makedirs(tmp_path / "photos")
    r = push([str(tmp_path / "photos"), *args], str(tmp_path / "data"), stdin=subprocess.DEVNULL)
    assert r.returncode == 64, (r.returncode, r.stderr)
    assert says.encode() in r.stderr, r.stderr
