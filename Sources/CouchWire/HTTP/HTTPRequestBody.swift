/// The request body, read incrementally by the handler, so that large uploads are never held in memory.
///
/// Sends `100 Continue` lazily on the first read if the client asked for it and no response has started.
/// Use it only on the handler's thread and only while the handler runs.
public final class HTTPRequestBody {
    /// The declared Content-Length; nil when chunked or absent.
    public let contentLength: Int?
    /// True when the body uses chunked transfer coding.
    public let isChunked: Bool
    /// True when a body follows: Content-Length above zero, or chunked.
    public var hasBody: Bool { isChunked || (contentLength ?? 0) > 0 }

    /// The connection the body arrives on; nil for a body held in memory (`init(bytes:declaredLength:)`).
    private unowned let connection: HTTPConnection?
    /// A body held in memory, and how far it has been read.
    private let memory: [UInt8]
    private var memoryOffset = 0
    private var remaining: Int
    private var decoder = HTTPChunkedDecoder()
    /// True once every body byte has been read.
    public private(set) var isComplete: Bool
    /// The first error a read hit; later reads rethrow it.
    private(set) var failure: HTTPError?
    /// The client sent `Expect: 100-continue` and we have neither answered 100 nor started the response.
    private var continuePending: Bool
    /// Most body bytes any read may deliver in total (see ``limit(to:)``); `received` counts them.
    public private(set) var byteLimit = Int.max
    /// Body bytes delivered so far.
    public private(set) var received = 0

    init(connection: HTTPConnection, framing: HTTPBodyFraming, expectsContinue: Bool) {
        self.connection = connection
        memory = []
        switch framing {
        case .none:
            contentLength = nil
            isChunked = false
            remaining = 0
        case .length(let length):
            contentLength = length
            isChunked = false
            remaining = length
        case .chunked:
            contentLength = nil
            isChunked = true
            remaining = 0
        }
        isComplete = !isChunked && remaining == 0
        continuePending = expectsContinue && !isComplete
    }

    /// A body held in memory, read as a `Content-Length` body: for calling a handler with no connection (tests).
    /// - Parameter declaredLength: The `Content-Length` claimed, when it should differ from the bytes given (a
    ///   client that declares more than it sends: reads past the bytes fail as if it went away).
    public init(bytes: [UInt8], declaredLength: Int? = nil) {
        connection = nil
        memory = bytes
        let length = declaredLength ?? bytes.count
        contentLength = length > 0 ? length : nil
        isChunked = false
        remaining = length
        isComplete = length == 0
        continuePending = false
    }

    /// Caps the whole body at `maxBytes` before the handler reads any of it, for requests whose sender may
    /// not send more (anonymous or unprivileged ones): a declared Content-Length above it fails at once,
    /// without reading a byte or sending `100 Continue`, and a chunked body fails as soon as it passes it.
    /// Later reads then throw `.payloadTooLarge` (413), and the engine closes the connection.
    /// - Throws: `.payloadTooLarge` when Content-Length already exceeds `maxBytes`.
    public func limit(to maxBytes: Int) throws(HTTPError) {
        byteLimit = min(byteLimit, maxBytes)
        if let contentLength, contentLength > byteLimit {
            failure = .payloadTooLarge
            throw .payloadTooLarge
        }
    }

    /// Counts delivered bytes against ``byteLimit``.
    private func account(_ count: Int) throws(HTTPError) {
        received += count
        if received > byteLimit { throw .payloadTooLarge }
    }

    /// Reads up to `maxCount` bytes of the body.
    /// - Returns: the next bytes, or an empty array at the end of the body.
    /// - Throws: `.clientGone` if the client disconnected, `.timeout` when it stalled longer than the body stall
    ///   timeout, `.malformed` for bad chunked framing. The error repeats on later reads.
    public func read(upTo maxCount: Int) throws(HTTPError) -> [UInt8] {
        if let failure { throw failure }
        guard !isComplete, maxCount > 0 else { return [] }
        do {
            try sendContinueIfNeeded()
            let bytes = isChunked ? try readChunked(maxCount) : try readLength(maxCount)
            try account(bytes.count)
            return bytes
        } catch {
            failure = error
            throw error
        }
    }

    /// Reads up to `buffer.count` bytes of the body into `buffer`, with no allocation (for streaming a large body
    /// through one reused buffer).
    /// - Returns: How many bytes were read; 0 only at the end of the body (or for an empty buffer).
    /// - Throws: As ``read(upTo:)``.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPError) -> Int {
        if let failure { throw failure }
        guard !isComplete, buffer.count > 0 else { return 0 }
        do {
            try sendContinueIfNeeded()
            if isChunked {
                // Chunked bodies come through the connection's read buffer; one copy, as `read(upTo:)` makes.
                let bytes = try readChunked(buffer.count)
                try account(bytes.count)
                bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
                return bytes.count
            }
            let target = UnsafeMutableRawBufferPointer(rebasing: buffer.prefix(min(buffer.count, remaining)))
            let count: Int
            if let connection {
                count = try connection.readBodyBytes(into: target)
            } else {
                let bytes = try readMemory(target.count)
                bytes.withUnsafeBytes { target.copyMemory(from: $0) }
                count = bytes.count
            }
            remaining -= count
            if remaining == 0 { isComplete = true }
            try account(count)
            return count
        } catch {
            failure = error
            throw error
        }
    }

    /// Reads the whole body.
    /// - Parameter limit: Most bytes accepted.
    /// - Throws: `.payloadTooLarge` (413) once more than `limit` bytes arrive or Content-Length declares more
    ///   (then without reading anything, and without sending `100 Continue`); otherwise as `read(upTo:)`.
    public func readAll(limit: Int) throws(HTTPError) -> [UInt8] {
        // Recorded as the body's failure so that, should the handler not answer, the engine answers 413
        // and closes instead of reading the rest.
        if let contentLength, contentLength > limit {
            failure = .payloadTooLarge
            throw .payloadTooLarge
        }
        var result: [UInt8] = []
        result.reserveCapacity(min(contentLength ?? 0, limit))
        while true {
            // Ask for one byte beyond the limit so an oversized chunked body is detected (without `limit + 1`,
            // which overflows for a limit of Int.max, `[chttpd] max_http_request_size` = 2^63-1).
            let left = limit - result.count
            let chunkBytes = left < HTTPLimits.maxReadChunkBytes ? max(0, left) + 1 : HTTPLimits.maxReadChunkBytes
            let chunk = try read(upTo: chunkBytes)
            if chunk.isEmpty { return result }
            if result.count + chunk.count > limit {
                failure = .payloadTooLarge
                throw .payloadTooLarge
            }
            result += chunk
        }
    }

    private func sendContinueIfNeeded() throws(HTTPError) {
        guard continuePending else { return }
        continuePending = false
        guard let connection, !connection.responseStarted else { return }
        try connection.transport.send(
            Array("HTTP/1.1 100 Continue\r\n\r\n".utf8), stall: connection.configuration.sendStallTimeout)
    }

    private func readLength(_ maxCount: Int) throws(HTTPError) -> [UInt8] {
        let count = min(maxCount, remaining)
        let bytes: [UInt8]
        if let connection {
            bytes = try connection.readBodyBytes(upTo: count)
        } else {
            bytes = try readMemory(count)
        }
        remaining -= bytes.count
        if remaining == 0 { isComplete = true }
        return bytes
    }

    /// The next bytes of a body held in memory.
    /// - Throws: `.clientGone` past its end (a declared length longer than the bytes).
    private func readMemory(_ count: Int) throws(HTTPError) -> [UInt8] {
        guard memoryOffset < memory.count else { throw .clientGone }
        let end = min(memory.count, memoryOffset + count)
        defer { memoryOffset = end }
        return Array(memory[memoryOffset..<end])
    }

    private func readChunked(_ maxCount: Int) throws(HTTPError) -> [UInt8] {
        guard let connection else { throw .clientGone }
        while true {
            if connection.bufferedByteCount == 0 { try connection.refillBuffer() }
            switch try connection.decodeBuffered(&decoder, maxCount: maxCount) {
            case .needMoreData: continue
            case .data(let bytes) where bytes.isEmpty: continue
            case .data(let bytes): return bytes
            case .end:
                isComplete = true
                return []
            }
        }
    }

    // MARK: - Engine side

    /// True when, should the handler leave the body unread, the connection will have to close: the body is
    /// broken, the client still awaits `100 Continue`, or more than `HTTPLimits.maxDrainBytes` remain.
    var mustCloseIfUnread: Bool {
        guard !isComplete else { return false }
        return failure != nil || continuePending || (!isChunked && remaining > HTTPLimits.maxDrainBytes)
    }

    /// Reads and discards what the handler left, up to `HTTPLimits.maxDrainBytes`.
    /// - Returns: true when the body is now complete and the connection can serve another request.
    func drainForReuse() -> Bool {
        if isComplete { return true }
        if mustCloseIfUnread { return false }
        // One stall timeout in total, so a client trickling its unread body cannot hold the thread.
        connection?.drainDeadline = connection.map { .after($0.configuration.bodyStallTimeout) }
        defer { connection?.drainDeadline = nil }
        var drained = 0
        while drained <= HTTPLimits.maxDrainBytes {
            guard let bytes = try? read(upTo: HTTPLimits.readBufferBytes) else { return false }
            if bytes.isEmpty { return true }
            drained += bytes.count
        }
        return false
    }
}
