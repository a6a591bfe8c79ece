"""Multi-queries (CouchDB 2.2+): `POST /db/_all_docs/queries`, `/db/_design_docs/queries` and
`/db/_design/d/_view/v/queries` answer `{"queries":[…]}` with `{"results":[…]}`, one result per query, each what
the query alone would answer; URL parameters apply to every query unless the query sets its own. Checked against
CouchDB 3.4.3."""

import pytest

DESIGN = {"views": {"v": {"map": "function (doc) { if (doc.n) emit(doc.n, doc._id); }", "reduce": "_count"}}}


@pytest.fixture
def filled(couch, db):
    docs = [{"_id": name, "n": n} for n, name in enumerate(["a", "b", "c", "d"], start=1)]
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": docs + [{"_id": "_design/d", **DESIGN}]})
    assert r.status_code == 201, r.text
    return db


def ids(result):
    return [row.get("id", row.get("key")) for row in result["rows"]]


def test_all_docs_queries_answer_each_query_as_it_would_be_alone(couch, filled):
    queries = [{"keys": ["b", "zz"]}, {"limit": 1, "skip": 1}, {"startkey": "c", "endkey": "d", "inclusive_end": False},
               {"descending": True, "include_docs": True, "limit": 2}]
    r = couch.post(f"/{filled}/_all_docs/queries", json={"queries": queries})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len(results) == 4
    assert results[0]["rows"][1] == {"key": "zz", "error": "not_found"} and ids(results[0]) == ["b", "zz"]
    assert ids(results[1]) == ["a"] and results[1]["offset"] == 1
    assert ids(results[2]) == ["c"]
    assert ids(results[3]) == ["d", "c"] and results[3]["rows"][0]["doc"]["n"] == 4
    for query, result in zip(queries, results):
        alone = couch.post(f"/{filled}/_all_docs", json={"keys": query["keys"]}) if "keys" in query else \
            couch.get(f"/{filled}/_all_docs", params={k: str(v).lower() if isinstance(v, bool) else
                                                        (f'"{v}"' if k in ("startkey", "endkey") else v)
                                                        for k, v in query.items()})
        assert result == alone.json(), query


def test_url_parameters_apply_to_every_query_that_does_not_set_its_own(couch, filled):
    r = couch.post(f"/{filled}/_all_docs/queries", params={"limit": "1"}, json={"queries": [{}, {"skip": 2}]})
    assert [ids(result) for result in r.json()["results"]] == [["_design/d"], ["b"]]


def test_design_docs_queries_list_only_design_documents(couch, filled):
    r = couch.post(f"/{filled}/_design_docs/queries", json={"queries": [{}, {"keys": ["a", "_design/d"]}]})
    assert r.status_code == 200, r.text
    assert [ids(result) for result in r.json()["results"]] == [["_design/d"], ["_design/d"]]


def test_view_queries_map_and_reduce_in_one_request(couch, filled):
    queries = [{"reduce": False, "limit": 2}, {}, {"reduce": False, "keys": [3, 1]}, {"group": True, "startkey": 3}]
    r = couch.post(f"/{filled}/_design/d/_view/v/queries", json={"queries": queries})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [row["key"] for row in results[0]["rows"]] == [1, 2] and results[0]["total_rows"] == 4
    assert results[1] == {"rows": [{"key": None, "value": 4}]}
    assert [row["id"] for row in results[2]["rows"]] == ["c", "a"]
    assert results[3]["rows"] == [{"key": 3, "value": 1}, {"key": 4, "value": 1}]


def test_no_queries_is_no_results(couch, filled):
    for path in ("_all_docs/queries", "_design/d/_view/v/queries"):
        r = couch.post(f"/{filled}/{path}", json={"queries": []})
        assert (r.status_code, r.json()) == (200, {"results": []})


@pytest.mark.parametrize("body, reason", [
    ({}, "POST body must include `queries` parameter."),
    ({"queries": {}}, "`queries` member must be an array."),
])
def test_a_body_without_a_queries_array_is_refused(couch, filled, body, reason):
    for path in ("_all_docs/queries", "_design/d/_view/v/queries"):
        r = couch.post(f"/{filled}/{path}", json=body)
        assert (r.status_code, r.json()) == (400, {"error": "bad_request", "reason": reason}), path


def test_a_bad_query_among_good_ones_is_refused_before_any_answer(couch, filled):
    r = couch.post(f"/{filled}/_all_docs/queries", json={"queries": [{}, {"limit": -1}]})
    assert r.status_code == 400 and r.json()["error"] == "query_parse_error", r.text
    r = couch.post(f"/{filled}/_design/d/_view/v/queries", json={"queries": [{}, {"group_level": -1}]})
    assert r.status_code == 400 and r.json()["error"] == "query_parse_error", r.text


def test_queries_of_a_missing_view_is_404(couch, filled):
    r = couch.post(f"/{filled}/_design/d/_view/nope/queries", json={"queries": [{}]})
    assert r.status_code == 404 and r.json()["error"] == "not_found", r.text


def test_queries_is_post_only(couch, filled):
    r = couch.get(f"/{filled}/_all_docs/queries")
    assert (r.status_code, r.json()) == (405, {"error": "method_not_allowed", "reason": "Only POST allowed"})
