"""The console at /_utils: CouchDB's redirect of /_utils to /_utils/ (chttpd's handle_utils_dir_req, 301 with
an absolute Location), and the console's files served with a strict Content-Security-Policy.

CouchDB serves Fauxton there with its own, looser policy ('unsafe-eval', inline style), so those assertions are
couchlite's own and say so (is_couchlite)."""
import re

import requests

from conftest import is_couchlite


def test_utils_without_slash_redirects_301_to_utils_slash(couch):
    r = requests.get(couch.url("/_utils"), allow_redirects=False, timeout=10)
    assert r.status_code == 301
    host = couch.base.split("//", 1)[1].split("/", 1)[0]
    assert r.headers["Location"] == f"http://{host}/_utils/"


def test_utils_slash_is_the_console_page_for_anyone(couch):
    r = requests.get(couch.url("/_utils/"), timeout=10)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/html")
    assert "<html" in r.text.lower()


def test_utils_answers_only_get_and_head(couch):
    r = requests.post(couch.url("/_utils/"), data=b"{}", headers={"Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 405
    assert r.json()["error"] == "method_not_allowed"


def test_console_files_carry_a_strict_content_security_policy(couch):
    if not is_couchlite(couch):
        # Fauxton's policy: scripts from the server, but with 'unsafe-eval'.
        assert "script-src 'self'" in requests.get(couch.url("/_utils/"), timeout=10).headers[
            "Content-Security-Policy"]
        return
    for path, kind in [("/_utils/", "text/html"), ("/_utils/console.js", "text/javascript"),
                       ("/_utils/console.css", "text/css")]:
        r = requests.get(couch.url(path), timeout=10)
        assert r.status_code == 200, path
        assert r.headers["Content-Type"].startswith(kind), path
        policy = r.headers["Content-Security-Policy"]
        directives = dict((d.strip().split(" ", 1) + [""])[:2] for d in policy.split(";") if d.strip())
        assert directives["default-src"] == "'none'"
        assert directives["script-src"] == "'self'"
        assert directives["style-src"] == "'self'"
        assert "unsafe" not in policy
        assert directives["frame-ancestors"] == "'none'"
        assert r.headers["X-Content-Type-Options"] == "nosniff"


def test_console_page_has_no_inline_script_or_style(couch):
    if not is_couchlite(couch):
        return
    page = requests.get(couch.url("/_utils/"), timeout=10).text.lower()
    assert "<style" not in page and " style=" not in page
    assert page.count("<script") == page.count("<script src=")
    assert not re.search(r"\son[a-z]+\s*=", page)  # no onclick= and the like


def test_missing_console_file_is_404(couch):
    r = requests.get(couch.url("/_utils/nothing-here.js"), timeout=10)
    assert r.status_code == 404
    r = requests.get(couch.url("/_utils/a/b/c"), timeout=10)
    assert r.status_code == 404
