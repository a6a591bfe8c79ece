"""Revision ids are CouchDB 3.4.3's (`couch_db:new_revid`): the same edit gives the same `_rev` on both servers.

Every expected rev below was recorded from CouchDB 3.4.3 by running this file against it with
`REV_HASH_RECORD=1` (it prints the table instead of asserting). The edits exercise what the hash covers: the
body as jiffy decodes it (strings, integers small and beyond 64 bits, floats written `1.0`, `1e2`, `-0.0`,
unicode, nesting, empty containers, lists of small integers), the deleted flag, the parent rev, and the
attachments (inline, standalone PUT, stubs, DELETE) with their names, content types, md5s and order, and the
text-like attachments (`text/*`, JSON, JavaScript, XML) whose md5 CouchDB takes from the gzip it stores them as.
"""

import base64
import os
import random

import pytest

RECORD = os.environ.get("REV_HASH_RECORD") == "1"

# Raw JSON bodies, sent byte for byte (json.dumps would normalise the numbers this is about).
BODIES = {
    "empty": b'{}',
    "int": b'{"a":1}',
    "float_one": b'{"a":1.0}',
    "float_exp": b'{"a":1e2}',
    "neg_zero_int": b'{"a":-0}',
    "neg_zero_float": b'{"a":-0.0}',
    "i32_edges": b'{"a":2147483647,"b":2147483648,"c":-2147483648,"d":-2147483649,"e":255,"f":256,"g":-1}',
    "bignum": b'{"a":123456789012345678901234567890,"b":-18446744073709551616}',
    "floats": b'{"a":1.5e300,"b":1E-5,"c":12345678901234567890.0,"d":0.1}',
    "strings": b'{"s":"plain","e":"","q":"quote\\" slash\\\\ nl\\n tab\\t"}',
    "unicode": b'{"u":"h\\u00e9llo \\ud83d\\ude00 \xe6\x97\xa5","\xc3\xa9":"key"}',
    "atoms": b'{"a":true,"b":false,"c":null}',
    "order": b'{"z":1,"a":2,"m":3}',
    "nested": b'{"n":{"m":{"o":[1,[2,{"p":0.1}],{}]}},"e":[],"o":{}}',
    "small_int_list": b'{"bytes":[1,2,3,255],"mixed":[256,1],"with_float":[1,2.0]}',
    "underscore_fields": b'{"z":1,"_id":"ignored-here","y":2}',
    # jiffy's dedupe_keys: a repeated key takes its last position (the body reads back {"b":2,"a":3}).
    "duplicate_keys": b'{"a":1,"b":2,"a":3}',
}

PHOTO = b"\xff\xd8\xff\xe0" + bytes(range(60))  # not a compressible type: CouchDB stores it as sent
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40, 90))

EXPECTED = {
    # recorded from CouchDB 3.4.3; see the module docstring
    'duplicate_keys/1': '1-cf8195ee4268460f49235c8e98d42c6f',
    'duplicate_keys/2': '2-6803e51ba848f9fbe0ecdfc87ed1270b',
    'duplicate_keys/3-deleted': '3-9fc8253f3aa58fc5d1dcdd3fd1433f4b',
    'duplicate_keys/4-recreated': '4-b0db0d6240e10d65921412d99a53f1e9',
    'atoms/1': '1-cb8c66602b212aa81979fb8fa1657af3',
    'atoms/2': '2-bbe9731fd4e7a2bb4ae723b6e20b28c7',
    'atoms/3-deleted': '3-2d8d277091b1fb934bc6c73db2ecb9c2',
    'atoms/4-recreated': '4-d51016a12fe933aa52a0c986427f075f',
    'bignum/1': '1-80815e3f8256195a2a1afd9d0ee154de',
    'bignum/2': '2-ce5ba420afb4f646e38731812f5dde87',
    'bignum/3-deleted': '3-7ea71db2c6c853fefde408b52b56bc70',
    'bignum/4-recreated': '4-008cb59e8bb94a8cdca69dbf070369a3',
    'empty/1': '1-967a00dff5e02add41819138abb3284d',
    'empty/2': '2-7051cbe5c8faecd085a3fa619e6e6337',
    'empty/3-deleted': '3-7379b9e515b161226c6559d90c4dc49f',
    'empty/4-recreated': '4-901a49d84ee911ece5cd32c741ed27cc',
    'float_exp/1': '1-fcb573f41c731df1c79b9d2a8111e8e7',
    'float_exp/2': '2-e68cba6be414893f4dc7b63fa69c9561',
    'float_exp/3-deleted': '3-2d9545401a6ea0a5f24b9ae0aa181942',
    'float_exp/4-recreated': '4-b0f116becd2c69d38e8264053883824c',
    'float_one/1': '1-8a159b695bf2bd957f1a435bfd6e1739',
    'float_one/2': '2-fff4b8aa880342daf00bc4777b9a01b1',
    'float_one/3-deleted': '3-f60a3cc721fd3e45373f672c038d9684',
    'float_one/4-recreated': '4-b677a957cb04cf4dc531d3107a351563',
    'floats/1': '1-916208e9366f0f47b536784ea858ff5b',
    'floats/2': '2-192d77b746541a15f37fce19f45cc6f3',
    'floats/3-deleted': '3-c94e03c5fa6cf2c29022d8eb41d1a49b',
    'floats/4-recreated': '4-15b04605984304b57d55d9695e8739a4',
    'i32_edges/1': '1-1aae40fdc289c203dac28c6a66629f0e',
    'i32_edges/2': '2-260cb9296e1e00bd43384ce831ede3bb',
    'i32_edges/3-deleted': '3-370bde22ccf0b45af59d14b7436414ea',
    'i32_edges/4-recreated': '4-eff23f87dd02b30109064b140b96d396',
    'int/1': '1-23202479633c2b380f79507a776743d5',
    'int/2': '2-28b0871b96782f88a644f93a6afa52bf',
    'int/3-deleted': '3-b6650f48779e3dc2e2f2b3cae94444ad',
    'int/4-recreated': '4-f1d19c14e4d9b9d42acf58237d0adf20',
    'neg_zero_float/1': '1-79e62e17829588afea5328e32c7e34af',
    'neg_zero_float/2': '2-b8c3975fc87e5cc3d7a192392c2b7666',
    'neg_zero_float/3-deleted': '3-1d92b0d194c6947efc91cf072824afbd',
    'neg_zero_float/4-recreated': '4-881a06eab87931a8288db9a8a682670c',
    'neg_zero_int/1': '1-dcf485487e051d7f9b7c62bd4265a425',
    'neg_zero_int/2': '2-6b6b3dcb27c6b16bb8c301a73edc2606',
    'neg_zero_int/3-deleted': '3-b3809b2fd03e321f14f9dfe799a2e9e8',
    'neg_zero_int/4-recreated': '4-1a477651fb5a9bd55253163e4d828ee1',
    'nested/1': '1-19c6b2c8ba85846f56a8b7f6458798da',
    'nested/2': '2-470532fbf333928d22eb975847a57acc',
    'nested/3-deleted': '3-cf1c05191d4e2e4b4cb410df296f8b9b',
    'nested/4-recreated': '4-b992b051e853e98fb095b92fb9ce7afc',
    'order/1': '1-6895dd91f7f58970099003c6dab16b30',
    'order/2': '2-bf31ada3a0d371f28484db2fb0eb5095',
    'order/3-deleted': '3-6fd966a432d9921700b61a873f9440c9',
    'order/4-recreated': '4-6992f4c26424a6cdcaa7bd553784937b',
    'small_int_list/1': '1-5b6f3fe59ce3a6be33e7d5ffc8ab5e24',
    'small_int_list/2': '2-1ac54a776ee7a30779fff55a25971dd0',
    'small_int_list/3-deleted': '3-6ade5b273386d0a0eda778bfe720477b',
    'small_int_list/4-recreated': '4-4850a1882f4626a9f7fe2753e641eb47',
    'strings/1': '1-ef11ad2560a040b8b13c4c3c6e480ac6',
    'strings/2': '2-dc529104f4830f137207d958e728bf09',
    'strings/3-deleted': '3-344b6570ca074ff684e59ddadd79372c',
    'strings/4-recreated': '4-74d2484d1b474bd9a62fde7c8af44ec9',
    'underscore_fields/1': '1-fa3028d79dc135a2e7d4a5f8bdee4c16',
    'underscore_fields/2': '2-d2718462fd975a79836b6a1ec3f24171',
    'underscore_fields/3-deleted': '3-17a36d1eae6ab661c260b1b602b5e511',
    'underscore_fields/4-recreated': '4-26834619e0caaf634ae2a70234a3b9e6',
    'unicode/1': '1-7ec797e703a2a9aa5a3aa826521356af',
    'unicode/2': '2-e12d151990dda08a02afd7712248f6e8',
    'unicode/3-deleted': '3-6833abbe67eb4afe3cd212b7a9703fe2',
    'unicode/4-recreated': '4-ff5089e70eba1a60b6797ee1ec80b6e8',
    'post/1': '1-d79e11cae916a2b4bddef09be195a3e5',
    'bulk/b1': '1-7a7e4b29f3af401e69b6f86e4c26b727',
    'bulk/b2': '1-850345699bc1dae8344f3874b129330b',
    'bulk/b1-deleted': '2-0fdbbac857998128d406b0379ee20a9c',
    'att/1-inline': '1-672395e16145ad36581b4b3152ef9727',
    'att/2-standalone-put': '2-f6069898d0aabd83ca70ef898aa66dbf',
    'att/3-stubs-reordered': '3-2cb54911143ab43ebc1d423c08c542fc',
    'att/4-standalone-delete': '4-1a5a8a9e80aa20fad687fac5c73dc908',
    'att/5-standalone-replace': '5-65b9e7555ffe3b09db33e9e57dc0c316',
    'att/standalone-new-doc': '1-da0c51a1a3244cf160e1c8d5fd0bb5d8',
    'att/inline-default-type': '1-019b5b0e82a5a69933a089968803ae6a',
    'text/1-inline': '1-49d20925c22b8d93c209dcc0e08af699',
    'text/2-stub': '2-839f0a86dbb2d1bde23fda0c053da37e',
    'text/json-html-png': '1-191befd6e4a6799aa364b147f5e3a802',
    'text/standalone-200k': '2-f15109be4b3e4eb4067e12c89ad928d6',
    'text/standalone-200k-stub': '3-6928a3d2a57d4480437f702868a0654b',
    'text/js-xml-empty': '1-ca7834c7b881d16adae12511d817c43a',
}


class Revs:
    """Collects (step, rev) pairs and compares them with EXPECTED, or prints them when recording."""

    def __init__(self):
        self.seen = {}

    def check(self, step, rev):
        self.seen[step] = rev
        if not RECORD:
            assert rev == EXPECTED[step], f"{step}: {rev} (CouchDB 3.4.3: {EXPECTED[step]})"


@pytest.fixture
def revs():
    collected = Revs()
    yield collected
    if RECORD:
        for step, rev in collected.seen.items():
            print(f"    {step!r}: {rev!r},")


def ok_rev(response):
    assert response.status_code in (200, 201, 202), response.text
    return response.json()["rev"]


def put_raw(couch, path, body, content_type="application/json", **params):
    return couch.put(path, data=body, headers={"Content-Type": content_type}, params=params)


@pytest.mark.parametrize("name", sorted(BODIES))
def test_rev_of_new_updated_and_deleted_document(couch, db, revs, name):
    body = BODIES[name]
    first = ok_rev(put_raw(couch, f"/{db}/doc", body))
    revs.check(f"{name}/1", first)
    second = ok_rev(put_raw(couch, f"/{db}/doc", body, rev=first))
    revs.check(f"{name}/2", second)
    third = ok_rev(couch.delete(f"/{db}/doc", params={"rev": second}))
    revs.check(f"{name}/3-deleted", third)
    # Recreating a deleted document extends its deleted branch: the parent is the deleted leaf.
    fourth = ok_rev(put_raw(couch, f"/{db}/doc", body))
    revs.check(f"{name}/4-recreated", fourth)


def test_rev_of_posted_and_bulk_documents(couch, db, revs):
    r = couch.post(f"/{db}", data=b'{"_id":"posted","k":[1,"two",3.0]}', headers={"Content-Type": "application/json"})
    revs.check("post/1", ok_rev(r))
    r = couch.post(f"/{db}/_bulk_docs", data=b'{"docs":[{"_id":"b1","v":1},{"_id":"b2","v":{"w":[]}}]}',
                   headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    rows = r.json()
    revs.check("bulk/b1", rows[0]["rev"])
    revs.check("bulk/b2", rows[1]["rev"])
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": [{"_id": "b1", "_rev": rows[0]["rev"], "_deleted": True,
                                                         "kept": "fields of a deletion are hashed"}]})
    revs.check("bulk/b1-deleted", r.json()[0]["rev"])


def inline(data, content_type):
    return {"content_type": content_type, "data": base64.b64encode(data).decode()}


def test_rev_of_attachment_edits(couch, db, revs):
    # Two inline attachments, deliberately not in name order: CouchDB hashes them in document order.
    doc = {"k": "v", "_attachments": {"z.jpg": inline(PHOTO, "image/jpeg"), "a.png": inline(PNG, "image/png")}}
    first = ok_rev(couch.put(f"/{db}/photo", json=doc))
    revs.check("att/1-inline", first)
    r = couch.put(f"/{db}/photo/new.jpg", params={"rev": first}, data=PHOTO[::-1],
                  headers={"Content-Type": "image/jpeg"})
    second = ok_rev(r)
    revs.check("att/2-standalone-put", second)
    assert list(couch.get(f"/{db}/photo").json()["_attachments"]) == ["new.jpg", "z.jpg", "a.png"]
    stubs = {"_rev": second, "k": "v2", "_attachments": {n: {"stub": True} for n in ("a.png", "new.jpg", "z.jpg")}}
    third = ok_rev(couch.put(f"/{db}/photo", json=stubs))
    revs.check("att/3-stubs-reordered", third)
    assert list(couch.get(f"/{db}/photo").json()["_attachments"]) == ["a.png", "new.jpg", "z.jpg"]
    fourth = ok_rev(couch.delete(f"/{db}/photo/new.jpg", params={"rev": third}))
    revs.check("att/4-standalone-delete", fourth)
    replaced = ok_rev(couch.put(f"/{db}/photo/a.png", params={"rev": fourth}, data=PNG[::-1],
                                headers={"Content-Type": "image/png"}))
    revs.check("att/5-standalone-replace", replaced)


def test_rev_of_attachment_without_content_type(couch, db, revs):
    r = couch.put(f"/{db}/standalone/x.bin", data=b"\x00\x01")
    revs.check("att/standalone-new-doc", ok_rev(r))
    r = couch.put(f"/{db}/inline", json={"_attachments": {"x": {"data": "AAE="}}})
    revs.check("att/inline-default-type", ok_rev(r))


def test_rev_of_text_like_attachments(couch, db, revs):
    """CouchDB gzips text-like attachments (level 8) and hashes the md5 of that gzip; couchlite stores them as sent
    and hashes CouchDB's md5 all the same, also when the attachment comes back as a stub."""
    doc = {"a": 1, "_attachments": {"note.txt": inline(b"hello hello hello\n", "text/plain")}}
    first = ok_rev(couch.put(f"/{db}/t1", json=doc))
    revs.check("text/1-inline", first)
    stub = {"_rev": first, "a": 2, "_attachments": {"note.txt": {"stub": True}}}
    revs.check("text/2-stub", ok_rev(couch.put(f"/{db}/t1", json=stub)))
    mixed = {"x": True, "_attachments": {
        "d.json": inline(b'{"k":[1,2,3]}', "application/json; charset=utf-8"),
        "p.html": inline(b"<p>hi</p>", "TEXT/HTML"), "bin": inline(b"\x89PNG....", "image/png")}}
    revs.check("text/json-html-png", ok_rev(couch.put(f"/{db}/t2", json=mixed)))
    # 200 KB through the standalone API: many deflate blocks, then kept as a stub.
    rng = random.Random(7)
    big = ("".join(rng.choice("abcdefghij ") for _ in range(200_000)) + "\n").encode()
    base = ok_rev(couch.put(f"/{db}/t3", json={"y": 1}))
    second = ok_rev(couch.put(f"/{db}/t3/big.txt", params={"rev": base}, data=big,
                              headers={"Content-Type": "text/plain"}))
    revs.check("text/standalone-200k", second)
    stub = {"_rev": second, "y": 2, "_attachments": {"big.txt": {"stub": True}}}
    revs.check("text/standalone-200k-stub", ok_rev(couch.put(f"/{db}/t3", json=stub)))
    scripts = {"_attachments": {"s.js": inline(b"function(){}", "application/javascript"),
                                "x.xml": inline(b"<a/>", "application/xml"), "e.txt": inline(b"", "text/plain")}}
    revs.check("text/js-xml-empty", ok_rev(couch.put(f"/{db}/t4", json=scripts)))
