"""The replicator streams attachments (issue 13): replicating a document with a big attachment
between two couchlite servers raises the replicating process's peak RSS by less than 64 MiB.

The attachment is REPL_MEMORY_MIB MiB (default 128 in CI; run with REPL_MEMORY_MIB=1024 for the
issue's 1 GiB figure). The replicator is `couchlite replicate URL URL`, measured from a wrapper
process whose only child it is (getrusage's ru_maxrss of the children), against a run that
replicates one small document.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import requests

from test_attachment_memory import AttBody, att_chunks, att_pattern

BIG_MIB = int(os.environ.get("REPL_MEMORY_MIB", "128"))
MAX_GROWTH_MIB = 64

WRAPPER = """
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True)
sys.stderr.write(p.stderr.decode())
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def replicate_peak_kib(source: str, target: str) -> int:
    binary = os.environ["COUCHLITE_BIN"]
    out = subprocess.run([sys.executable, "-c", WRAPPER, binary, "replicate", source, target, "--create-target"],
                         capture_output=True, timeout=900)
    rc, peak = out.stdout.decode().split()
    assert rc == "0", out.stderr.decode()
    return int(peak)


def test_replicating_a_big_attachment_keeps_the_replicator_small(servers):
    a = servers("a")
    b = servers("b")
    total = BIG_MIB * 1024 * 1024
    s = requests.Session()
    assert s.put(f"{a.url}/small").status_code == 201
    assert s.put(f"{a.url}/small/d", json={"x": 1}).status_code == 201
    assert s.put(f"{a.url}/big").status_code == 201
    r = s.put(f"{a.url}/big/video/clip.mov", data=AttBody(att_chunks(total), total),
              headers={"Content-Type": "video/quicktime"})
    assert r.status_code == 201, r.text

    baseline = replicate_peak_kib(f"{a.url}/small", f"{b.url}/small")
    peak = replicate_peak_kib(f"{a.url}/big", f"{b.url}/big")
    growth = (peak - baseline) / 1024
    print(f"\nreplicator peak RSS: {baseline / 1024:.1f} MiB (one small doc), {peak / 1024:.1f} MiB "
          f"({BIG_MIB} MiB attachment): +{growth:.1f} MiB")
    assert growth < MAX_GROWTH_MIB, f"replicating {BIG_MIB} MiB raised the replicator's peak RSS by {growth:.1f} MiB"

    got = s.get(f"{b.url}/big/video/clip.mov", stream=True)
    md5 = hashlib.md5()
    for block in got.iter_content(1 << 20):
        md5.update(block)
    assert md5.digest() == att_pattern(total).digest()
    assert got.headers["Content-Type"] == "video/quicktime"
    stub = s.get(f"{b.url}/big/video").json()["_attachments"]["clip.mov"]
    assert stub["length"] == total
