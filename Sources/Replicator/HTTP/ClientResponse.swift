import CouchWire

/// A response whose body is still on the wire: read it in pieces (`read(into:)`) or whole
/// (`readAll(limit:)`). Once the body has been read to its end the connection goes back to its pool;
/// a response dropped before that closes its connection, so the next request never reads stale bytes.
///
/// `@unchecked Sendable`: a response (with its framing state and its connection) is read by one thread at a time,
/// the one that sent the request or one it handed the response to, never two at once.
public final class ClientResponse: @unchecked Sendable {
    public let status: Int
    public let headers: HTTPHeaders
    private let connection: ClientConnection
    private let client: HTTPClient
    private let timeout: Duration
    /// The bound on the whole response (see `ClientRequest.timeout`).
    private let deadline: ReplyDeadline
    /// Body bytes read so far.
    private var received = 0
    private var framing: Framing
    private var chunked = HTTPChunkedDecoder()
    private var finished = false
    private let reusable: Bool

    enum Framing {
        case length(Int)
        case chunked
        case untilClose
    }

    init(
        head: ResponseHead, method: String, connection: ClientConnection, client: HTTPClient, timeout: Duration,
        deadline: ReplyDeadline
    ) {
        self.deadline = deadline
        status = head.status
        headers = head.headers
        self.connection = connection
        self.client = client
        self.timeout = timeout
        let closes = head.headers.containsToken("close", in: "Connection") || head.http10
        if method == "HEAD" || head.status == 204 || head.status == 304 {
            framing = .length(0)
        } else if head.headers.containsToken("chunked", in: "Transfer-Encoding") {
            framing = .chunked
        } else if let text = head.headers["Content-Length"], let length = Int(text), length >= 0 {
            framing = .length(length)
        } else {
            framing = .untilClose
        }
        if case .untilClose = framing { reusable = false } else { reusable = !closes }
        if case .length(0) = framing { complete() }
    }

    deinit {
        if !finished {
            connection.close()
            client.closed(connection)
        }
    }

    /// The media type without parameters, lowercased.
    public var mediaType: String {
        let value = headers["Content-Type"] ?? ""
        return (value.split(separator: ";").first.map(String.init) ?? "").trimmingCharacters().lowercased()
    }

    /// The next body bytes as an array (at most `limit`); nil at the end of the body.
    public func readChunk(limit: Int = 64 * 1024) throws(ReplicationError) -> [UInt8]? {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: limit, alignment: 16)
        defer { chunk.deallocate() }
        let count = try read(into: chunk)
        return count == 0 ? nil : Array(UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
    }

    /// Reads the next body bytes; 0 at the end of the body.
    /// - Throws: `.tooSlow` once the response's deadline has passed, `.timeout` when no byte came for `timeout`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(ReplicationError) -> Int {
        let count = try readFraming(into: buffer)
        received += count
        return count
    }

    private func readFraming(into buffer: UnsafeMutableRawBufferPointer) throws(ReplicationError) -> Int {
        guard !finished, buffer.count > 0 else { return 0 }
        let connection = connection
        switch framing {
        case .length(let remaining):
            let count = try deadline.receive(received: received, timeout: timeout) { (wait) throws(ReplicationError) in
                try connection.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(remaining, buffer.count)]),
                    timeout: wait)
            }
            guard count > 0 else { throw .connectionReset(connection.socket.peer) }
            framing = .length(remaining - count)
            if remaining - count == 0 { complete() }
            return count
        case .untilClose:
            let count = try deadline.receive(received: received, timeout: timeout) { (wait) throws(ReplicationError) in
                try connection.read(into: buffer, timeout: wait)
            }
            if count == 0 { complete() }
            return count
        case .chunked:
            while true {
                // Framing without data (empty chunks, extensions) costs time, and the deadline bounds it.
                var decoder = chunked
                let count = try deadline.receive(received: received, timeout: timeout) {
                    (wait) throws(ReplicationError) in
                    try connection.readChunked(&decoder, into: buffer, timeout: wait)
                }
                chunked = decoder
                if count > 0 { return count }
                if chunked.isFinished {
                    complete()
                    return 0
                }
            }
        }
    }

    /// The whole body.
    /// - Throws: `.protocolError` past `limit` bytes (naming the peer and the request).
    public func readAll(limit: Int = 64 << 20) throws(ReplicationError) -> [UInt8] {
        var out: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { chunk.deallocate() }
        while true {
            let count = try read(into: chunk)
            if count == 0 { return out }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
            if out.count > limit {
                throw .protocolError(
                    "the reply of \(deadline.peer) to \(deadline.what) is larger than \(Self.size(limit)), "
                        + "more than such a reply may be")
            }
        }
    }

    /// The body as JSON, read up to `limit` bytes and parsed within the memory budget the server gives a
    /// request body of its size (`JSON.memoryBudget(forInput:)`), so a reply of tiny containers cannot grow
    /// into many times its size.
    public func json(limit: Int = 64 << 20) throws(ReplicationError) -> JSON {
        let bytes = try readAll(limit: limit)
        do {
            return try JSON.parse(bytes, memoryBudget: JSON.memoryBudget(forInput: bytes.count))
        } catch {
            throw .protocolError(
                "the reply of \(deadline.peer) to \(deadline.what) (HTTP \(status)) is not JSON we accept: \(error)")
        }
    }

    /// `1 MiB`, `16 MiB`, or bytes.
    static func size(_ bytes: Int) -> String {
        bytes >= 1 << 20 && bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }

    /// Reads and drops what is left of a small body, so the connection can be reused.
    public func discard() {
        _ = try? readAll(limit: 1 << 20)
    }

    private func complete() {
        guard !finished else { return }
        finished = true
        if reusable {
            client.release(connection)
        } else {
            connection.close()
            client.closed(connection)
        }
    }
}
