import CouchWire
import Foundation
import Synchronization

@testable import CouchServer

/// A view engine in Swift: a map "source" names one of `maps`, a JavaScript reduce source one of `reduces`. It
/// counts the documents it maps, which is how the tests see that an update maps only what changed.
final class FakeViewEngine: ViewEngine {
    let maps: [String: @Sendable (JSON) -> [Emit]]
    private let mapped = Mutex(0)

    /// Documents mapped so far.
    var mappedCount: Int { mapped.withLock { $0 } }

    init(_ maps: [String: @Sendable (JSON) -> [Emit]]) {
        self.maps = maps
    }

    static var standard: FakeViewEngine {
        FakeViewEngine([
            // function(doc) { if (doc.k !== undefined) emit(doc.k, doc.v === undefined ? null : doc.v) }
            "by_k": { doc in doc["k"].map { [Emit(key: $0, value: doc["v"] ?? .null)] } ?? [] },
            // function(doc) { emit(doc._id, 1); emit(doc._id, 2) }
            "twice": { doc in
                [Emit(key: doc["_id"] ?? .null, value: .int(1)), Emit(key: doc["_id"] ?? .null, value: .int(2))]
            },
            // function(doc) { if (doc._conflicts) emit(doc._conflicts, null) }
            "conflicts": { doc in doc["_conflicts"].map { [Emit(key: $0, value: .null)] } ?? [] },
        ])
    }

    func map(_ group: ViewGroup, _ documents: [JSON]) throws -> [[[Emit]]] {
        mapped.withLock { $0 += documents.count }
        return documents.map { doc in group.views.map { view in maps[view.map]?(doc) ?? [] } }
    }

    /// `function(keys, values, rereduce) { return sum(values) }`, for any JavaScript reduce source.
    func reduce(_ group: ViewGroup, view: Int, keys: [JSON], values: [JSON]) throws -> JSON {
        .double(values.reduce(0) { $0 + (Double($1.numberValue?.text ?? "0") ?? 0) })
    }

    func rereduce(_ group: ViewGroup, view: Int, values: [JSON]) throws -> JSON {
        try reduce(group, view: view, keys: [], values: values)
    }
}

/// An app over a temporary data dir, spoken to over its in-process connections (HTTP/1.0: one request each).
final class ViewTestServer: Sendable {
    let app: App
    let directory: String

    init(engine: any ViewEngine = FakeViewEngine.standard) throws {
        directory = NSTemporaryDirectory() + "/views-test-" + UUID().uuidString
        app = try LocalApp.open(dataDir: directory, log: Logger(label: "test", level: .error))
        app.views.use(engine)
    }

    deinit {
        LocalApp.close(app)
        try? FileManager.default.removeItem(atPath: directory)
    }

    struct Response {
        var status: Int
        var body: [UInt8]
        var json: JSON { (try? JSON.parse(body)) ?? .null }
    }

    @discardableResult
    func request(_ method: String, _ path: String, _ body: String? = nil) throws -> Response {
        guard let fd = app.localServer.connect() else { throw CouchError.unknownError("no connection") }
        defer { close(fd) }
        let bytes = Array((body ?? "").utf8)
        var head = "\(method) \(path) HTTP/1.0\r\nHost: local\r\n"
        if body != nil { head += "Content-Type: application/json\r\nContent-Length: \(bytes.count)\r\n" }
        let message = Array((head + "\r\n").utf8) + bytes
        var sent = 0
        while sent < message.count {
            let n = message[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw CouchError.unknownError("write failed") }
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let split = (0..<max(0, received.count - 3)).first(where: { Array(received[$0..<$0 + 4]) == separator })
        else { throw CouchError.unknownError("no response head") }
        let statusLine = String(decoding: received[0..<split], as: UTF8.self).split(separator: " ")
        let status = statusLine.count > 1 ? Int(statusLine[1]) ?? 0 : 0
        return Response(status: status, body: Array(received[(split + 4)...]))
    }

    func put(_ path: String, _ body: String) throws -> Response { try request("PUT", path, body) }
    func get(_ path: String) throws -> Response { try request("GET", path) }

    /// The `key` of each row of a view response.
    func keys(_ path: String) throws -> [JSON] {
        (try get(path).json["rows"]?.arrayValue ?? []).map { $0["key"] ?? .null }
    }
}
