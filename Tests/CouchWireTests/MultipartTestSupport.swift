import CouchWire
import Foundation
import Testing

/// One recorded HTTP exchange from `conformance/transcripts` (see its README).
struct TranscriptExchange {
    var method: String
    var path: String
    var requestHeaders: [String: String]
    var requestBody: [UInt8]
    var responseHeaders: [String: String]
    var responseBody: [UInt8]
}

enum Transcripts {
    /// `conformance/transcripts` in the package root. A missing folder fails the test.
    static var directory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("conformance/transcripts")
    }

    static func load(_ name: String) throws -> [TranscriptExchange] {
        let url = directory.appendingPathComponent(name)
        let text = try String(contentsOf: url, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            func body(_ key: String) -> [UInt8] {
                guard let body = object[key] as? [String: Any] else { return [] }
                if let b64 = body["base64"] as? String, let data = Data(base64Encoded: b64) { return [UInt8](data) }
                if let text = body["text"] as? String { return Array(text.utf8) }
                return []
            }
            return TranscriptExchange(
                method: object["method"] as? String ?? "",
                path: object["path"] as? String ?? "",
                requestHeaders: object["req_headers"] as? [String: String] ?? [:],
                requestBody: body("req_body"),
                responseHeaders: object["resp_headers"] as? [String: String] ?? [:],
                responseBody: body("resp_body"))
        }
    }

    /// Multipart PUT bodies the CouchDB replicator sent (`new_edits=false`).
    static func multipartPuts() throws -> [TranscriptExchange] {
        let puts = try load("couchdb-3.4.3-push.jsonl").filter {
            $0.method == "PUT" && ($0.requestHeaders["Content-Type"] ?? "").hasPrefix("multipart/related")
        }
        try #require(puts.count >= 6)
        return puts
    }

    /// `open_revs` replies in `multipart/mixed`.
    static func openRevsReplies() throws -> [TranscriptExchange] {
        let replies = try load("couchdb-3.4.3-pull.jsonl").filter {
            ($0.responseHeaders["Content-Type"] ?? "").hasPrefix("multipart/mixed")
        }
        try #require(replies.count >= 7)
        return replies
    }
}

/// A parsed part, with its body reassembled from chunks.
struct ParsedPart: Equatable {
    var headers: [String]  // "Name: value", order kept, for easy comparison
    var body: [UInt8]

    func header(_ name: String) -> String? {
        for line in headers {
            let pieces = line.split(separator: ":", maxSplits: 1)
            if pieces.count == 2, pieces[0].lowercased() == name.lowercased() {
                return pieces[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }
}

struct ParsedBody: Equatable {
    var parts: [ParsedPart] = []
    var ended = false
}

/// How a test feeds a body to the parser.
enum Feeding: CustomStringConvertible {
    case whole
    case byteAtATime
    case random(seed: UInt64, maxChunk: Int)

    var description: String {
        switch self {
        case .whole: "whole"
        case .byteAtATime: "byte at a time"
        case .random(let seed, let maxChunk): "random chunks (seed \(seed), max \(maxChunk))"
        }
    }

    static let all: [Feeding] = [
        .whole, .byteAtATime, .random(seed: 1, maxChunk: 7), .random(seed: 42, maxChunk: 4096),
    ]
}

/// SplitMix64, so random chunkings are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func chunks(of bytes: [UInt8], _ feeding: Feeding) -> [ArraySlice<UInt8>] {
    switch feeding {
    case .whole:
        return [bytes[...]]
    case .byteAtATime:
        return bytes.indices.map { bytes[$0..<$0 + 1] }
    case .random(let seed, let maxChunk):
        var generator = SeededGenerator(seed: seed)
        var out: [ArraySlice<UInt8>] = []
        var start = 0
        while start < bytes.count {
            let size = Int.random(in: 1...maxChunk, using: &generator)
            let end = min(bytes.count, start + size)
            out.append(bytes[start..<end])
            start = end
        }
        return out
    }
}

/// Applies events to a `ParsedBody`, checking they come in a legal order.
func apply(_ events: [MultipartEvent], to body: inout ParsedBody, open: inout Bool) {
    for event in events {
        switch event {
        case .partBegin(let headers):
            #expect(!open && !body.ended)
            body.parts.append(ParsedPart(headers: headers.map { "\($0.0): \($0.1)" }, body: []))
            open = true
        case .bodyChunk(let chunk):
            #expect(open && !chunk.isEmpty)
            body.parts[body.parts.count - 1].body += chunk
        case .partEnd:
            #expect(open)
            open = false
        case .end:
            #expect(!open && !body.ended)
            body.ended = true
        }
    }
}

/// Parses a whole body fed the given way, then calls `finish()`.
func parseMultipart(_ bytes: [UInt8], boundary: String, feeding: Feeding = .whole) throws -> ParsedBody {
    var parser = MultipartParser(boundary: Array(boundary.utf8))
    var body = ParsedBody()
    var open = false
    for chunk in chunks(of: bytes, feeding) {
        let events = try chunk.withUnsafeBytes { buffer in try parser.parse(buffer) }
        apply(events, to: &body, open: &open)
    }
    try parser.finish()
    #expect(parser.isComplete)
    return body
}

/// The error a body provokes, from `parse` or `finish`, or nil if it parses.
func multipartError(_ bytes: [UInt8], boundary: String, feeding: Feeding = .whole) -> MultipartError? {
    var parser = MultipartParser(boundary: Array(boundary.utf8))
    do {
        for chunk in chunks(of: bytes, feeding) {
            _ = try chunk.withUnsafeBytes { buffer in try parser.parse(buffer) }
        }
        try parser.finish()
        return nil
    } catch let error as MultipartError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

/// Parses a whole body with ``MultipartParser/parse(borrowing:_:)``, copying each lent piece, then `finish()`.
func parseMultipartBorrowing(_ bytes: [UInt8], boundary: String, feeding: Feeding = .whole) throws -> ParsedBody {
    var parser = MultipartParser(boundary: Array(boundary.utf8))
    var body = ParsedBody()
    var open = false
    for chunk in chunks(of: bytes, feeding) {
        try chunk.withUnsafeBytes { buffer in
            try parser.parse(borrowing: buffer) { event in
                switch event {
                case .partBegin(let headers): apply([.partBegin(headers: headers)], to: &body, open: &open)
                case .bodyBytes(let piece): apply([.bodyChunk(Array(piece))], to: &body, open: &open)
                case .partEnd: apply([.partEnd], to: &body, open: &open)
                case .end: apply([.end], to: &body, open: &open)
                }
            }
        }
    }
    try parser.finish()
    #expect(parser.isComplete)
    return body
}
