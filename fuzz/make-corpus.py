#!/usr/bin/env python3
"""Regenerates the committed seed corpus fuzz/corpus/TARGET/ from the unit tests and the transcripts.

Deterministic: the same repository gives the same files (named by the sha1 of their content), so a rerun
shows as no diff. Sources:
- string literals of the unit tests (Tests/**/*.swift; plain and raw strings, Swift escapes decoded), sent to the
  targets whose test file they come from;
- conformance/transcripts/*.jsonl: the recorded requests (re-framed as raw HTTP/1.1, also chunked), their JSON
  bodies, multipart bodies with their Content-Type, base64 attachment data, the `_revisions` of replicated docs,
  and selectors built from recorded documents; gzip seeds are recorded bodies compressed (mtime 0).
Each seed is cut to MAX_LEN bytes (fuzz/run.sh's -max_len).
Usage: python3 fuzz/make-corpus.py   (from anywhere; rewrites fuzz/corpus/)
"""
import base64
import glob
import gzip
import hashlib
import json
import os
import re
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
MAX_LEN = 16384
PER_SOURCE = 40  # most seeds of one kind from the transcripts per target

seeds = {}


def add(target, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    data = data[:MAX_LEN]
    if data:
        seeds.setdefault(target, {})[hashlib.sha1(data).hexdigest()[:16]] = data


def swift_literals(path):
    """Plain "..." and raw #"..."# literals without interpolation, escapes decoded."""
    text = open(path, encoding="utf-8").read()
    out = []
    for m in re.finditer(r'#"(.*?)"#', text):
        out.append(m.group(1).replace('\\#(', '\\('))
    plain = re.sub(r'#"(.*?)"#', "", text)
    for m in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', plain):
        raw = m.group(1)
        if "\\(" in raw:
            continue
        def unescape(e):
            c = e.group(1)
            if c.startswith("u{"):
                return chr(int(c[2:-1], 16))
            return {"n": "\n", "r": "\r", "t": "\t", "0": "\0", "\\": "\\", '"': '"', "'": "'"}.get(c, c)
        out.append(re.sub(r'\\(u\{[0-9a-fA-F]+\}|.)', unescape, raw))
    return out


TEST_TARGETS = {
    "HTTPRequestParserTests": ["http_request"],
    "HTTPServerLiveTests": ["http_request"],
    "HTTPChunkedDecoderTests": ["chunked"],
    "JSONTests": ["json"],
    "SelectorTests": ["selector", "json"],
    "Base64Tests": ["base64"],
    "GzipTests": ["gzip"],
}
for path in sorted(glob.glob(os.path.join(ROOT, "Tests", "**", "*.swift"), recursive=True)):
    name = os.path.basename(path)[:-len(".swift")]
    for literal in swift_literals(path):
        for target in TEST_TARGETS.get(name, []):
            if target == "gzip":
                add(target, gzip.compress(literal.encode(), mtime=0))
            else:
                add(target, literal)
        if name.startswith("Multipart") and "--" in literal and "\r\n" in literal:
            boundary = re.search(r"--([0-9A-Za-z'()+_,./:=?-]{1,70})\r\n", literal)
            if boundary:
                add("multipart", 'multipart/related; boundary="%s"\r\n' % boundary.group(1) + literal)

counts = {}


def add_limited(kind, target, data):
    key = (kind, target)
    if counts.get(key, 0) >= PER_SOURCE:
        return
    before = len(seeds.get(target, {}))
    add(target, data)
    if len(seeds.get(target, {})) > before:
        counts[key] = counts.get(key, 0) + 1


def body_bytes(body):
    if not body:
        return b""
    if "base64" in body:
        return base64.b64decode(body["base64"])
    return body.get("text", "").encode("utf-8", "surrogatepass")


def chunked(data, size):
    out = b""
    for i in range(0, len(data), size):
        piece = data[i:i + size]
        out += b"%x\r\n" % len(piece) + piece + b"\r\n"
    return out + b"0\r\n\r\n"


def chain_parent(i):
    """The revtree target's parent byte that makes rev i-1 the parent of rev i (0, a root, for i == 0)."""
    if i == 0:
        return 0
    return next(b for b in range(i - 1, 256, i) if b % 7 != 0)


seen_shapes = set()
for path in sorted(glob.glob(os.path.join(ROOT, "conformance", "transcripts", "*.jsonl"))):
    for line in open(path, encoding="utf-8"):
        rec = json.loads(line)
        req_body = body_bytes(rec["req_body"])
        headers = {k: v for k, v in rec["req_headers"].items() if k.lower() not in ("content-length", "transfer-encoding")}
        ctype = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
        shape = (rec["method"], rec["path"].split("?")[0].count("/"), "?" in rec["path"], tuple(sorted(headers)))
        head = "%s %s HTTP/1.1\r\n" % (rec["method"], rec["path"]) + "".join(
            "%s: %s\r\n" % kv for kv in headers.items())
        if shape not in seen_shapes:
            seen_shapes.add(shape)
            small = req_body[:2048]
            add_limited("http", "http_request", head.encode() + b"Content-Length: %d\r\n\r\n" % len(small) + small)
            add_limited("http-chunked", "http_request",
                        head.encode() + b"Transfer-Encoding: chunked\r\n\r\n" + chunked(small, 700) + head.encode()
                        + b"\r\n")
            add_limited("chunked", "chunked", chunked(small or b"{}", 1 + len(small) // 3))
        for body, btype in ((req_body, ctype), (body_bytes(rec["resp_body"]),
                                                next((v for k, v in rec["resp_headers"].items()
                                                      if k.lower() == "content-type"), ""))):
            if btype.startswith("multipart/"):
                add_limited("multipart", "multipart", btype.encode() + b"\r\n" + body[:MAX_LEN - 200])
                continue
            try:
                doc = json.loads(body)
            except ValueError:
                continue
            if len(body) <= 4096:
                add_limited("json", "json", body)
                add_limited("gzip", "gzip", gzip.compress(body, mtime=0))
            docs = doc.get("docs", []) if isinstance(doc, dict) else []
            for d in docs if isinstance(docs, list) else []:
                if not isinstance(d, dict):
                    continue
                for att in (d.get("_attachments") or {}).values():
                    if isinstance(att, dict) and isinstance(att.get("data"), str):
                        data = att["data"][:1024]
                        add_limited("base64", "base64", data[:len(data) // 4 * 4])
                fields = {k: v for k, v in d.items() if not k.startswith("_")}
                if fields:
                    key, value = sorted(fields.items())[0]
                    sel = {key: value} if not isinstance(value, (dict, list)) else {key: {"$exists": True}}
                    add_limited("selector", "selector", json.dumps([sel, d])[:4096])
                    add_limited("selector-ne", "selector",
                                json.dumps([{"$or": [{"_id": {"$gt": d.get("_id", "")}}, {"_deleted": {"$ne": True}}]},
                                            d])[:4096])
                revs = d.get("_revisions")
                if isinstance(revs, dict) and isinstance(revs.get("ids"), list):
                    # The revtree target's encoding: rev count, (parent, hash kind, deleted) per rev, limit, paths.
                    n = min(len(revs["ids"]), 48)
                    data = bytes([n - 1])
                    for i in range(n):
                        data += bytes([chain_parent(i), i % 4, 1 if d.get("_deleted") and i == n - 1 else 0])
                    data += bytes([3]) + bytes([n - 1, n, max(0, n - 2), 2])
                    add_limited("revtree", "revtree", data)

# Hand-made revision-tree shapes: a conflict, a deep chain, a stemmed root re-extended.
add("revtree", bytes([3, 0, 0, 0, 0, 1, 0, 0, 2, 1, 1, 3, 0, 2, 2, 3, 2]))
add("revtree", bytes([20] + [b for i in range(21) for b in (chain_parent(i), i % 4, 0)] + [2, 20, 5, 20, 12, 3, 1]))
add("revtree", bytes([6, 0, 0, 0, 0, 1, 0, 1, 2, 0, 2, 3, 1, 2, 4, 1, 7, 5, 0, 0, 1, 6, 11, 6, 2, 5, 3]))


# DNS (mDNS) packets: a PTR query, a DNS-SD response with PTR/SRV/TXT/A/AAAA and compression, a probe with its
# authority section, a goodbye, and the hostile shapes the parser refuses (a pointer loop, a forward pointer, an
# over-long label, counts larger than the packet).
def dns_name(text):
    return b"".join(bytes([len(label)]) + label for label in (part.encode() for part in text.split(".") if part)) + b"\0"


def dns_packet(flags, questions=(), answers=(), authorities=()):
    head = struct.pack(">HHHHHH", 0, flags, len(questions), len(answers), len(authorities), 0)
    body = b"".join(q for q in questions) + b"".join(answers) + b"".join(authorities)
    return head + body


def dns_rr(name, rtype, data, ttl=120, klass=1):
    return name + struct.pack(">HHIH", rtype, klass, ttl, len(data)) + data


ptr_query = dns_name("_photodrop._tcp.local") + struct.pack(">HH", 12, 1)
add("dns", dns_packet(0, [ptr_query]))
instance = b"\x0dAnna's laptop\xc0\x0c"  # the instance label, then a pointer to the type's name at 12
srv = struct.pack(">HHH", 0, 0, 6984) + dns_name("anna-couchlite.local")
txt = b"".join(bytes([len(t)]) + t for t in (b"v=1", b"name=Anna's laptop", b"path=/photodrop", b"tls=6984"))
response = dns_packet(
    0x8400, [],
    [dns_rr(dns_name("_photodrop._tcp.local"), 12, instance, 4500),
     dns_rr(b"\xc0\x2d", 33, srv, 120, 0x8001),
     dns_rr(b"\xc0\x2d", 16, txt, 4500, 0x8001),
     dns_rr(dns_name("anna-couchlite.local"), 1, bytes([10, 0, 0, 1]), 120, 0x8001),
     dns_rr(dns_name("anna-couchlite.local"), 28, bytes(16), 120, 0x8001)])
add("dns", response)
add("dns", dns_packet(0, [dns_name("Anna's laptop._photodrop._tcp.local") + struct.pack(">HH", 255, 0x8001)], [],
                      [dns_rr(dns_name("Anna's laptop._photodrop._tcp.local"), 33, srv)]))
add("dns", dns_packet(0x8400, [], [dns_rr(dns_name("_couchdb._tcp.local"), 12, dns_name("x._couchdb._tcp.local"), 0)]))
add("dns", dns_packet(0, [b"\xc0\x0c" + struct.pack(">HH", 12, 1)]))
add("dns", dns_packet(0, [b"\xc0\x20" + struct.pack(">HH", 12, 1)]))
add("dns", dns_packet(0, [b"\x40" + b"a" * 64 + b"\0" + struct.pack(">HH", 12, 1)]))
add("dns", struct.pack(">HHHHHH", 0, 0x8400, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF) + ptr_query)



# WebSocket and BLIP: the frames LiteCore 3.2 sent (conformance/transcripts/cbl3-3.2-first-frames.txt; a long frame's
# hex is cut off by the recorder), each as a masked WebSocket binary frame (websocket) and as the blip target's
# input (frames prefixed by a 2-byte big-endian length), plus RFC 6455's examples and hostile frame shapes.
def ws_frame(opcode, payload, fin=True, mask=b"\x37\xfa\x21\x3d"):
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    bit = 0x80 if mask else 0
    if n < 126:
        head += bytes([bit | n])
    elif n < 65536:
        head += bytes([bit | 126]) + struct.pack(">H", n)
    else:
        head += bytes([bit | 127]) + struct.pack(">Q", n)
    if not mask:
        return head + payload
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def blip_input(frames):
    return b"".join(struct.pack(">H", len(f)) + f for f in frames)


blip_connections = []
with open(os.path.join(ROOT, "conformance", "transcripts", "cbl3-3.2-first-frames.txt")) as f:
    for line in f:
        if line.startswith("=== connection "):
            blip_connections.append([])
        if line.startswith("  hex: "):
            blip_connections[-1].append(bytes(int(x, 16) for x in line[7:].split() if x != "..."))
for frames in blip_connections:
    add("blip", blip_input(frames))
    add("websocket", b"".join(ws_frame(2, f) for f in frames))
    for frame in frames:
        add("blip", blip_input([frame]))
        add("websocket", ws_frame(2, frame[:10], fin=False) + ws_frame(9, b"hi") + ws_frame(0, frame[10:]))
add("blip", blip_input([bytes([1, 0x34, 0x80, 0x87, 0x03]), bytes([1, 0x03, 1, 2, 3])]))
add("websocket", bytes([0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]))
add("websocket", ws_frame(2, bytes(300)) + ws_frame(8, b"\x03\xe8bye"))
add("websocket", ws_frame(1, "caf\u00e9 \u20ac".encode(), fin=False) + ws_frame(0, b"!") + ws_frame(8, b""))
add("websocket", ws_frame(2, b"unmasked", mask=None))
add("websocket", bytes([0x82, 0xFF, 0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]))
add("websocket", ws_frame(1, b"\xff\xfe") + ws_frame(8, b"\x03"))

if os.path.isdir(CORPUS):
    shutil.rmtree(CORPUS)
for target, files in sorted(seeds.items()):
    os.makedirs(os.path.join(CORPUS, target))
    for name, data in sorted(files.items()):
        with open(os.path.join(CORPUS, target, name), "wb") as f:
            f.write(data)
    print("%-13s %4d seeds, %7d bytes" % (target, len(files), sum(map(len, files.values()))))
