import CouchWire
import Foundation
import Testing

@testable import CouchServer

/// The attacks of issue 35 (items 3, 4 and 6) on `couchlite receive`'s one-time drop credentials, each through
/// HTTP on an in-process server whose database `m` holds documents of its owner (the server admin): what a drop
/// sends counts against `--max-size` and its ledger is bounded; ids that decide access are compared by bytes; the
/// database's counts tell the sender nothing; the owner's `_local` documents are not the sender's.
@Suite struct DropCredentialsAttackTests {
    static let admin = InProcessServer.admin

    /// A server with database `m` and drop credentials for it.
    static func withDrop<T>(
        maxBytes: Int = .max, limits: DropLedger.Limits = DropLedger.Limits(),
        _ body: (InProcessServer, Credentials) throws -> T
    ) throws -> T {
        try InProcessServer.with { server in
            try server.createDatabase("m")
            let drop = server.addDropCredentials(
                "drop-m", password: "one-time", database: "m", maxBytes: maxBytes, limits: limits)
            return try body(server, drop)
        }
    }

    // MARK: Item 3: every byte counts, the ledger is bounded

    @Test func dropLocalPutsCountAgainstMaxSize() throws {
        try Self.withDrop(maxBytes: 1_000_000) { server, drop in
            let filler = String(repeating: "x", count: 300_000)
            var stored = 0
            var refused = 0
            for n in 0..<6 {
                let r = try server.request("PUT", "/m/_local/big-\(n)", as: drop, json: #"{"fill":"\#(filler)"}"#)
                if r.status == 201 { stored += 1 } else if r.status == 507 { refused += 1 }
                #expect(r.status == 201 || (r.status == 507 && r.error == "insufficient_storage"), "\(r)")
            }
            // 1 MB holds three of these bodies, never six (1.8 MB).
            #expect(stored == 3 && refused == 3)
            #expect(server.app.dropAccounts.account(named: "drop-m")?.drop?.bytes.charged ?? 0 <= 1_000_000)
        }
    }

    @Test func dropIDLongerThanTheLedgerBoundIsRefusedAndNotStored() throws {
        try Self.withDrop { server, drop in
            let long = String(repeating: "i", count: DropLedger.Limits().idBytes + 1)
            for path in ["/m/\(long)", "/m/_local/\(long)"] {
                let r = try server.request("PUT", path, as: drop, json: "{}")
                #expect(r.status == 400 && r.error == "illegal_docid" && r.reason == "Document id is too long", "\(r)")
            }
            let bulk = try server.request("POST", "/m/_bulk_docs", as: drop, json: #"{"docs":[{"_id":"\#(long)"}]}"#)
            #expect(bulk.status == 400 && bulk.error == "illegal_docid", "\(bulk)")
            #expect(try server.request("GET", "/m/\(long)", as: Self.admin).status == 404)
            // An 8 KiB id the store takes is still refused to the drop: 100,000 of them were 0.8 GB of ledger.
            let kib8 = String(repeating: "k", count: 8 * 1024)
            #expect(try server.request("PUT", "/m/\(kib8)", as: drop, json: "{}").status == 400)
        }
    }

    @Test func dropLedgerMemoryIsBoundedAndAFullLedgerStoresNothing() throws {
        var limits = DropLedger.Limits()
        limits.heldBytes = 64 * 1024
        try Self.withDrop(limits: limits) { server, drop in
            let ledger = try #require(server.app.dropAccounts.account(named: "drop-m")?.drop)
            var refused = 0
            for batch in 0..<20 {
                let docs = (0..<10).map { n in
                    #"{"_id":"\#(batch)-\#(n)-\#(String(repeating: "p", count: 900))"}"#
                }
                let r = try server.request(
                    "POST", "/m/_bulk_docs", as: drop, json: #"{"docs":[\#(docs.joined(separator: ","))]}"#)
                if r.status == 403 {
                    #expect(r.error == "forbidden" && r.reason == "This drop has reached its limit of documents.")
                    refused += 1
                } else {
                    #expect(r.status == 201, "\(r)")
                }
                #expect(ledger.held.bytes <= limits.heldBytes)
            }
            #expect(refused > 0)
            // What was refused was not stored: every stored document is one the ledger holds (and so one the drop
            // can go on updating).
            let info = try server.request("GET", "/m", as: Self.admin).json
            #expect(info["doc_count"]?.intValue == ledger.createdCount)
            // Shadowed revs count too: the owner's document answered for again and again stays within the bound.
            #expect(try server.request("PUT", "/m/owned", as: Self.admin, json: "{}").status == 201)
            let shadowRefused = try (0..<200).map { n in
                try server.request(
                    "PUT", "/m/owned?new_edits=false", as: drop,
                    json: #"{"_id":"owned","_rev":"1-\#(String(format: "%032x", n))"}"#
                ).status
            }.filter { $0 == 403 }.count
            #expect(shadowRefused > 0)
            #expect(ledger.held.bytes <= limits.heldBytes)
        }
    }

    // MARK: Item 4: ids by bytes, counts that tell nothing

    /// Creates the owner's `id`, lets the drop create its canonical twin `twin`, then tries to replace and delete
    /// the owner's document through the twin's claim.
    static func attackThroughTwin(owner id: String, twin: String) throws {
        #expect(id == twin && !id.utf8Equals(twin), "the pair must be canonically equal and differ in bytes")
        try withDrop { server, drop in
            let created = try server.request(
                "POST", "/m/_bulk_docs", as: admin, json: #"{"docs":[{"_id":"\#(id)","owner":true}]}"#)
            let ownerRev = try #require(created.json.arrayValue?.first?["rev"]?.stringValue)
            let claim = try server.request("POST", "/m/_bulk_docs", as: drop, json: #"{"docs":[{"_id":"\#(twin)"}]}"#)
            #expect(claim.status == 201 && claim.json.arrayValue?.first?["ok"]?.boolValue == true, "\(claim)")
            let hash = try #require(ownerRev.split(separator: "-").last)
            let forged =
                #"{"new_edits":false,"docs":[{"_id":"\#(id)","_rev":"9-\#(String(repeating: "f", count: 32))","#
                + #""evil":true,"_revisions":{"start":9,"ids":["\#(String(repeating: "f", count: 32))","#
                + (0..<7).map { #""\#(String(format: "%032x", $0))""# }.joined(separator: ",")
                + #","\#(hash)"]}}]}"#
            // A deletion on the owner's rev is a conflict, as on an absent document (the drop never had that rev).
            let deletion = try server.request(
                "POST", "/m/_bulk_docs", as: drop,
                json: #"{"docs":[{"_id":"\#(id)","_rev":"\#(ownerRev)","_deleted":true}]}"#)
            #expect(deletion.json.arrayValue?.first?["error"]?.stringValue == "conflict", "\(deletion)")
            #expect(try server.request("POST", "/m/_bulk_docs", as: drop, json: forged).status == 201)
            let doc = try server.request(
                "POST", "/m/_all_docs?include_docs=true", as: admin, json: #"{"keys":["\#(id)"]}"#)
            let row = try #require(doc.json["rows"]?.arrayValue?.first)
            #expect(row["value"]?["rev"]?.stringValue == ownerRev, "\(doc)")
            #expect(row["doc"]?["owner"]?.boolValue == true && row["doc"]?["evil"] == nil, "\(doc)")
        }
    }

    @Test func kelvinSignTwinCannotReplaceOrDeleteTheOwnersDocument() throws {
        try Self.attackThroughTwin(owner: "Kids-album", twin: "\u{212A}ids-album")
    }

    @Test func nfdTwinCannotReplaceOrDeleteTheOwnersNFCDocument() throws {
        try Self.attackThroughTwin(owner: "caf\u{E9}", twin: "cafe\u{301}")
    }

    @Test func kelvinSignTwinCannotReadTheOwnersLocalDocument() throws {
        try Self.withDrop { server, drop in
            let owner = try server.request("PUT", "/m/_local/Kcheckpoint", as: Self.admin, json: #"{"secret":1}"#)
            #expect(owner.status == 201)
            // `_local/\u{212A}checkpoint`, percent-encoded on the wire.
            let twin = try server.request("PUT", "/m/_local/%E2%84%AAcheckpoint", as: drop, json: #"{"mine":1}"#)
            #expect(twin.status == 201, "\(twin)")
            #expect(try server.request("GET", "/m/_local/%E2%84%AAcheckpoint", as: drop).json["mine"] == 1)
            let read = try server.request("GET", "/m/_local/Kcheckpoint", as: drop)
            #expect(read.status == 404 && read.error == "not_found", "\(read)")
        }
    }

    @Test func couchlitesOwnLocalDocumentsAreReservedByBytes() throws {
        try Self.withDrop { server, drop in
            // `_local/couchlite-` and a combining mark: not a character prefix, but every byte of it is.
            for path in ["/m/_local/couchlite-%CC%81x", "/m/_local/couchlite-position"] {
                let r = try server.request("PUT", path, as: drop, json: "{}")
                #expect(r.status == 403 && r.reason == "This document is reserved for couchlite.", "\(path): \(r)")
            }
        }
    }

    @Test func databaseInfoDoesNotTellTheDropWhichIDsExist() throws {
        try Self.withDrop { server, drop in
            for n in 0..<3 {
                #expect(try server.request("PUT", "/m/owner-\(n)", as: Self.admin, json: "{}").status == 201)
            }
            let before = try server.request("GET", "/m", as: drop)
            #expect(before.status == 200 && before.json["db_name"] == "m")
            #expect(before.json["doc_count"] == 0 && before.json["doc_del_count"] == 0, "\(before)")
            // A probe of an existing id (shadowed) and one of an absent id (created) answer alike, and only the
            // drop's own creation moves the counts it sees.
            let probe = try server.request("PUT", "/m/owner-1", as: drop, json: "{}")
            #expect(probe.status == 201)
            let afterProbe = try server.request("GET", "/m", as: drop)
            #expect(afterProbe.json == before.json, "\(afterProbe)")
            #expect(try server.request("PUT", "/m/mine", as: drop, json: "{}").status == 201)
            let afterOwn = try server.request("GET", "/m", as: drop)
            #expect(afterOwn.json["doc_count"] == 1, "\(afterOwn)")
            // The owner still sees the database as it is.
            #expect(try server.request("GET", "/m", as: Self.admin).json["doc_count"] == 4)
        }
    }

    // MARK: Item 6: the owner's `_local` documents

    @Test func dropCannotOverwriteTheOwnersCheckpoint() throws {
        try Self.withDrop { server, drop in
            #expect(try server.request("PUT", "/m/_local/cp", as: Self.admin, json: #"{"seq":1}"#).status == 201)
            let overwrite = try server.request("PUT", "/m/_local/cp", as: drop, json: #"{"seq":999}"#)
            let absent = try server.request("PUT", "/m/_local/never-there", as: drop, json: #"{"seq":999}"#)
            // Answered exactly as on an absent document, and nothing stored.
            #expect(overwrite.status == 201 && overwrite.json["rev"] == absent.json["rev"], "\(overwrite) \(absent)")
            let withRev = try server.request("PUT", "/m/_local/cp", as: drop, json: #"{"_rev":"0-1","seq":998}"#)
            #expect(withRev.status == 201 && withRev.json["rev"] == "0-2", "\(withRev)")
            #expect(try server.request("GET", "/m/_local/cp", as: Self.admin).json["seq"] == 1)
            #expect(try server.request("GET", "/m/_local/cp", as: drop).status == 404)
        }
    }

    @Test func dropCannotDeleteTheOwnersCheckpoint() throws {
        try Self.withDrop { server, drop in
            #expect(try server.request("PUT", "/m/_local/cp", as: Self.admin, json: #"{"seq":1}"#).status == 201)
            let bulk = try server.request(
                "POST", "/m/_bulk_docs", as: drop, json: #"{"docs":[{"_id":"_local/cp","_deleted":true}]}"#)
            #expect(bulk.status == 201 && bulk.json.arrayValue?.first?["rev"] == "0-0", "\(bulk)")
            let overwrite = try server.request(
                "POST", "/m/_bulk_docs", as: drop, json: #"{"docs":[{"_id":"_local/cp","seq":5}]}"#)
            #expect(overwrite.status == 201, "\(overwrite)")
            #expect(try server.request("DELETE", "/m/_local/cp", as: drop).status == 403)
            let kept = try server.request("GET", "/m/_local/cp", as: Self.admin)
            #expect(kept.status == 200 && kept.json["seq"] == 1, "\(kept)")
        }
    }

    @Test func dropStillWritesReadsAndDeletesItsOwnCheckpoint() throws {
        try Self.withDrop { server, drop in
            #expect(try server.request("PUT", "/m/_local/mine", as: drop, json: #"{"seq":1}"#).json["rev"] == "0-1")
            let again = try server.request("PUT", "/m/_local/mine", as: drop, json: #"{"_rev":"0-1","seq":2}"#)
            #expect(again.json["rev"] == "0-2")
            #expect(try server.request("GET", "/m/_local/mine", as: drop).json["seq"] == 2)
            let bulk = try server.request(
                "POST", "/m/_bulk_docs", as: drop, json: #"{"docs":[{"_id":"_local/mine","_deleted":true}]}"#)
            #expect(bulk.status == 201)
            #expect(try server.request("GET", "/m/_local/mine", as: Self.admin).status == 404)
        }
    }
}
