"""View key collation: CouchDB's order across types and ICU's order of strings, as CouchDB 3.4.3 answers it."""

import pytest

from test_views import bulk, ddoc, rows

EMIT_K = "function(doc) { if (doc.n !== undefined) emit(doc.k, null); }"

ACROSS_TYPES = [
    None, False, True, -5, 0, 1, 2.5, 3, 1e20,
    "", " ", "_", "-", ",", "!", "?", ".", "(", "[", "{", "@", "*", "/", "&", "#", "%", "^", "+", "<", "=", ">",
    "|", "~", "$", "0", "1", "9", "a", "A", "\u00e4", "a b", "a-b", "aa", "ab", "aB", "Ab", "AB", "ab-", "\u00e6",
    "b", "B", "e", "E", "\u00e9", "\u00c9", "ss", "\u00df", "z", "Z", "\u03c9", "\u03a9", "\u30a2", "\u65e5",
    [], [None], [1], [1, 2], ["a"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], [[]], [{}],
    {}, {"a": 1}, {"a": 2}, {"b": 1}, {"b": 2}, {"b": 2, "a": 1}, {"b": 2, "c": 2},
]


@pytest.mark.parametrize("descending", [False, True])
def test_keys_collate_across_types(couch, ordered_db, descending):
    # Shuffled ids, so that an order by id or by insertion cannot pass for the key order.
    docs = [{"_id": f"doc-{(i * 37) % 101:03d}", "n": i, "k": k} for i, k in enumerate(ACROSS_TYPES)]
    bulk(couch, ordered_db, docs)
    ddoc(couch, ordered_db, "c", {"k": {"map": EMIT_K}})
    got = [r["key"] for r in rows(couch, ordered_db, "c/_view/k", descending=descending)]
    expected = list(reversed(ACROSS_TYPES)) if descending else ACROSS_TYPES
    assert got == expected


def test_equal_keys_are_ordered_by_doc_id_and_ranges_use_collation(couch, ordered_db):
    bulk(couch, ordered_db, [{"_id": i, "n": 1, "k": k} for i, k in [("b", 1), ("a", 1.0), ("c", "a"), ("d", "A")]])
    ddoc(couch, ordered_db, "c", {"k": {"map": EMIT_K}})
    assert [r["id"] for r in rows(couch, ordered_db, "c/_view/k")] == ["a", "b", "c", "d"]
    # 1 and 1.0 are the same key; "a" and "A" are not, and "a" sorts first.
    assert [r["id"] for r in rows(couch, ordered_db, "c/_view/k", key=1)] == ["a", "b"]
    assert [r["id"] for r in rows(couch, ordered_db, "c/_view/k", startkey="a", endkey="a")] == ["c"]
    assert [r["id"] for r in rows(couch, ordered_db, "c/_view/k", startkey="a", endkey="\ufff0")] == ["c", "d"]
