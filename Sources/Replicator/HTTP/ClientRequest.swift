import CouchWire
import Foundation

/// One request of the replicator's HTTP client.
public struct ClientRequest: Sendable {
    public enum Body: Sendable {
        case none
        /// Sent with an exact `Content-Length`.
        case bytes([UInt8])
        /// Produced while it is sent, with `Transfer-Encoding: chunked` (attachments streamed from
        /// another response or a file; never whole in memory).
        case stream(@Sendable (BodyWriter) throws -> Void)
    }

    public var method: String
    /// Path and query, already percent-encoded.
    public var target: String
    public var headers: HTTPHeaders
    public var body: Body
    /// The progress deadline: the longest wait for any one read or write of this request (a long-poll waits
    /// longer). The response as a whole is bounded too: its head must arrive within twice this after the
    /// request was sent, and its body may take twice this plus one second per `minimumBytesPerSecond` read
    /// (a peer dripping a byte now and then fails with `.tooSlow` instead of holding the client for ever).
    public var timeout: Duration

    /// The progress deadline of a request to a peer: 60 s, or `COUCHLITE_PEER_TIMEOUT` seconds (an internal
    /// setting, so that tests of slow peers run in seconds).
    public static let peerTimeout: Duration = {
        let text = ProcessInfo.processInfo.environment["COUCHLITE_PEER_TIMEOUT"] ?? ""
        guard let seconds = Double(text), seconds > 0, seconds <= 3600 else { return .seconds(60) }
        return .milliseconds(Int64(seconds * 1000))
    }()

    /// The slowest average rate a response body may arrive at once its first `2 × timeout` have passed.
    public static let minimumBytesPerSecond = 4096

    public init(
        method: String, target: String, headers: HTTPHeaders = HTTPHeaders(), body: Body = .none,
        timeout: Duration = ClientRequest.peerTimeout
    ) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    /// A JSON request (`Content-Type` and `Accept` as the CouchDB replicator sends them).
    public static func json(_ method: String, _ target: String, _ body: JSON) -> ClientRequest {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/json")
        headers.add("Accept", "application/json")
        return ClientRequest(method: method, target: target, headers: headers, body: .bytes(body.serialized()))
    }
}

/// Writes a streamed request body as chunks of the chunked transfer coding, buffering small writes.
///
/// `@unchecked Sendable`: `HTTPClient` makes one for a request and hands it to the body's producer, which runs
/// on the sending thread and returns before the writer is finished there; no other thread ever sees it.
public final class BodyWriter: @unchecked Sendable {
    private let socket: ClientSocket
    private let timeout: Duration
    private var buffer: [UInt8] = []
    private static let flushAt = 64 * 1024

    init(socket: ClientSocket, timeout: Duration) {
        self.socket = socket
        self.timeout = timeout
        buffer.reserveCapacity(Self.flushAt + 1024)
    }

    /// Appends body bytes (sent once 64 KiB have gathered).
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        if buffer.count + bytes.count > Self.flushAt { try flush() }
        if bytes.count >= Self.flushAt {
            try socket.send(Array(String(bytes.count, radix: 16).utf8) + [0x0D, 0x0A], timeout: timeout)
            try socket.send(bytes, timeout: timeout)
            try socket.send([0x0D, 0x0A], timeout: timeout)
            return
        }
        buffer.append(contentsOf: bytes)
    }

    public func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// Sends what is buffered as one chunk.
    public func flush() throws {
        guard !buffer.isEmpty else { return }
        var framed = Array(String(buffer.count, radix: 16).utf8) + [0x0D, 0x0A]
        framed.append(contentsOf: buffer)
        framed.append(contentsOf: [0x0D, 0x0A])
        try socket.send(framed, timeout: timeout)
        buffer.removeAll(keepingCapacity: true)
    }

    /// The last chunk.
    func finish() throws {
        try flush()
        try socket.send(Array("0\r\n\r\n".utf8), timeout: timeout)
    }
}
