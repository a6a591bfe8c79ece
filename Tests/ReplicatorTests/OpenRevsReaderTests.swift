import CouchWire
import Testing

@testable import Replicator

@Suite struct OpenRevsReaderTests {
    static func response(_ contentType: String, _ body: [UInt8]) throws -> ClientResponse {
        var head = Array(
            "HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
        head += body
        // Split in odd pieces so part boundaries fall inside reads.
        let pieces = stride(from: 0, to: head.count, by: 7).map { Array(head[$0..<min(head.count, $0 + 7)]) }
        return try FakePeer(scripts: [pieces]).client.send(ClientRequest(method: "GET", target: "/"))
    }

    /// CouchDB's layout (chttpd_db's open_revs multipart): a plain JSON part, a nested
    /// multipart/related part with attachment bytes, and a missing revision.
    @Test func readsCouchDBsMultipartMixedLayout() throws {
        let attachment = (0..<5000).map { UInt8($0 % 251) }
        var body = Array("--OB\r\nContent-Type: application/json\r\n\r\n{\"_id\":\"d\",\"_rev\":\"1-a\"}\r\n".utf8)
        body += Array("--OB\r\nContent-Type: multipart/related; boundary=\"IB\"\r\n\r\n".utf8)
        body += Array("--IB\r\nContent-Type: application/json\r\n\r\n".utf8)
        body += Array(#"{"_id":"d","_rev":"2-b","_attachments":{"p.jpg":{"follows":true,"length":5000}}}"#.utf8)
        body += Array(
            "\r\n--IB\r\nContent-Disposition: attachment; filename=\"p.jpg\"\r\nContent-Length: 5000\r\n\r\n".utf8)
        body += attachment
        body += Array("\r\n--IB--\r\n".utf8)
        body += Array(
            "--OB\r\nContent-Type: application/json; error=\"true\"\r\n\r\n{\"missing\":\"3-c\"}\r\n--OB--".utf8)
        let reader = try OpenRevsReader(try Self.response("multipart/mixed; boundary=\"OB\"", body))
        guard case .document(let first) = try reader.next() else { throw Failure("first part") }
        #expect(first["_rev"] == "1-a")
        guard case .related(let second) = try reader.next() else { throw Failure("second part") }
        #expect(second["_rev"] == "2-b")
        let headers = try reader.nextAttachmentHeaders()
        #expect(headers?.contains { $0.0 == "Content-Length" && $0.1 == "5000" } == true)
        var bytes: [UInt8] = []
        while let chunk = try reader.readAttachment() { bytes += chunk }
        #expect(bytes == attachment)
        #expect(try reader.nextAttachmentHeaders() == nil)
        guard case .missing(let rev) = try reader.next() else { throw Failure("third part") }
        #expect(rev == "3-c")
        #expect(try reader.next() == nil)
    }

    /// PouchDB's and Couchbase Lite's form: a JSON array.
    @Test func readsTheJSONArrayForm() throws {
        let body = Array(#"[{"ok":{"_id":"d","_rev":"1-a"}},{"missing":"2-x"}]"#.utf8)
        let reader = try OpenRevsReader(try Self.response("application/json", body))
        guard case .document(let doc) = try reader.next() else { throw Failure("doc") }
        #expect(doc["_id"] == "d")
        guard case .missing = try reader.next() else { throw Failure("missing") }
        #expect(try reader.next() == nil)
    }

    @Test func truncatedMultipartIsAProtocolError() throws {
        let body = Array(
            "--OB\r\nContent-Type: multipart/related; boundary=\"IB\"\r\n\r\n--IB\r\nContent-Type: application/json\r\n\r\n{\"_id\""
                .utf8)
        let reader = try OpenRevsReader(try Self.response("multipart/mixed; boundary=\"OB\"", body))
        #expect(throws: ReplicationError.self) { _ = try reader.next() }
    }

    @Test func otherMediaTypesAreRefused() throws {
        #expect(throws: ReplicationError.self) {
            _ = try OpenRevsReader(try Self.response("text/html", Array("<html>".utf8)))
        }
    }
}

struct Failure: Error {
    let what: String
    init(_ what: String) { self.what = what }
}

extension OpenRevsReader.Item: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.document(let a), .document(let b)), (.related(let a), .related(let b)): a == b
        case (.missing(let a), .missing(let b)): a == b
        default: false
        }
    }
}
