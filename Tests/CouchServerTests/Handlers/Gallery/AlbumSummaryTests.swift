import CouchWire
import Foundation
import Testing

@testable import CouchServer

/// `GET /_photos/api/dbs`' albums: cover, counts and date range, kept incrementally from each database's changes
/// (edits, deletions, a database deleted and made again).
@Suite struct AlbumSummaryTests {
    static func put(_ server: InProcessServer, _ db: String, _ id: String, taken: String, type: String) throws {
        let data = Data("bytes of \(id)".utf8).base64EncodedString()
        let body =
            #"{"name":"\#(id).bin","taken":"\#(taken)","_attachments":{"\#(id).bin":"#
            + #"{"content_type":"\#(type)","data":"\#(data)"}}}"#
        let r = try server.request("PUT", "/\(db)/\(id)", as: InProcessServer.admin, json: body)
        #expect(r.status == 201, "\(r)")
    }

    static func album(_ server: InProcessServer, _ db: String) throws -> JSON? {
        let r = try server.request("GET", "/_photos/api/dbs", as: InProcessServer.admin)
        return r.json["albums"]?.arrayValue?.first { $0["name"]?.stringValue == db }
    }

    @Test func coverCountsAndDatesFollowTheChanges() throws {
        try InProcessServer.with { server in
            try server.createDatabase("album")
            try Self.put(server, "album", "old", taken: "2025-12-31T23:59:00-05:00", type: "image/jpeg")
            try Self.put(server, "album", "new", taken: "2026-05-12T14:03:11+02:00", type: "image/png")
            try Self.put(server, "album", "clip", taken: "2026-06-01T09:00:00+02:00", type: "video/mp4")
            try Self.put(server, "album", "doc", taken: "2027-01-01T00:00:00Z", type: "application/pdf")
            var album = try Self.album(server, "album")
            #expect(album?["photos"]?.intValue == 2)
            #expect(album?["videos"]?.intValue == 1)
            #expect(album?["first"]?.stringValue == "2025-12-31T23:59:00-05:00")
            #expect(album?["last"]?.stringValue == "2026-06-01T09:00:00+02:00")
            // The newest photo, not the newer video nor the file that is neither.
            #expect(album?["cover"]?["id"]?.stringValue == "new")
            #expect(album?["complete"]?.boolValue == true)
            // A deletion is read from the changes since: counts and cover follow.
            let rev = try server.request("GET", "/album/new", as: InProcessServer.admin).json["_rev"]?.stringValue ?? ""
            #expect(try server.request("DELETE", "/album/new?rev=\(rev)", as: InProcessServer.admin).status == 200)
            album = try Self.album(server, "album")
            #expect(album?["photos"]?.intValue == 1)
            #expect(album?["cover"]?["id"]?.stringValue == "old")
            // Deleted and made again: counted from scratch, not from the old sequence.
            #expect(try server.request("DELETE", "/album", as: InProcessServer.admin).status == 200)
            try server.createDatabase("album")
            #expect(try Self.album(server, "album")?["photos"]?.intValue == 0)
            #expect(try Self.album(server, "album")?["cover"]?.isNull == true)
            try Self.put(server, "album", "again", taken: "2026-01-01T00:00:00Z", type: "image/jpeg")
            #expect(try Self.album(server, "album")?["photos"]?.intValue == 1)
        }
    }

    @Test func albumsOfDatabasesTheUserMayNotReadAreNotListed() throws {
        try InProcessServer.with { server in
            let stranger = try server.createUser("stranger")
            try server.createDatabase("private")
            try server.setSecurity("private", members: ["someone"])
            let r = try server.request("GET", "/_photos/api/dbs", as: stranger)
            #expect(r.json["albums"]?.arrayValue?.isEmpty == true)
        }
    }
}
