"""Re-records the Couchbase Lite 1.4.4 transcripts (transcripts/cbl-1.4.4-*.jsonl). Needs Java; tests never run it.

    python3 conformance/record_cbl.py CBLTOOL SERVER_URL DB PREFIX

CBLTOOL is the command-line peer around the real CBL 1.4.4 Java replicator (how to build it: transcripts/README.md);
SERVER_URL http://USER:PASS@127.0.0.1:PORT is CouchDB 3.4.3 or couchlite. Through a recording proxy
(record_proxy.py) it creates DB (the harness, `Python-urllib`), lets CBL push three small photos (one under
2 KiB, which CBL sends inline in `_bulk_docs`, two above, which it sends as `multipart/related` PUTs), reads
them back, then lets CBL pull the database into a fresh local one, and writes PREFIX-push.jsonl and
PREFIX-pull.jsonl.
"""

import base64
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import urllib.request

from record_proxy import Recorder

PROXY_PORT = 6199  # and the next one: each recording gets its own proxy
PHOTO_SIZES = (1500, 3000, 5000)  # CBL inlines attachments under 2,048 bytes


def photo(size, seed):
    """Deterministic JPEG-framed bytes (SOI, APP0 JFIF, filler, EOI), so a re-recording sends the same ones."""
    rng = random.Random(seed)
    head = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    return head + bytes(rng.randrange(256) for _ in range(size - len(head) - 2)) + b"\xff\xd9"


def harness(method, url, body=None):
    parts = urllib.parse.urlsplit(url)
    plain = parts._replace(netloc=f"{parts.hostname}:{parts.port}").geturl()
    req = urllib.request.Request(plain, data=body, method=method, headers={"Content-Type": "application/json"})
    token = base64.b64encode(f"{parts.username}:{parts.password}".encode()).decode()
    req.add_header("Authorization", "Basic " + token)
    try:
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read())


def record(server, port, out, run):
    if os.path.exists(out):
        os.remove(out)
    parts = urllib.parse.urlsplit(server)
    recorder = Recorder(port, (parts.hostname, parts.port), out)
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    proxied = f"http://{parts.username}:{parts.password}@127.0.0.1:{port}"
    try:
        run(proxied)
    finally:
        recorder.close()


def main():
    cbltool, server, db, prefix = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as folder:
        for index, size in enumerate(PHOTO_SIZES):
            with open(os.path.join(folder, f"photo-{index}.jpg"), "wb") as f:
                f.write(photo(size, index))

        harness("DELETE", f"{server}/{db}")  # a left-over from an earlier run, unrecorded

        def push(url):
            harness("PUT", f"{url}/{db}")
            result = subprocess.run([cbltool, "push", f"{url}/{db}", folder, "--timeout", "60"],
                                    capture_output=True, text=True)
            print("push:", result.stdout.strip())
            harness("GET", f"{url}/{db}")
            harness("GET", f"{url}/{db}/_all_docs?include_docs=true")

        def pull(url):
            with tempfile.TemporaryDirectory() as local:
                result = subprocess.run([cbltool, "pull", f"{url}/{db}", "--dbdir", local, "--timeout", "60"],
                                        capture_output=True, text=True)
            print("pull:", result.stdout.strip())

        record(server, PROXY_PORT, f"{prefix}-push.jsonl", push)
        record(server, PROXY_PORT + 1, f"{prefix}-pull.jsonl", pull)


if __name__ == "__main__":
    main()
