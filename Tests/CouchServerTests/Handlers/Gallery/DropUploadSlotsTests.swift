import CouchWire
import Foundation
import Testing

@testable import CouchServer
@testable import PhotoDrop

/// Issue 35, item 5, through HTTP: every sender of a `receive` session shares its one-time credentials, and eight
/// 1-byte promises of one of them took the account's eight unfinished-upload slots, so every other sender's
/// resumable push (files of 4 MiB and more) failed. The slots are each sender's now.
@Suite struct DropUploadSlotsTests {
    static func promise(_ server: InProcessServer, _ drop: Credentials, _ n: Int, from address: String) throws
        -> TestResponse
    {
        let sha = String(format: "%064x", n)
        return try server.request(
            "POST", "/_photos/api/db/m/uploads?name=p\(n).jpg&type=image/jpeg&length=1&sha256=\(sha)", as: drop,
            from: address)
    }

    @Test func oneSendersPromisesLeaveOtherSendersTheirUploadSlots() throws {
        try InProcessServer.with { server in
            try server.createDatabase("m")
            let drop = server.addDropCredentials("drop-m", password: "one-time", database: "m")
            for n in 0..<8 {
                let r = try Self.promise(server, drop, n, from: "192.168.1.66")
                #expect(r.status == 201, "\(r)")
            }
            let ninth = try Self.promise(server, drop, 8, from: "192.168.1.66")
            #expect(ninth.status == 403 && ninth.error == "forbidden", "\(ninth)")
            // Another phone of the same session still pushes.
            let other = try Self.promise(server, drop, 9, from: "192.168.1.67")
            #expect(other.status == 201, "\(other)")
            // And cannot see or extend the first phone's uploads.
            let first = try Self.promise(server, drop, 0, from: "192.168.1.66")
            let id = try #require(first.json["id"]?.stringValue)
            #expect(first.json["resumed"] == true)
            let status = try server.request("HEAD", "/_photos/api/db/m/uploads/\(id)", as: drop, from: "192.168.1.67")
            #expect(status.status == 404)
        }
    }
}
