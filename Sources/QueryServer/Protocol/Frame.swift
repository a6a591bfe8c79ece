/// The framing between the server and a query-server worker: each message is a 4-byte big-endian length and
/// that many bytes of JSON text, both ways. A length prefix, unlike newline-delimited JSON, needs no scan of
/// the payload, and a message can never be confused with the next. Anything a worker sends is untrusted (the
/// scripts it runs are users'): a length over `maxPayload` or a stream that ends inside a frame is an error,
/// never an allocation of the announced size.
public enum Frame {
    /// The largest payload either side accepts (a batch of documents, or the emits of one batch).
    public static let defaultMaxPayload = 256 * 1024 * 1024

    /// `payload` with its length prefix.
    public static func encode(_ payload: [UInt8]) -> [UInt8] {
        let length = UInt32(truncatingIfNeeded: payload.count)
        var bytes: [UInt8] = [
            UInt8(truncatingIfNeeded: length >> 24), UInt8(truncatingIfNeeded: length >> 16),
            UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
        ]
        bytes.reserveCapacity(4 + payload.count)
        bytes += payload
        return bytes
    }
}

/// Why a stream of frames cannot be read.
public enum FrameError: Error, Equatable, Sendable {
    /// A frame announced more than the reader accepts.
    case oversized(announced: Int, limit: Int)
    /// The stream ended inside a frame (`received` of `expected` bytes of it had arrived).
    case truncated(received: Int, expected: Int)
}

/// Reassembles frames from bytes as they arrive, in any pieces. Pure: feed it bytes, take frames.
public struct FrameDecoder {
    public let maxPayload: Int
    private var buffer: [UInt8] = []
    private var start = 0

    public init(maxPayload: Int = Frame.defaultMaxPayload) {
        self.maxPayload = maxPayload
    }

    /// Adds bytes read from the stream.
    public mutating func feed<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame's payload, nil until one has arrived whole.
    /// - Throws: `FrameError.oversized` as soon as a too-long prefix is seen (before its payload is read).
    public mutating func next() throws(FrameError) -> [UInt8]? {
        let available = buffer.count - start
        guard available >= 4 else { return nil }
        let length =
            Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16 | Int(buffer[start + 2]) << 8
            | Int(buffer[start + 3])
        guard length <= maxPayload else { throw .oversized(announced: length, limit: maxPayload) }
        guard available - 4 >= length else { return nil }
        let payload = Array(buffer[(start + 4)..<(start + 4 + length)])
        start += 4 + length
        if start > 1024 * 1024 && start * 2 > buffer.count {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        return payload
    }

    /// Called at the end of the stream: throws if it ended inside a frame.
    public func finish() throws(FrameError) {
        let available = buffer.count - start
        guard available > 0 else { return }
        guard available >= 4 else { throw .truncated(received: available, expected: 4) }
        let length =
            Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16 | Int(buffer[start + 2]) << 8
            | Int(buffer[start + 3])
        throw .truncated(received: available - 4, expected: length)
    }

    /// Bytes received and not yet returned as frames.
    public var pendingBytes: Int { buffer.count - start }
}
