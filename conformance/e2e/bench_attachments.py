"""Attachment throughput and memory benchmark (BENCHMARKS.md (attachments)). Not a test.

Starts its own couchlite (COUCHLITE_BIN, a release build), then measures:
  - multipart/related PUT (?new_edits=false, CouchDB replicator layout) of N 512 KiB photos, one doc each
  - GET of each photo
  - multipart PUT and GET of one big file (BIG_MIB, default 1024)
and the server's VmRSS before and VmHWM (peak resident) after each phase.

    COUCHLITE_BIN=.build/release/couchlite python3 conformance/e2e/bench_attachments.py
"""

import base64
import hashlib
import json
import os
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_attachment_memory import ATT_CHUNK, AttBody, AttServer, att_chunks, att_pattern  # noqa: E402

PHOTOS = int(os.environ.get("PHOTOS", "400"))
PHOTO_BYTES = 512 * 1024
BIG_MIB = int(os.environ.get("BIG_MIB", "1024"))


def multipart(doc_id, name, pieces, length, digest):
    boundary = uuid.uuid4().hex
    doc = {"_id": doc_id, "_rev": "1-aa", "_revisions": {"start": 1, "ids": ["aa"]},
           "_attachments": {name: {"content_type": "application/octet-stream", "revpos": 1, "digest": digest,
                                   "length": length, "follows": True}}}
    head = (f"--{boundary}\r\nContent-Type: application/json\r\n\r\n{json.dumps(doc)}\r\n--{boundary}\r\n"
            f"Content-Disposition: attachment; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--".encode()
    body = AttBody(iter([head, *pieces, tail]), len(head) + length + len(tail))
    return body, f'multipart/related; boundary="{boundary}"'


def md5_digest(data):
    return "md5-" + base64.b64encode(hashlib.md5(data).digest()).decode()


def report(label, seconds, total_bytes, server, baseline):
    mib = total_bytes / 1024 / 1024
    print(f"{label:<34} {mib:9.1f} MiB {seconds:7.2f} s {mib / seconds:8.1f} MiB/s   "
          f"RSS before {baseline:6.1f} MiB, peak {server.status('VmHWM') / 1024:6.1f} MiB", flush=True)


def main():
    binary = os.environ["COUCHLITE_BIN"]
    with tempfile.TemporaryDirectory(prefix="att-bench-") as root:
        s = AttServer(binary, root)
        s.start()
        try:
            db = "bench"
            s.session.put(f"{s.base}/{db}")
            s.session.put(f"{s.base}/{db}/warm", json={})
            baseline = s.status("VmRSS") / 1024
            photos = [os.urandom(PHOTO_BYTES) for _ in range(PHOTOS)]
            start = time.perf_counter()
            for i, photo in enumerate(photos):
                body, ctype = multipart(f"p{i}", "photo.jpg", [photo], len(photo), md5_digest(photo))
                r = s.session.put(f"{s.base}/{db}/p{i}?new_edits=false", data=body, headers={"Content-Type": ctype})
                assert r.status_code == 201, r.text
            report(f"multipart PUT {PHOTOS} x 512 KiB", time.perf_counter() - start, PHOTOS * PHOTO_BYTES, s, baseline)
            start = time.perf_counter()
            for i, photo in enumerate(photos):
                g = s.session.get(f"{s.base}/{db}/p{i}/photo.jpg")
                assert g.content == photo
            report(f"GET {PHOTOS} x 512 KiB", time.perf_counter() - start, PHOTOS * PHOTO_BYTES, s, baseline)

            total = BIG_MIB * 1024 * 1024
            digest = "md5-" + base64.b64encode(att_pattern(total).digest()).decode()
            baseline = s.status("VmRSS") / 1024
            body, ctype = multipart("big", "big.bin", att_chunks(total), total, digest)
            start = time.perf_counter()
            r = s.session.put(f"{s.base}/{db}/big?new_edits=false", data=body, headers={"Content-Type": ctype})
            assert r.status_code == 201, r.text
            report(f"multipart PUT 1 x {BIG_MIB} MiB", time.perf_counter() - start, total, s, baseline)
            start = time.perf_counter()
            md5 = hashlib.md5()
            with s.session.get(f"{s.base}/{db}/big/big.bin", stream=True) as g:
                for piece in g.iter_content(ATT_CHUNK):
                    md5.update(piece)
            assert "md5-" + base64.b64encode(md5.digest()).decode() == digest
            report(f"GET 1 x {BIG_MIB} MiB", time.perf_counter() - start, total, s, baseline)
        finally:
            s.stop()


if __name__ == "__main__":
    main()
