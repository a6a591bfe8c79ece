"""A drop is create-only (issue 29, item 2): with `couchlite receive`'s one-time credentials a revision may be
written only to a document these credentials created. Another sender's photo (here: one sent in an earlier session
of the same drop, with the credentials of that session) can be neither deleted nor replaced, and no answer tells
whether an id exists: existing ids of others answer exactly as absent ones do. couchlite-only (CouchDB has no drop
credentials), so these start a real `couchlite receive`."""

from __future__ import annotations

import random

import pytest
import requests

from processes import process_fixture
from receive_support import Receiver, inline_doc, photo


@pytest.fixture
def receivers(request):
    import os
    binary = os.environ["COUCHLITE_BIN"]

    def make(root: str, index: int, *flags: str, name: str | None = None) -> Receiver:
        return Receiver(binary, root, *flags, name=name or f"receiver{index}")

    yield from process_fixture(request, "couchlite-drop-", make)


def bulk(receiver: Receiver, docs: list[dict], session: requests.Session | None = None) -> requests.Response:
    s = session or receiver.session()
    return s.post(f"{receiver.base}/{receiver.db}/_bulk_docs", json={"docs": docs, "new_edits": False})


@pytest.fixture
def drop(receivers):
    """A receiver whose database holds `victim`, a photo sent with the credentials of an earlier session; the
    receiver now runs with new credentials (the attacker's)."""
    receiver = receivers()
    receiver.start()
    victim = inline_doc("victim", {"v.jpg": ("image/jpeg", photo("jpg", 200, random.Random(7)))})
    r = bulk(receiver, [victim])
    assert r.status_code == 201 and r.json() == [], r.text
    receiver.stop()
    receiver.start()
    assert receiver.admin().get(f"{receiver.base}/{receiver.db}/victim").status_code == 200
    receiver.victim_rev = victim["_rev"]
    return receiver


def victim_state(receiver: Receiver) -> dict:
    r = receiver.admin().get(f"{receiver.base}/{receiver.db}/victim", params={"conflicts": "true", "revs_info": "true"})
    assert r.status_code == 200, r.text
    doc = r.json()
    return {"rev": doc["_rev"], "conflicts": doc.get("_conflicts"), "revs": [i["rev"] for i in doc["_revs_info"]],
            "attachments": sorted(doc.get("_attachments", {}))}


def test_drop_credentials_cannot_delete_a_photo_they_did_not_send(drop):
    s, base, db = drop.session(), drop.base, drop.db
    before = victim_state(drop)
    r = s.put(f"{base}/{db}/victim", json={"_rev": drop.victim_rev, "_deleted": True})
    # As on a missing document: a rev that is not there is a conflict.
    absent = s.put(f"{base}/{db}/never-there", json={"_rev": drop.victim_rev, "_deleted": True})
    assert (r.status_code, r.json()) == (absent.status_code, absent.json()) == (409, {
        "error": "conflict", "reason": "Document update conflict."})
    assert s.delete(f"{base}/{db}/victim", params={"rev": drop.victim_rev}).status_code == 403
    # Nor inside _bulk_docs, interactively.
    r = s.post(f"{base}/{db}/_bulk_docs", json={"docs": [{"_id": "victim", "_rev": drop.victim_rev,
                                                          "_deleted": True}]})
    assert r.status_code == 201 and r.json()[0]["error"] == "conflict", r.text
    assert victim_state(drop) == before


def test_drop_credentials_cannot_replace_a_photo_with_a_higher_generation(drop):
    before = victim_state(drop)
    victim_hash = drop.victim_rev.split("-", 1)[1]
    forged = {"_id": "victim", "_rev": "9-" + "f" * 32, "evil": True,
              "_revisions": {"start": 9, "ids": ["f" * 32] + [f"{i:032x}" for i in range(7)] + [victim_hash]}}
    deletion = {"_id": "victim", "_rev": "2-" + "e" * 32, "_deleted": True,
                "_revisions": {"start": 2, "ids": ["e" * 32, victim_hash]}}
    for doc in (forged, deletion):
        r = bulk(drop, [doc])
        # What a new id answers: success, no item.
        assert (r.status_code, r.json()) == (201, []), r.text
        # PUT ?new_edits=false, as the CouchDB replicator sends documents with attachments.
        r = drop.session().put(f"{drop.base}/{drop.db}/victim", params={"new_edits": "false"}, json=doc)
        assert r.status_code == 201 and r.json()["rev"] == doc["_rev"], r.text
    assert victim_state(drop) == before
    # And the forged revs are not in the database as a conflict branch either.
    r = drop.admin().get(f"{drop.base}/{drop.db}/victim", params={"open_revs": "all"},
                         headers={"Accept": "application/json"})
    assert [item["ok"]["_rev"] for item in r.json()] == [drop.victim_rev]


def test_drop_credentials_revs_diff_reveals_no_possible_ancestors(drop):
    s, base, db = drop.session(), drop.base, drop.db
    asked = {"victim": ["2-" + "a" * 32, drop.victim_rev], "absent": ["2-" + "a" * 32, drop.victim_rev]}
    r = s.post(f"{base}/{db}/_revs_diff", json=asked)
    assert r.status_code == 200
    answer = r.json()
    # The existing id of another sender is reported exactly as an absent one: all missing, no possible_ancestors.
    assert answer["victim"] == answer["absent"] == {"missing": asked["victim"]}, answer
    r = s.post(f"{base}/{db}/_missing_revs", json=asked)
    assert r.json()["missing_revs"]["victim"] == r.json()["missing_revs"]["absent"] == asked["victim"]
    # An admin still sees the truth.
    r = drop.admin().post(f"{base}/{db}/_revs_diff", json={"victim": ["2-" + "a" * 32]})
    assert r.json()["victim"]["possible_ancestors"] == [drop.victim_rev]


def test_drop_credentials_put_does_not_tell_which_ids_exist(drop):
    s, base, db = drop.session(), drop.base, drop.db
    before = victim_state(drop)
    existing = s.put(f"{base}/{db}/victim", json={"probe": 1})
    absent = s.put(f"{base}/{db}/absent-probe", json={"probe": 1})
    # The same answer, rev included (a new document's rev depends on its content, not on its id).
    assert existing.status_code == absent.status_code == 201, (existing.text, absent.text)
    assert existing.json()["rev"] == absent.json()["rev"]
    # A second PUT without a rev conflicts for both; an edit of the acknowledged rev succeeds for both.
    assert s.put(f"{base}/{db}/victim", json={"probe": 2}).status_code == 409
    assert s.put(f"{base}/{db}/absent-probe", json={"probe": 2}).status_code == 409
    rev = absent.json()["rev"]
    e2 = s.put(f"{base}/{db}/victim", json={"_rev": rev, "probe": 3})
    a2 = s.put(f"{base}/{db}/absent-probe", json={"_rev": rev, "probe": 3})
    assert e2.status_code == a2.status_code == 201 and e2.json()["rev"] == a2.json()["rev"]
    # _revs_diff answers both the same way afterwards.
    r = s.post(f"{base}/{db}/_revs_diff", json={"victim": [rev, e2.json()["rev"], "9-x"],
                                                 "absent-probe": [rev, a2.json()["rev"], "9-x"]})
    assert r.json()["victim"] == r.json()["absent-probe"] == {"missing": ["9-x"]}, r.json()
    assert victim_state(drop) == before
    # What the drop created is there, the victim untouched.
    assert drop.admin().get(f"{base}/{db}/absent-probe").json()["probe"] == 3


def test_drop_credentials_cannot_read_local_documents_they_did_not_write(drop):
    s, admin, base, db = drop.session(), drop.admin(), drop.base, drop.db
    assert admin.put(f"{base}/{db}/_local/someone-elses-checkpoint", json={"last_seq": "42", "secret": 1}
                     ).status_code == 201
    r = s.get(f"{base}/{db}/_local/someone-elses-checkpoint")
    absent = s.get(f"{base}/{db}/_local/never-written")
    assert (r.status_code, r.json()) == (absent.status_code, absent.json()) == (404, {
        "error": "not_found", "reason": "missing"})
    # Its own checkpoints stay readable, as every replicator needs.
    assert s.put(f"{base}/{db}/_local/mine", json={"last_seq": "1"}).status_code == 201
    assert s.get(f"{base}/{db}/_local/mine").json()["last_seq"] == "1"


def test_drop_credentials_still_update_what_they_created(drop):
    """A sender's own documents behave as on CouchDB: a resent or edited revision lands."""
    s, base, db = drop.session(), drop.base, drop.db
    doc = inline_doc("mine", {"m.jpg": ("image/jpeg", photo("jpg", 100, random.Random(3)))})
    assert bulk(drop, [doc]).json() == []
    rev1 = doc["_rev"]
    r = s.post(f"{base}/{db}/_revs_diff", json={"mine": [rev1, "2-" + "b" * 32]})
    assert r.json() == {"mine": {"missing": ["2-" + "b" * 32]}}
    edit = {"_id": "mine", "_rev": "2-" + "b" * 32, "x": 1,
            "_revisions": {"start": 2, "ids": ["b" * 32, rev1.split("-", 1)[1]]}}
    assert bulk(drop, [edit]).json() == []
    assert drop.admin().get(f"{base}/{db}/mine").json()["_rev"] == "2-" + "b" * 32


def test_drop_session_cannot_fill_the_disk_past_max_size(receivers):
    """Issue 29, item 8: what one drop session may store is bounded by --max-size (default: leave 10 % of the
    disk free, at most half the free space); beyond it the write is 507 as CouchDB answers a full disk, nothing of
    it is stored, and the summary says how much was refused."""
    receiver = receivers("--max-size", "300k")
    receiver.start()
    rng = random.Random(29)
    first = inline_doc("first", {"a.jpg": ("image/jpeg", photo("jpg", 200_000, rng))})
    assert bulk(receiver, [first]).json() == []
    second = inline_doc("second", {"b.jpg": ("image/jpeg", photo("jpg", 200_000, rng))})
    r = bulk(receiver, [second])
    assert r.status_code == 507, r.text
    assert r.json()["error"] == "insufficient_storage" and r.json()["reason"], r.json()
    # As a single PUT too (the CouchDB replicator sends photos with PUT ?new_edits=false).
    r = receiver.session().put(f"{receiver.base}/{receiver.db}/second", params={"new_edits": "false"}, json=second)
    assert r.status_code == 507, r.text
    admin = receiver.admin()
    assert admin.get(f"{receiver.base}/{receiver.db}/first").status_code == 200
    assert admin.get(f"{receiver.base}/{receiver.db}/second").status_code == 404
    # Small writes still fit (checkpoints are counted too, and this one fits).
    assert receiver.session().put(f"{receiver.base}/{receiver.db}/_local/cp", json={"last_seq": "1"}).status_code == 201
    assert receiver.stop() == 0
    assert "refused (past --max-size)" in receiver.log_text(), receiver.log_tail()


def test_drop_local_documents_count_against_max_size(receivers):
    """Issue 35, item 3: under a 1 MB --max-size, `_local` PUTs of 300 KB stop at the bound (12 × 4 MB were
    stored under 20 MB before): every byte the drop stores is charged."""
    receiver = receivers("--max-size", "1M")
    receiver.start()
    s = receiver.session()
    statuses = [s.put(f"{receiver.base}/{receiver.db}/_local/big-{n}", json={"fill": "x" * 300_000}).status_code
                for n in range(6)]
    assert statuses.count(201) <= 3 and statuses[-1] == 507, statuses
    # Ids that would make the ledger's memory grow without bound are refused as CouchDB refuses a long id.
    r = s.post(f"{receiver.base}/{receiver.db}/_bulk_docs", json={"docs": [{"_id": "k" * 8192}]})
    assert (r.status_code, r.json()["error"]) == (400, "illegal_docid"), r.text


@pytest.mark.parametrize("owner,twin", [("Kids-album", "\u212aids-album"), ("caf\u00e9", "cafe\u0301")])
def test_drop_credentials_unicode_twin_cannot_replace_the_owners_document(drop, owner, twin):
    """Issue 35, item 4: ids are compared by bytes. Creating the Kelvin-sign (or NFD) twin of the owner's id
    does not make the owner's document the sender's."""
    admin, s, base, db = drop.admin(), drop.session(), drop.base, drop.db
    r = admin.post(f"{base}/{db}/_bulk_docs", json={"docs": [{"_id": owner, "owner": True}]})
    owner_rev = r.json()[0]["rev"]
    assert s.post(f"{base}/{db}/_bulk_docs", json={"docs": [{"_id": twin}]}).json()[0]["ok"] is True
    r = s.post(f"{base}/{db}/_bulk_docs", json={"docs": [{"_id": owner, "_rev": owner_rev, "_deleted": True}]})
    assert r.json()[0]["error"] == "conflict", r.text
    forged = {"_id": owner, "_rev": "9-" + "f" * 32, "evil": True,
              "_revisions": {"start": 9, "ids": ["f" * 32] + [f"{i:032x}" for i in range(7)]
                             + [owner_rev.split("-")[1]]}}
    assert bulk(drop, [forged], s).status_code == 201
    doc = admin.post(f"{base}/{db}/_all_docs", params={"include_docs": "true"}, json={"keys": [owner]}).json()
    row = doc["rows"][0]
    assert row["value"]["rev"] == owner_rev and "evil" not in row["doc"], doc


def test_drop_credentials_unicode_twin_cannot_read_the_owners_local_document(drop):
    admin, s, base, db = drop.admin(), drop.session(), drop.base, drop.db
    assert admin.put(f"{base}/{db}/_local/Kcheckpoint", json={"secret": 1}).status_code == 201
    assert s.put(f"{base}/{db}/_local/%E2%84%AAcheckpoint", json={"mine": 1}).status_code == 201
    assert s.get(f"{base}/{db}/_local/Kcheckpoint").status_code == 404


def test_drop_credentials_database_info_does_not_tell_which_ids_exist(drop):
    """Issue 35, item 4: `doc_count` (and `update_seq`, `sizes`) moved when a probe created an absent id and not
    when it hit an existing one; the drop sees only its own counts."""
    s, base, db = drop.session(), drop.base, drop.db
    before = s.get(f"{base}/{db}").json()
    assert before["db_name"] == db and before["doc_count"] == 0, before
    assert s.put(f"{base}/{db}/victim", json={}).status_code == 201   # shadowed: the victim exists
    assert s.get(f"{base}/{db}").json() == before
    assert s.put(f"{base}/{db}/brand-new", json={}).status_code == 201
    assert s.get(f"{base}/{db}").json()["doc_count"] == 1
    assert drop.admin().get(f"{base}/{db}").json()["doc_count"] == 2


def test_drop_credentials_cannot_overwrite_or_delete_the_owners_checkpoint(drop):
    """Issue 35, item 6: a drop sender may touch only the `_local` documents it created; a write to the owner's
    replication checkpoint is answered as on an absent one and stores nothing."""
    admin, s, base, db = drop.admin(), drop.session(), drop.base, drop.db
    assert admin.put(f"{base}/{db}/_local/owner-checkpoint", json={"last_seq": "42"}).status_code == 201
    r = s.put(f"{base}/{db}/_local/owner-checkpoint", json={"last_seq": "0"})
    absent = s.put(f"{base}/{db}/_local/never-there", json={"last_seq": "0"})
    assert (r.status_code, r.json()["rev"]) == (absent.status_code, absent.json()["rev"]) == (201, "0-1")
    r = s.post(f"{base}/{db}/_bulk_docs", json={"docs": [{"_id": "_local/owner-checkpoint", "_deleted": True}]})
    assert r.status_code == 201, r.text
    assert s.delete(f"{base}/{db}/_local/owner-checkpoint").status_code == 403
    kept = admin.get(f"{base}/{db}/_local/owner-checkpoint")
    assert kept.status_code == 200 and kept.json()["last_seq"] == "42", kept.text
    assert s.get(f"{base}/{db}/_local/owner-checkpoint").status_code == 404


@pytest.mark.parametrize("value", ["", "12X", "-5", "1.5G", "99999999999999999999G"])
def test_bad_max_size_exits_64(value):
    import os
    import subprocess
    r = subprocess.run([os.environ["COUCHLITE_BIN"], "receive", "--max-size", value], capture_output=True, timeout=30)
    assert r.returncode == 64, r
