"""The database console (/_utils/) in a real headless Chromium, as one visit of the server admin: sign in, create
and page databases, edit a document into a conflict and resolve it, upload an attachment, run a Mango query and read
its explain, query a view, start a replication that fails and read why, change a `_config` value, grant a member;
then every page at 1440x900 and 390x844, screenshotted and checked for layout. Tests run in file order on one tab;
each names what it proves."""
import json
import os
import time

import pytest
import requests

from conftest import ADMIN

HOSTILE = '<img src=x onerror="window.__xss=1">'


def wait_until(predicate, timeout=15, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def wait_text(page, selector, text, timeout=15):
    """Waits until `selector`'s text contains `text` (Playwright's own wait_for_function needs eval, which the CSP
    forbids)."""
    return wait_until(lambda: text in (page.locator(selector).first.text_content() or "")
                      if page.locator(selector).count() else False, timeout=timeout, what=f"{selector} ~ {text!r}")


@pytest.fixture(scope="module")
def tab(browser, server):
    context = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.console_server = server
    yield page
    context.close()


def go(tab, hash_):
    tab.goto(tab.console_server.base + "/_utils/" + hash_)
    wait_until(lambda: tab.evaluate("() => location.hash") == hash_, what="at " + hash_)


def test_utils_redirects_and_wrong_password_is_said(server, tab):
    tab.goto(server.base + "/_utils")
    assert tab.url == server.base + "/_utils/"
    tab.wait_for_selector("#signin")
    tab.fill("#name", "admin")
    tab.fill("#password", "wrong")
    tab.click("#signin button[type=submit]")
    wait_text(tab, "#signin-error", "Wrong name or password")


def test_sign_in_with_session_cookie(server, tab):
    tab.fill("#password", ADMIN[1])
    tab.click("#signin button[type=submit]")
    tab.wait_for_selector("#dbs")
    assert tab.text_content("#who") == "admin (admin)"
    cookies = {c["name"]: c for c in tab.context.cookies()}
    assert cookies["AuthSession"]["httpOnly"]


def test_database_name_rules_checked_as_you_type(tab):
    tab.fill("#new-db-name", "Bad Name")
    assert tab.is_disabled("#create-db")
    failing = tab.locator("#db-name-rules li.fail").all_text_contents()
    assert any("lowercase letter" in t for t in failing)
    assert any("only a-z" in t for t in failing)
    tab.fill("#new-db-name", "x" * 239)
    assert tab.is_disabled("#create-db")
    assert any("238" in t for t in tab.locator("#db-name-rules li.fail").all_text_contents())
    tab.fill("#new-db-name", "console-db")
    assert tab.locator("#db-name-rules li.fail").count() == 0
    assert tab.is_enabled("#create-db")


def test_create_database(server, tab):
    tab.click("#create-db")
    wait_text(tab, "#db-title", "console-db")
    assert server.admin("GET", "/console-db").status_code == 200
    assert tab.text_content("#db-doc-count") == "0"


def test_databases_listed_with_counts_and_paged(server, tab):
    for i in range(22):
        assert server.admin("PUT", f"/page-{i:02d}").status_code == 201
    server.admin("POST", "/page-00", json={"_id": "one"})
    go(tab, "#/")
    tab.wait_for_selector("#dbs tbody tr")
    assert tab.locator("#dbs tbody tr").count() == 20
    row = tab.locator('#dbs tr[data-db="page-00"]')
    assert row.locator(".doc-count").text_content() == "1"
    assert "/" in row.locator("td").nth(3).text_content()  # active / file sizes from _dbs_info
    tab.click("#dbs-next")
    wait_text(tab, "#dbs-page", "Page 2")
    names = tab.locator("#dbs .db-name").all_text_contents()
    assert names and "page-00" not in names
    tab.click("#dbs-prev")
    wait_text(tab, "#dbs-page", "Page 1")


def test_delete_database_needs_its_name_typed(server, tab):
    tab.locator('#dbs tr[data-db="page-01"] button').click()
    assert tab.is_disabled("#confirm-delete-db")
    tab.fill("#confirm-db-name", "page-0")
    assert tab.is_disabled("#confirm-delete-db")
    tab.fill("#confirm-db-name", "page-01")
    tab.click("#confirm-delete-db")
    wait_until(lambda: server.admin("GET", "/page-01").status_code == 404, what="page-01 deleted")
    wait_until(lambda: tab.locator('#dbs tr[data-db="page-01"]').count() == 0, what="row gone")


def test_all_docs_paged_with_keys_and_ranges(server, tab):
    docs = [{"_id": f"doc-{i:02d}", "n": i} for i in range(25)] + [{"_id": HOSTILE, "n": -1}]
    assert server.admin("POST", "/console-db/_bulk_docs", json={"docs": docs}).status_code == 201
    go(tab, "#/db/console-db")
    tab.wait_for_selector("#docs tbody tr")
    assert tab.locator("#docs tbody tr").count() == 20
    tab.click("#docs-next")
    wait_until(lambda: tab.locator("#docs .doc-id").first.text_content() == "doc-19", what="second page")  # after the hostile id and doc-00..18
    tab.fill("#opt-startkey", "doc-05")
    tab.fill("#opt-endkey", "doc-07")
    tab.click("#docs-apply")
    wait_until(lambda: tab.locator("#docs .doc-id").all_text_contents() == ["doc-05", "doc-06", "doc-07"],
               what="range")
    tab.fill("#opt-startkey", "")
    tab.fill("#opt-endkey", "")
    tab.fill("#opt-keys", '["doc-03", "doc-01"]')
    tab.check("#opt-include-docs")
    tab.click("#docs-apply")
    wait_until(lambda: tab.locator("#docs .doc-id").all_text_contents() == ["doc-03", "doc-01"], what="keys")
    assert '"n":3' in tab.locator("#docs td.json").first.text_content()
    tab.fill("#opt-keys", json.dumps([HOSTILE]))
    tab.click("#docs-apply")
    wait_until(lambda: tab.locator("#docs .doc-id").all_text_contents() == [HOSTILE], what="hostile id as text")
    assert tab.evaluate("() => window.__xss") is None
    assert tab.locator("#view img").count() == 0


def test_edit_a_document_into_a_conflict_and_resolve_it(server, tab):
    go(tab, "#/db/console-db/doc/doc-02")
    tab.wait_for_selector("#doc-editor")
    doc = json.loads(tab.input_value("#doc-editor"))
    assert doc["_id"] == "doc-02" and doc["_rev"].startswith("1-")
    doc["edited"] = "in the console"
    tab.fill("#doc-editor", json.dumps(doc, indent=2))
    # Someone else saves first.
    current = server.admin("GET", "/console-db/doc-02").json()
    current["other"] = "from elsewhere"
    assert server.admin("PUT", "/console-db/doc-02", json=current).status_code == 201
    tab.click("#save-doc")
    tab.wait_for_selector("#conflict")
    assert tab.text_content("#conflict-theirs-rev").startswith("2-")
    assert "from elsewhere" in tab.text_content("#compare .side-b")
    assert tab.locator("#compare .side-a .changed").count() >= 1
    tab.click("#keep-mine")
    wait_text(tab, "#doc-status", "Revision 3-")
    saved = server.admin("GET", "/console-db/doc-02").json()
    assert saved["edited"] == "in the console" and "other" not in saved and saved["_rev"].startswith("3-")


def test_invalid_json_cannot_be_saved(tab):
    tab.fill("#doc-editor", "{ not json")
    assert tab.is_disabled("#save-doc")
    assert "Not JSON" in tab.text_content("#doc-error")


def test_revisions_and_conflicts_listed_compared_and_resolved(server, tab):
    for rev, body in [("1-aaaa", {"v": "a"}), ("1-bbbb", {"v": "b"})]:
        r = server.admin("PUT", "/console-db/forked?new_edits=false", json={"_id": "forked", "_rev": rev, **body})
        assert r.status_code == 201
    go(tab, "#/db/console-db/doc/forked")
    tab.wait_for_selector("#revs")
    assert tab.locator('#revs tr[data-rev="1-aaaa"] .rev-state').text_content() == "conflict"
    assert tab.locator('#revs tr[data-rev="1-bbbb"] .rev-state').text_content() == "current (winner)"
    tab.select_option("#compare-a", "1-bbbb")
    tab.select_option("#compare-b", "1-aaaa")
    tab.click("#compare-revs")
    tab.wait_for_selector("#compare-result .side-b")
    assert '"v": "a"' in tab.text_content("#compare-result .side-b")
    tab.locator('#revs tr[data-rev="1-aaaa"] button').click()
    wait_until(lambda: "_conflicts" not in server.admin("GET", "/console-db/forked?conflicts=true").json(),
               what="conflict deleted")
    wait_until(lambda: tab.locator("#conflict-note").count() == 0, what="page reloaded without the conflict: " + tab.text_content("#view")[:3000])


def test_upload_download_and_delete_an_attachment(server, tab, tmp_path):
    path = tmp_path / (HOSTILE.replace("/", "") + ".txt")
    path.write_bytes(b"hello attachment\n")
    go(tab, "#/db/console-db/doc/doc-04")
    tab.wait_for_selector("#att-file")
    tab.set_input_files("#att-file", str(path))
    tab.click("#att-upload")
    tab.wait_for_selector("#atts .att-link")
    name = path.name
    assert tab.locator("#atts .att-link").text_content() == name
    assert tab.evaluate("() => window.__xss") is None
    stored = server.admin("GET", "/console-db/doc-04").json()["_attachments"]
    assert stored[name]["length"] == 17
    with tab.expect_download() as download:
        tab.click("#atts .att-link")
    assert open(download.value.path(), "rb").read() == b"hello attachment\n"
    tab.locator("#atts button").click()
    wait_until(lambda: "_attachments" not in server.admin("GET", "/console-db/doc-04").json(), what="deleted")


def test_mango_index_query_execution_stats_and_explain(server, tab):
    go(tab, "#/db/console-db/indexes")
    try:
        tab.wait_for_selector("#indexes")
    except Exception:
        raise AssertionError(tab.url + " " + tab.text_content("#view")[:2000] + str(tab.errors))
    tab.fill("#index-fields", "n")
    tab.fill("#index-name", "by-n")
    tab.fill("#index-ddoc", "mango-n")
    tab.click("#index-create")
    wait_until(lambda: tab.locator('#indexes tr[data-index="by-n"]').count() == 1, what="index listed")
    go(tab, "#/db/console-db/find")
    tab.wait_for_selector("#mango-query")
    tab.fill("#mango-query", json.dumps({"selector": {"n": {"$gte": 10, "$lt": 13}}, "fields": ["_id", "n"]}))
    tab.click("#mango-run")
    tab.wait_for_selector("#mango-docs")
    ids = [t for t in tab.locator("#mango-docs td.id").all_text_contents()]
    assert ids == ["doc-10", "doc-11", "doc-12"]
    stats = tab.text_content("#mango-stats")
    assert "total_docs_examined" in stats and "execution_time_ms" in stats
    tab.click("#mango-explain-run")
    wait_text(tab, "#explain-index", "by-n")
    assert "_design/mango-n" in tab.text_content("#explain-index")
    assert '"selector"' in tab.text_content("#explain-json")


def test_mango_error_is_shown(tab):
    tab.fill("#mango-query", json.dumps({"selector": {"n": {"$nope": 1}}}))
    tab.click("#mango-run")
    wait_text(tab, "#mango-error", "invalid_operator")


def test_delete_an_index(server, tab):
    go(tab, "#/db/console-db/indexes")
    tab.locator('#indexes tr[data-index="by-n"] button').click()
    wait_until(lambda: all(i["name"] != "by-n" for i in server.admin("GET", "/console-db/_index").json()["indexes"]),
               what="index deleted")


def test_design_documents_and_a_view_query(server, tab):
    ddoc = {"views": {"by-n": {"map": "function(doc){ if (doc.n >= 0) emit(doc.n, 1); }", "reduce": "_count"}}}
    assert server.admin("PUT", "/console-db/_design/stats", json=ddoc).status_code == 201
    go(tab, "#/db/console-db/design")
    tab.wait_for_selector(".view-link")
    tab.click(".view-link")
    tab.wait_for_selector("#view-form")
    tab.click("#view-run")
    tab.wait_for_selector("#view-rows")
    assert tab.locator("#view-rows td.json").nth(1).text_content() == "25"
    tab.select_option("#view-reduce", "false")
    tab.fill("#view-startkey", "3")
    tab.fill("#view-endkey", "4")
    tab.click("#view-run")
    wait_until(lambda: tab.locator("#view-rows tbody tr").count() == 2, what="ranged rows")
    assert tab.locator("#view-rows td.id").first.text_content() == "doc-03"


def test_grant_a_member(server, tab):
    go(tab, "#/db/console-db/security")
    tab.wait_for_selector("#security-form")
    tab.fill("#sec-members-names", "alice, bob")
    tab.fill("#sec-admins-roles", "ops")
    tab.click("#sec-save")
    wait_until(lambda: server.admin("GET", "/console-db/_security").json().get("members", {}).get("names")
               == ["alice", "bob"], what="members saved")
    assert server.admin("GET", "/console-db/_security").json()["admins"]["roles"] == ["ops"]


def test_a_replication_that_fails_says_why(server, tab):
    go(tab, "#/replication")
    tab.wait_for_selector("#rep-form")
    tab.fill("#rep-source", "no-such-db")
    tab.fill("#rep-target", "console-copy")
    tab.fill("#rep-user", ADMIN[0])
    tab.fill("#rep-password", ADMIN[1])
    tab.fill("#rep-id", "broken-job")
    tab.click("#rep-start")
    row = '#jobs tr[data-job="broken-job"]'
    tab.wait_for_selector(row)
    wait_until(lambda: "does not exist" in (tab.locator(row + " .job-error").text_content()
                                             if tab.locator(row + " .job-error").count() else ""),
               timeout=20, what="the job's error in words")
    assert tab.locator(row + " .state").text_content() in ("crashing", "failed")
    doc = server.admin("GET", "/_replicator/broken-job").json()
    assert doc["source"]["auth"]["basic"]["username"] == "admin"


def test_a_working_replication_and_active_tasks(server, tab):
    tab.fill("#rep-source", "console-db")
    tab.fill("#rep-target", "console-live")
    tab.fill("#rep-user", ADMIN[0])
    tab.fill("#rep-password", ADMIN[1])
    tab.fill("#rep-id", "live-job")
    tab.check("#rep-continuous")
    tab.check("#rep-create-target")
    tab.click("#rep-start")
    wait_until(lambda: server.admin("GET", "/console-live").status_code == 200, timeout=20, what="target created")
    wait_until(lambda: tab.locator('#jobs tr[data-job="live-job"] .state').count()
               and tab.locator('#jobs tr[data-job="live-job"] .state').text_content() == "running",
               timeout=20, what="live job running")
    wait_until(lambda: tab.locator("#tasks td", has_text="replication").count() >= 1, timeout=20,
               what="active task listed")


def test_server_status_stats_chart_and_config_change(server, tab):
    go(tab, "#/server")
    wait_text(tab, "#server-up", "ok")
    wait_until(lambda: tab.locator("#stats-chart polyline").count() == 1
               and tab.locator("#stats-chart polyline").get_attribute("points").count(",") >= 2,
               timeout=10, what="two samples charted")
    tab.locator('details[data-section="uuids"] summary').click()
    field = tab.locator('input[data-key="uuids/max_count"]')
    field.fill("77")
    field.press("Enter")
    wait_until(lambda: server.admin("GET", "/_node/_local/_config/uuids/max_count").json() == "77",
               what="config changed")
    server.admin("PUT", "/_node/_local/_config/uuids/max_count", json="1000")


def test_add_a_user(server, tab):
    tab.fill("#user-name", "carol")
    tab.fill("#user-password", "secret-pass")
    tab.fill("#user-roles", "readers")
    tab.click("#user-create")
    wait_until(lambda: tab.locator("#users-table td", has_text="carol").count() == 1, what="user listed")
    assert server.admin("GET", "/_users/org.couchdb.user:carol").json()["roles"] == ["readers"]


def test_a_member_who_may_not_list_databases_opens_one_by_name(browser, server):
    """alice is no server admin: `_all_dbs` is not hers to read, so the page says so and opens a database by name;
    in `photos` (where she is a member) she sees the documents, and the admin-only pages answer with their error."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(server.base + "/_utils/")
        page.fill("#name", "alice")
        page.fill("#password", "wonderland")
        page.click("#signin button[type=submit]")
        page.wait_for_selector("#open-db-name")
        assert page.locator("#create-db").count() == 0
        page.fill("#open-db-name", "photos")
        page.press("#open-db-name", "Enter")
        page.wait_for_selector("#docs")
        page.goto(server.base + "/_utils/#/db/secret")
        wait_text(page, "#page-error", "forbidden")
        assert errors == []
    finally:
        context.close()


PAGES = [
    ("databases", "#/", "#dbs"),
    ("documents", "#/db/console-db", "#docs"),
    ("document", "#/db/console-db/doc/doc-02", "#save-doc"),
    ("mango", "#/db/console-db/find", "#mango-run"),
    ("indexes", "#/db/console-db/indexes", "#index-create"),
    ("design", "#/db/console-db/design", ".view-link"),
    ("view", "#/db/console-db/view/stats/by-n", "#view-run"),
    ("security", "#/db/console-db/security", "#sec-save"),
    ("replication", "#/replication", "#rep-start"),
    ("server", "#/server", "#user-create"),
]


@pytest.mark.parametrize("width,height", [(1440, 900), (390, 844)])
def test_every_page_fits_the_screen(browser, server, screenshots, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    r = page.request.post(server.base + "/_session", data={"name": ADMIN[0], "password": ADMIN[1]})
    assert r.status == 200
    try:
        for name, hash_, control in PAGES:
            page.goto(server.base + "/_utils/" + hash_)
            page.wait_for_selector(control)
            if name == "mango":  # the page as it is used: results, their stats and the plan
                page.click("#mango-explain-run")
                page.wait_for_selector("#explain-index")
                page.click("#mango-run")
                page.wait_for_selector("#mango-docs")
            elif name == "view":
                page.click("#view-run")
                page.wait_for_selector("#view-rows")
            elif name == "server":
                wait_until(lambda: (page.locator("#stats-chart polyline").get_attribute("points") or "").count(",")
                           >= 2 if page.locator("#stats-chart polyline").count() else False, what="chart drawn")
            page.screenshot(path=os.path.join(screenshots, f"console-{name}-{width}x{height}.png"))
            overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{name} at {width}x{height} overflows by {overflow}px"
            box = page.locator(control).first.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, f"{name}: {control} off screen"
            nav = page.locator("#nav-server").bounding_box()
            assert nav and nav["x"] + nav["width"] <= width and nav["y"] < height
        assert errors == []
    finally:
        context.close()


def test_no_script_errors(tab):
    assert tab.errors == []
