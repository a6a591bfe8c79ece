"""_all_docs and _changes stream their rows, and attachment bytes with `attachments=true`, so the server's memory
stays flat whatever the database's size (issue 18 item 9: both used to build the whole answer in memory, about
four times the data, every attachment included).

Fills a database with FEED_MEMORY_DOCS documents of 4 KiB (default 6,000: 24 MiB of JSON) and 16 documents with a
4 MiB attachment each, restarts the server so its resident memory starts small, then reads every large feed
(`include_docs`, `attachments=true`) and checks the peak resident memory (VmHWM) against the baseline.

    COUCHLITE_BIN=$(swift build --show-bin-path)/couchlite \\
        python3 -m pytest conformance/e2e/test_feed_memory.py -q -s
"""

from __future__ import annotations

import os

from test_attachment_memory import ATT_CHUNK, AttBody, att_chunks, att_server  # noqa: F401 (a fixture)

FEED_DOCS = int(os.environ.get("FEED_MEMORY_DOCS", "6000"))
FEED_BODY_BYTES = 4096
FEED_ATTACHMENTS = 16
FEED_ATTACHMENT_BYTES = 4 * 1024 * 1024
FEED_RSS_BUDGET_MIB = 48  # well under one copy of either the documents (24 MiB ×4) or the attachments (64 MiB)
FEED_BATCH = 500


def fill(s, db):
    assert s.session.put(f"{s.base}/{db}").status_code == 201
    filler = "x" * FEED_BODY_BYTES
    for start in range(0, FEED_DOCS, FEED_BATCH):
        docs = [{"_id": f"doc-{i:06d}", "i": i, "filler": filler} for i in range(start, min(start + FEED_BATCH,
                                                                                            FEED_DOCS))]
        r = s.session.post(f"{s.base}/{db}/_bulk_docs", json={"docs": docs})
        assert r.status_code == 201, r.text[:300]
    for n in range(FEED_ATTACHMENTS):
        # Each attachment different (the store deduplicates identical bytes).
        pieces = [bytes([n]) + chunk[1:] for chunk in att_chunks(FEED_ATTACHMENT_BYTES)]
        r = s.session.put(f"{s.base}/{db}/att-{n:02d}/photo.bin", data=AttBody(iter(pieces), FEED_ATTACHMENT_BYTES),
                          headers={"Content-Type": "application/octet-stream"})
        assert r.status_code == 201, r.text


def read_streamed(s, path, params) -> tuple[int, bytes]:
    """Reads a response piece by piece, as a client would, keeping only its size and last bytes."""
    total = 0
    tail = b""
    with s.session.get(f"{s.base}{path}", params=params, stream=True, timeout=600) as r:
        assert r.status_code == 200, r.text[:300]
        for piece in r.iter_content(ATT_CHUNK):
            total += len(piece)
            tail = (tail + piece)[-64:]
    return total, tail


def test_all_docs_and_changes_stream_in_flat_memory(att_server):
    s = att_server
    db = "feeds"
    fill(s, db)
    s.stop()
    s.start()
    s.session.get(f"{s.base}/{db}/_all_docs", params={"limit": 1, "include_docs": "true"})
    s.session.get(f"{s.base}/{db}/_changes", params={"limit": 1, "include_docs": "true"})
    baseline = s.status("VmRSS") / 1024
    documents = FEED_DOCS * FEED_BODY_BYTES
    attachments_base64 = FEED_ATTACHMENTS * FEED_ATTACHMENT_BYTES * 4 // 3
    cases = [
        ("/_all_docs", {"include_docs": "true"}, documents, b"]}\n"),
        ("/_changes", {"include_docs": "true"}, documents, b"}\n\n"),
        ("/_all_docs", {"include_docs": "true", "attachments": "true"}, documents + attachments_base64, b"]}\n"),
        ("/_changes", {"include_docs": "true", "attachments": "true"}, documents + attachments_base64, b"}\n\n"),
        ("/_changes", {"include_docs": "true", "attachments": "true", "descending": "true"},
         documents + attachments_base64, b"}\n\n"),
    ]
    report = []
    for path, params, least, ending in cases:
        size, tail = read_streamed(s, f"/{db}{path}", params)
        peak = s.status("VmHWM") / 1024
        report.append(f"{path} {params}: {size / 1048576:.1f} MiB, peak RSS {peak:.1f} MiB")
        assert size >= least, f"{path} {params} sent {size} bytes, expected at least {least}"
        assert tail.endswith(ending), f"{path} {params} ended with {tail!r}"
        assert peak - baseline < FEED_RSS_BUDGET_MIB, \
            f"{path} {params} raised peak RSS from {baseline:.1f} to {peak:.1f} MiB\n" + "\n".join(report)
    print(f"\nbaseline RSS {baseline:.1f} MiB\n" + "\n".join(report))
