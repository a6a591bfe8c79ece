"""Helpers for the `couchlite receive` end-to-end tests: a receiver process that is started with
`--json --port 0` and read back from the line it prints, fake photos of each format, and a check of
the `--out` folder (every file byte for byte, its name and mtime, and nothing else)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import signal
import time
import urllib.parse

import requests

from processes import START_TIMEOUT_S, Process

EXPORT_TIMEOUT_S = 30
ADMIN = ("admin", "pass")


class Receiver(Process):
    """One `couchlite receive` process; can be killed and started again on the same dirs."""

    stop_signal = signal.SIGINT
    stop_timeout_s = 30.0
    log_name = "receive.log"

    def __init__(self, binary: str, root: str, *extra: str, name: str = "receiver"):
        super().__init__(binary, root, name)
        self.out = os.path.join(self.root, "out dir with spaces")
        self.extra = list(extra)
        self.info: dict = {}

    def start(self, *extra: str) -> dict:
        self.spawn(["receive", "--json", "--port", "0", "--data-dir", self.data_dir,
                    "--admin", f"{ADMIN[0]}:{ADMIN[1]}", "--out", self.out, *self.extra, *extra])
        self.read_lines(lambda line: True, START_TIMEOUT_S, "JSON line")
        self.info = json.loads(self.stdout.splitlines()[0])
        return self.info

    @property
    def url(self) -> str:
        return self.info["url"]

    @property
    def parts(self) -> urllib.parse.SplitResult:
        return urllib.parse.urlsplit(self.url)

    @property
    def base(self) -> str:
        """http://host:port, no credentials."""
        p = self.parts
        return f"{p.scheme}://{p.netloc.rpartition('@')[2]}"

    @property
    def server_url(self) -> str:
        """http://user:password@host:port: the printed URL without its database."""
        p = self.parts
        return f"{p.scheme}://{p.netloc}"

    @property
    def admin_url(self) -> str:
        return f"{self.parts.scheme}://{ADMIN[0]}:{ADMIN[1]}@{self.parts.netloc.rpartition('@')[2]}"

    @property
    def auth(self) -> tuple[str, str]:
        return (urllib.parse.unquote(self.parts.username), urllib.parse.unquote(self.parts.password))

    @property
    def db(self) -> str:
        return self.info["db"]

    def session(self) -> requests.Session:
        s = requests.Session()
        s.auth = self.auth
        return s

    def admin(self) -> requests.Session:
        s = requests.Session()
        s.auth = ADMIN
        return s

    def wait_for_log(self, text: str, timeout: float = EXPORT_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log_text():
            assert time.monotonic() < deadline, f"{text!r} not in the log\n{self.log_tail()}"
            time.sleep(0.05)


# --- photos ------------------------------------------------------------------------------

MAGIC = {
    "jpg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
    "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "gif": b"GIF89a\x01\x00\x01\x00",
    "heic": b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic",
    "mp4": b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2",
    "mov": b"\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00qt  ",
    "webp": b"RIFF\x00\x10\x00\x00WEBPVP8 ",
}


def photo(kind: str, size: int, rng: random.Random) -> bytes:
    """Bytes that sniff as `kind` (or as nothing for kind "raw"), `size` long, random after the magic."""
    head = MAGIC.get(kind, b"\x01\x02not a known format")
    return head + rng.randbytes(max(0, size - len(head)))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def md5_digest(data: bytes) -> str:
    return "md5-" + b64(hashlib.md5(data).digest())


def sha1_digest(data: bytes) -> str:
    return "sha1-" + b64(hashlib.sha1(data).digest())


def rev_of(doc_id: str, n: int = 1) -> str:
    return f"{n}-" + hashlib.md5(f"{doc_id}/{n}".encode()).hexdigest()


def inline_doc(doc_id: str, attachments: dict[str, tuple[str, bytes]], **fields) -> dict:
    """A `new_edits=false` document with inline base64 attachments, as PouchDB sends it."""
    rev = rev_of(doc_id)
    doc = {"_id": doc_id, "_rev": rev, "_revisions": {"start": 1, "ids": [rev.partition("-")[2]]}}
    doc.update(fields)
    doc["_attachments"] = {
        name: {"content_type": ctype, "data": b64(data), "digest": md5_digest(data), "revpos": 1}
        for name, (ctype, data) in attachments.items()}
    return doc


# --- the folder --------------------------------------------------------------------------

def wait_for_files(out: str, count: int, timeout: float = EXPORT_TIMEOUT_S) -> list[str]:
    """The names in `out` once there are `count` visible files (and no temporary ones)."""
    deadline = time.monotonic() + timeout
    while True:
        names = sorted(os.listdir(out)) if os.path.isdir(out) else []
        if len(names) >= count and not any(n.startswith(".") for n in names):
            return names
        assert time.monotonic() < deadline, f"{out} has {names}, wanted {count} files"
        time.sleep(0.05)


def check_folder(out: str, expected: dict[str, tuple[bytes, float | None]],
                 started: float, ended: float) -> None:
    """`out` holds exactly `expected` (name → (bytes, mtime or None for 'when exported')), nothing else."""
    names = wait_for_files(out, len(expected))
    time.sleep(0.3)          # anything extra would have appeared by now
    names = sorted(os.listdir(out))
    assert names == sorted(expected), f"folder holds {names}, wanted {sorted(expected)}"
    for name, (data, mtime) in expected.items():
        path = os.path.join(out, name)
        with open(path, "rb") as f:
            assert f.read() == data, f"{name}: bytes differ"
        actual = os.stat(path).st_mtime
        if mtime is None:
            assert started - 2 <= actual <= ended + 2, f"{name}: mtime {actual} not in [{started}, {ended}]"
        else:
            assert abs(actual - mtime) < 0.01, f"{name}: mtime {actual}, wanted {mtime}"
