"""GET/POST /_dbs_info: `GET /db` for many databases at once (server admins only)."""

import requests


def test_post_keys_answers_each_in_order(couch, db_factory):
    a, b = db_factory("dbsinfo"), db_factory("dbsinfo")
    couch.put(f"/{a}/doc", json={})
    r = couch.post("/_dbs_info", json={"keys": [b, "ct-no-such-db", a, 1]})
    assert r.status_code == 200, r.text
    rows = r.json()
    assert [row["key"] for row in rows] == [b, "ct-no-such-db", a, 1]
    assert rows[0]["info"]["db_name"] == b and rows[0]["info"]["doc_count"] == 0
    assert rows[1] == {"key": "ct-no-such-db", "error": "not_found"}
    assert rows[2]["info"]["doc_count"] == 1
    assert set(rows[2]["info"]) >= {"update_seq", "purge_seq", "sizes", "cluster", "doc_del_count"}
    assert rows[3] == {"key": 1, "error": "not_found"}
    assert couch.post("/_dbs_info", json={"keys": []}).json() == []


def test_get_takes_all_dbs_parameters(couch, db_factory):
    a = db_factory("dbsinfo")
    r = couch.get("/_dbs_info", params={"start_key": f'"{a}"', "limit": "1"})
    assert r.status_code == 200
    assert [row["key"] for row in r.json()] == [a]
    assert r.json()[0]["info"]["db_name"] == a
    names = couch.get("/_all_dbs", params={"descending": "true", "limit": "2"}).json()
    rows = couch.get("/_dbs_info", params={"descending": "true", "limit": "2"}).json()
    assert [row["key"] for row in rows] == names


def test_refused_bodies(couch):
    cases = (({}, "`keys` member must exist."), ({"keys": "x"}, "`keys` member must be an array."))
    for body, reason in cases:
        r = couch.post("/_dbs_info", json=body)
        assert r.status_code == 400 and r.json() == {"error": "bad_request", "reason": reason}
    r = couch.post("/_dbs_info", data='{"keys":[]}', headers={"Content-Type": "text/plain"})
    assert r.status_code == 415
    r = couch.put("/_dbs_info")
    assert r.status_code == 405 and r.json()["reason"] == "Only GET,HEAD,POST allowed"


def test_huge_keys_list_is_refused(couch):
    # max_db_number_for_dbs_info_req (100): one request may not make the server open every database.
    r = couch.post("/_dbs_info", json={"keys": [f"ct-x{i}" for i in range(101)]})
    assert r.status_code == 400 and r.json() == {"error": "bad_request", "reason": "too_many_keys"}
    r = couch.post("/_dbs_info", json={"keys": [f"ct-x{i}" for i in range(100)]})
    assert r.status_code == 200 and len(r.json()) == 100


def test_non_admin_reading_dbs_info_is_refused(couch):
    for method in ("GET", "POST"):
        r = requests.request(method, couch.url("/_dbs_info"), json={"keys": []}, timeout=10)
        assert r.status_code == 401 and r.json()["error"] == "unauthorized", r.text
