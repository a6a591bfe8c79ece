import CouchWire
import Testing

@testable import CouchServer

/// Documents: round trip, conflicts, reserved ids, design documents (conformance/test_documents*.py).
@Suite struct DocumentHandlersTests {
    static let conflict = "Document update conflict."
    static let reserved = "Only reserved document ids may start with underscore."

    @Test func putGetDeleteRoundTrip() throws {
        try InProcessServer.with { server in
            let admin = InProcessServer.admin
            try server.createDatabase("docs")
            let put = try server.request("PUT", "/docs/d1", as: admin, json: #"{"v":1}"#)
            #expect(put.status == 201 && put.json["id"]?.stringValue == "d1", "\(put)")
            let rev = put.json["rev"]?.stringValue ?? ""
            #expect(rev.hasPrefix("1-"))
            let get = try server.request("GET", "/docs/d1", as: admin)
            #expect(get.status == 200 && get.json["_rev"]?.stringValue == rev && get.json["v"]?.intValue == 1)
            let stale = try server.request("PUT", "/docs/d1", as: admin, json: #"{"v":2}"#)
            #expect(stale.status == 409 && stale.error == "conflict" && stale.reason == Self.conflict, "\(stale)")
            let noRev = try server.request("DELETE", "/docs/d1", as: admin)
            #expect(noRev.status == 409 && noRev.error == "conflict", "\(noRev)")
            let update = try server.request("PUT", "/docs/d1", as: admin, json: #"{"_rev":"\#(rev)","v":2}"#)
            #expect(update.status == 201, "\(update)")
            let rev2 = update.json["rev"]?.stringValue ?? ""
            let deleted = try server.request("DELETE", "/docs/d1?rev=\(rev2)", as: admin)
            #expect(deleted.status == 200 && deleted.json["ok"]?.boolValue == true, "\(deleted)")
            let gone = try server.request("GET", "/docs/d1", as: admin)
            #expect(gone.status == 404 && gone.error == "not_found" && gone.reason == "deleted", "\(gone)")
            let never = try server.request("GET", "/docs/never", as: admin)
            #expect(never.status == 404 && never.reason == "missing", "\(never)")
        }
    }

    @Test func idsStartingWithAnUnderscoreAreRefused() throws {
        try InProcessServer.with { server in
            let admin = InProcessServer.admin
            try server.createDatabase("docs")
            let posted = try server.request("POST", "/docs", as: admin, json: #"{"_id":"_foo","v":1}"#)
            #expect(posted.status == 400 && posted.error == "illegal_docid" && posted.reason == Self.reserved)
            // A path no row has: refused once the caller is a member, with CouchDB's reason.
            let put = try server.request("PUT", "/docs/_foo", as: admin, json: #"{"v":1}"#)
            #expect(put.status == 400 && put.error == "illegal_docid" && put.reason == Self.reserved, "\(put)")
            let inBody = try server.request("PUT", "/docs/fine", as: admin, json: #"{"_id":"_not_reserved"}"#)
            #expect(inBody.status == 400 && inBody.error == "illegal_docid", "\(inBody)")
            let get = try server.request("GET", "/docs/_foo", as: admin)
            #expect(get.status == 400 && get.error == "illegal_docid", "\(get)")
        }
    }

    @Test func designDocumentsAreWrittenByDatabaseAdminsOnly() throws {
        try InProcessServer.with { server in
            try server.createDatabase("docs")
            let member = try server.createUser("member")
            let dbadmin = try server.createUser("dbadmin")
            try server.setSecurity("docs", admins: ["dbadmin"], members: ["member"])
            let byMember = try server.request("PUT", "/docs/_design/app", as: member, json: #"{"views":{}}"#)
            #expect(byMember.status == 403 && byMember.error == "forbidden", "\(byMember)")
            #expect(byMember.reason == "You are not a db or server admin.")
            let posted = try server.request("POST", "/docs", as: member, json: #"{"_id":"_design/post"}"#)
            #expect(posted.status == 403 && posted.reason == "You are not a db or server admin.", "\(posted)")
            let bulk = try server.request(
                "POST", "/docs/_bulk_docs", as: member, json: #"{"docs":[{"_id":"_design/bulk"},{"_id":"plain"}]}"#)
            #expect(bulk.status == 201, "\(bulk)")
            #expect(bulk.json[0]?["error"]?.stringValue == "forbidden" && bulk.json[1]?["ok"]?.boolValue == true)
            let byAdmin = try server.request("PUT", "/docs/_design/app", as: dbadmin, json: #"{"views":{}}"#)
            #expect(byAdmin.status == 201 && byAdmin.json["id"]?.stringValue == "_design/app", "\(byAdmin)")
            let read = try server.request("GET", "/docs/_design/app", as: member)
            #expect(read.status == 200 && read.json["_id"]?.stringValue == "_design/app", "\(read)")
            // The encoded slash names the same document.
            let encoded = try server.request("GET", "/docs/_design%2Fapp", as: member)
            #expect(encoded.status == 200 && encoded.json["_id"]?.stringValue == "_design/app", "\(encoded)")
            let rev = read.json["_rev"]?.stringValue ?? ""
            let deleteByMember = try server.request("DELETE", "/docs/_design/app?rev=\(rev)", as: member)
            #expect(deleteByMember.status == 403, "\(deleteByMember)")
            let deleteByAdmin = try server.request("DELETE", "/docs/_design/app?rev=\(rev)", as: dbadmin)
            #expect(deleteByAdmin.status == 200, "\(deleteByAdmin)")
        }
    }
}
