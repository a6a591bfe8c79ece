import CouchWire
import Testing

@testable import CouchServer

/// `_local` documents, with the slash written or encoded (conformance/test_documents.py, test_documents_compat.py).
@Suite struct LocalDocumentHandlersTests {
    @Test func bothSpellingsNameOneDocument() throws {
        try InProcessServer.with { server in
            let admin = InProcessServer.admin
            try server.createDatabase("loc")
            let put = try server.request("PUT", "/loc/_local/cp", as: admin, json: #"{"seq":1}"#)
            #expect(put.status == 201, "\(put)")
            #expect(put.json["id"]?.stringValue == "_local/cp" && put.json["rev"]?.stringValue == "0-1")
            let encoded = try server.request("GET", "/loc/_local%2Fcp", as: admin)
            #expect(encoded.status == 200 && encoded.json["seq"]?.intValue == 1, "\(encoded)")
            #expect(encoded.json["_id"]?.stringValue == "_local/cp")
            let putEncoded = try server.request("PUT", "/loc/_local%2Fx", as: admin, json: #"{"a":1}"#)
            #expect(putEncoded.status == 201, "\(putEncoded)")
            let plain = try server.request("GET", "/loc/_local/x", as: admin)
            #expect(plain.status == 200 && plain.json["a"]?.intValue == 1, "\(plain)")
            let deleted = try server.request("DELETE", "/loc/_local/x?rev=0-1", as: admin)
            #expect(deleted.status == 200 && deleted.json["rev"]?.stringValue == "0-0", "\(deleted)")
            let gone = try server.request("GET", "/loc/_local/x", as: admin)
            #expect(gone.status == 404, "\(gone)")
        }
    }

    @Test func localDocumentsHaveNoAttachments() throws {
        try InProcessServer.with { server in
            let admin = InProcessServer.admin
            try server.createDatabase("loc")
            #expect(try server.request("PUT", "/loc/_local/l", as: admin, json: #"{"v":1}"#).status == 201)
            for method in ["GET", "PUT", "DELETE"] {
                let r = try server.request(method, "/loc/_local/l/att.txt", as: admin, raw: Array("x".utf8))
                #expect(r.status == 400 && r.error == "bad_request", "\(method): \(r)")
                #expect(r.reason == "_local documents do not accept attachments.")
            }
            let bare = try server.request("GET", "/loc/_local", as: admin)
            #expect(bare.status == 400 && bare.reason == "_local documents do not accept attachments.", "\(bare)")
        }
    }
}
