"""The worker processes that run strangers' bytes have no network (issues 17 and 27): a design function runs in a
`couchlite query-server` worker and a photo is decoded in a `couchlite media-worker`; a bug in Duktape, libjpeg,
libheif or FFmpeg that a hostile document or photo turns into code execution takes over that worker, and from
there must reach nothing but its pipes to the server. Each worker enters a sandbox (no file system, not root,
an allow-list seccomp filter with `no_new_privs`) before it reads its first request; this test reads the kernel's
view of the real workers a running server started. Each escape is tried inside a real worker in QueryServerTests
(`SandboxEscapeTests`)."""

from __future__ import annotations

import subprocess

import requests

from processes import children


def status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def test_a_hijacked_worker_cannot_open_a_socket(servers, tmp_path):
    a = servers("sandbox")
    s = requests.Session()
    assert s.put(a.url + "/db").status_code == 201
    view = {"views": {"v": {"map": "function (doc) { emit(doc._id, 1); }"}}}
    assert s.put(a.url + "/db/_design/d", json=view).status_code == 201
    assert s.put(a.url + "/db/doc", json={}).status_code == 201
    assert s.get(a.url + "/db/_design/d/_view/v").json()["total_rows"] == 1
    photo = tmp_path / "a.jpg"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240", "-frames:v", "1",
                    str(photo)], check=True, timeout=120)
    r = s.put(a.url + "/db/p/a.jpg", data=photo.read_bytes(), headers={"Content-Type": "image/jpeg"})
    assert r.status_code == 201, r.text
    r = s.get(a.url + "/_photos/api/db/db/thumb/p/a.jpg?size=160")
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/jpeg"

    workers = dict(children(a.proc.pid))
    assert {"query-server", "media-worker"} <= workers.keys(), workers
    for name in ("query-server", "media-worker"):
        fields = status(workers[name])
        assert fields["Seccomp"] == "2", f"{name} runs without a seccomp filter: {fields.get('Seccomp')}"
        assert fields["NoNewPrivs"] == "1", f"{name} could gain privileges through exec"
