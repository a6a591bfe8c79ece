import CouchWire
import QueryServer

/// A view query's rows going to a list function instead of a JSON body. The function starts with the view's head
/// (`total_rows`, `offset`, `update_seq`: the view head without its rows) and pulls rows one at a time; its output
/// becomes the response as it comes: the status and headers of its `start()` (checked as any design function
/// response, and sandboxed), sent with the first non-empty chunk, then chunks. A function that returns early stops
/// the query (`ViewRowsStop`); one that fails before anything was sent is a clean error response.
struct ListRowSink: ViewRowSink {
    private let server: QueryServer
    private let ddoc: DesignDocument
    private let name: String
    private let request: JSON
    private let writer: ListResponseWriter
    private var session: ListSession?

    init(server: QueryServer, ddoc: DesignDocument, name: String, request: JSON, stream: ResponseStream) {
        self.server = server
        self.ddoc = ddoc
        self.name = name
        self.request = request
        writer = ListResponseWriter(stream)
    }

    mutating func start(_ head: [UInt8]) throws {
        guard session == nil else { return }
        let writer = writer
        session = try server.list(ddoc, name: name, head: ListRowSink.listHead(head), request: request) { output in
            try writer.write(output)
        }
    }

    mutating func `defer`(_ head: [UInt8]) throws { try start(head) }

    mutating func row(_ bytes: [UInt8]) throws {
        guard let session, try session.row(bytes) else { throw ViewRowsStop() }
    }

    mutating func finish() throws {
        try session?.finish()
        try writer.finish()
    }

    /// Ends the function if the query failed part-way (its worker is killed, not reused).
    func close() { session?.close() }

    /// The view's head as a JSON object: its text up to `"rows":[`, closed.
    static func listHead(_ head: [UInt8]) throws -> JSON {
        let marker = Array(#""rows":["#.utf8)
        var end = head.count
        if let found = (0...max(0, head.count - marker.count)).last(where: { head[$0...].starts(with: marker) }) {
            end = found
        }
        var text = Array(head[..<end])
        while let last = text.last, last == UInt8(ascii: ",") || last == UInt8(ascii: " ") { text.removeLast() }
        text.append(UInt8(ascii: "}"))
        return try JSON.parse(text)
    }
}

/// The HTTP side of a list: what the function said about its response, and the response once begun.
final class ListResponseWriter {
    private let stream: ResponseStream
    private var response = ExternalResponse()
    private var begun = false

    init(_ stream: ResponseStream) { self.stream = stream }

    func write(_ output: ListOutput) throws {
        if let start = output.start, !begun { try response.apply(start) }
        let chunk = output.chunks.joined()
        guard !chunk.isEmpty else { return }
        try begin()
        try stream.write(Array(chunk.utf8))
    }

    func finish() throws {
        try begin()
    }

    /// Names the function's status and headers as the response's head, before the first chunk.
    private func begin() throws {
        guard !begun else { return }
        begun = true
        try stream.setHead(Response.Status(response.status), headers: response.httpHeaders)
    }
}
