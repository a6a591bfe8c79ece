// JSON parse/serialize throughput on a ~4 MiB `_bulk_docs` body, ours against Foundation's JSONSerialization.
import CouchWire
import Foundation

enum JSONBenchmark {
    /// Timed repetitions per measurement; the median is reported.
    static let runs = ProcessInfo.processInfo.environment["PARSE_ONLY"] != nil ? 2 : 9
    /// Target body size in bytes (CouchDB replicators batch `_bulk_docs` at about 4 MiB).
    static let targetBytes = 4 * 1024 * 1024

    static func run() {
        let body = makeBulkDocsBody()
        let megabytes = Double(body.count) / 1_048_576
        print("json: _bulk_docs body \(body.count) bytes, median of \(runs) runs")

        var parsed: JSON = .null
        let ourParse = median {
            body.withUnsafeBytes { buffer in
                parsed = (try? JSON.parse(buffer)) ?? .null
            }
        }
        precondition(!parsed.isNull, "benchmark body failed to parse")
        var output: [UInt8] = []
        let ourSerialize = median {
            output.removeAll(keepingCapacity: false)
            parsed.serialize(into: &output)
        }
        precondition(output == body, "serialize did not round-trip the body")

        if ProcessInfo.processInfo.environment["PARSE_ONLY"] != nil { return }
        let data = Data(body)
        var object: Any = NSNull()
        let foundationParse = median {
            object = (try? JSONSerialization.jsonObject(with: data)) ?? NSNull()
        }
        let foundationSerialize = median {
            _ = try? JSONSerialization.data(withJSONObject: object)
        }

        func report(_ name: String, ours: Double, theirs: Double) {
            let line =
                "\(name): couchlite \(format(megabytes / ours)) MB/s, Foundation \(format(megabytes / theirs)) MB/s, "
                + "ratio \(format(theirs / ours))x"
            print(line)
        }
        report("parse    ", ours: ourParse, theirs: foundationParse)
        report("serialize", ours: ourSerialize, theirs: foundationSerialize)
    }

    /// Median wall time of `runs` calls of `body`, in seconds.
    static func median(_ body: () -> Void) -> Double {
        body()  // warm-up
        var times: [Double] = []
        for _ in 0..<runs {
            let start = DispatchTime.now().uptimeNanoseconds
            body()
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        times.sort()
        return times[times.count / 2]
    }

    static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    /// A deterministic body shaped like what replicators send: `{"new_edits":false,"docs":[…]}` with `_id`,
    /// `_rev`, `_revisions`, nested fields, non-ASCII text, escapes and assorted numbers.
    static func makeBulkDocsBody() -> [UInt8] {
        var state: UInt64 = 0x5EED
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        func hex32() -> String {
            (0..<4).map { _ in String(format: "%08x", UInt32(truncatingIfNeeded: next())) }.joined()
        }
        let words = ["alpha", "Bravo", "charlie", "délta", "échø", "foxtrot", "日本語", "naïve", "Zürich", "emoji 😀"]
        var docs: [JSON] = []
        var size = 0
        var n = 0
        while size < targetBytes {
            let generation = Int(next() % 20) + 1
            let ids = (0..<generation).map { _ in JSON.string(hex32()) }
            var tags: [JSON] = []
            for _ in 0..<Int(next() % 6) { tags.append(.string(words[Int(next() % 10)])) }
            var text = ""
            for _ in 0..<Int(next() % 40) + 10 { text += words[Int(next() % 10)] + " " }
            if n % 7 == 0 { text += "line\nbreak \"quoted\" tab\t slash/ back\\" }
            let doc: JSON = [
                "_id": .string("doc-\(n)-" + hex32().prefix(8)),
                "_rev": .string("\(generation)-\(ids[0].stringValue ?? "")"),
                "type": n % 3 == 0 ? "photo" : "note",
                "title": .string(words[Int(next() % 10)] + " \(n)"),
                "count": .int(Int(next() % 100_000)),
                "price": .number(JSONNumber("\(next() % 1000).\(next() % 100)") ?? JSONNumber(0)),
                "ratio": .number(JSONNumber("1.5e-\(next() % 9)") ?? JSONNumber(0)),
                "flags": ["archived": .bool(next() % 2 == 0), "starred": .bool(next() % 2 == 0), "owner": .null],
                "tags": .array(tags),
                "location": [
                    "lat": .double(Double(next() % 180_000) / 1000 - 90),
                    "lon": .double(Double(next() % 360_000) / 1000 - 180),
                ],
                "body": .string(text),
                "_revisions": ["start": .int(generation), "ids": .array(ids)],
            ]
            size += doc.serialized().count + 1
            docs.append(doc)
            n += 1
        }
        let body: JSON = ["new_edits": false, "docs": .array(docs)]
        return body.serialized()
    }
}
