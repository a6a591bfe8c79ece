// The rev hash of every document of the `_bulk_docs` body JSONBenchmark builds (what a `new_edits=true` batch
// costs in hashing), against the md5 of the same body bytes alone (the floor any hash of the body pays).
import CouchCrypto
import CouchWire
import Foundation
import RevTree

enum RevHashBenchmark {
    static func run() {
        guard case .object(let root) = (try? JSON.parse(JSONBenchmark.makeBulkDocsBody())) ?? .null,
            case .array(let docs) = root["docs"] ?? .null
        else { return }
        let bodies: [[UInt8]] = docs.compactMap { doc in
            guard case .object(let fields) = doc else { return nil }
            return JSON.object(JSONObject(fields.filter { !$0.key.hasPrefix("_") }.map { ($0.key, $0.value) }))
                .serialized()
        }
        let megabytes = Double(bodies.reduce(0) { $0 + $1.count }) / 1_048_576
        let parent = RevID(pos: 1, hash: "967a00dff5e02add41819138abb3284d")
        var sink = 0
        let hashed = JSONBenchmark.median {
            for body in bodies {
                sink &+= RevisionHash.compute(parent: parent, deleted: false, body: body, attachments: []).utf8.count
            }
        }
        let floor = JSONBenchmark.median {
            for body in bodies { sink &+= Digest.hash(.md5, body).count }
        }
        print(
            "revhash: \(bodies.count) bodies, \(JSONBenchmark.format(megabytes)) MB, median of \(JSONBenchmark.runs) runs"
        )
        print(
            "revhash: CouchDB term hash \(JSONBenchmark.format(megabytes / hashed)) MB/s "
                + "(\(JSONBenchmark.format(hashed / Double(bodies.count) * 1e6)) µs a document), "
                + "md5 of the bytes alone \(JSONBenchmark.format(megabytes / floor)) MB/s [\(sink % 2)]")
    }
}
