import CouchWire

/// A socket plus the bytes read past the current response head: what a pooled keep-alive
/// connection is.
///
/// `@unchecked Sendable`: one thread at a time uses it. `HTTPClient` takes it out of its idle list (under the
/// client's `Mutex`) for one request; that request's thread, then its `ClientResponse`, alone reads and writes
/// `buffer`, `start`, `closed` and `scratch` until the response hands it back with `release` (under the same
/// `Mutex`, which orders those accesses before the next user's). An idle connection is closed only under that
/// lock, while nobody uses it; cancelling from another thread shuts down its socket's descriptor, never this object.
final class ClientConnection: @unchecked Sendable {
    let socket: ClientSocket
    private var buffer: [UInt8] = []
    private var start = 0
    private var closed = false

    /// Where socket reads land before they are appended to `buffer`.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    init(socket: ClientSocket) { self.socket = socket }

    deinit { scratch.deallocate() }

    var hasBufferedBytes: Bool { start < buffer.count }

    /// Reads up to the end of a response head (the empty line) and parses it, within `deadline`.
    func readHead(timeout: Duration, deadline: ReplyDeadline) throws(ReplicationError) -> ResponseHead {
        // How far past `start` the search for the empty line has looked (a trickled head is scanned once).
        var scanned = 0
        while true {
            if let end = headEnd(from: start + scanned) {
                let head = buffer[start..<end]
                start = end + 4
                scanned = 0
                let parsed = try ResponseHead.parse(head)
                if parsed.status >= 100 && parsed.status < 200 && parsed.status != 101 { continue }
                return parsed
            }
            scanned = max(0, buffer.count - start - 3)
            guard buffer.count - start < 256 * 1024 else { throw .protocolError("response head too large") }
            let count = try deadline.receive(received: 0, timeout: timeout) { (wait) throws(ReplicationError) in
                try socket.receive(into: scratch, timeout: wait)
            }
            if count == 0 { throw .connectionReset(socket.peer) }
            compact()
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
        }
    }

    private func headEnd(from: Int) -> Int? {
        guard buffer.count - start >= 4 else { return nil }
        var index = max(from, start)
        while index + 3 < buffer.count {
            if buffer[index] == 0x0D && buffer[index + 1] == 0x0A && buffer[index + 2] == 0x0D
                && buffer[index + 3] == 0x0A
            {
                return index
            }
            index += 1
        }
        return nil
    }

    private func compact() {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 64 * 1024 {
            buffer.removeFirst(start)
            start = 0
        }
    }

    /// Raw body bytes: buffered ones first, then straight from the socket.
    func read(into out: UnsafeMutableRawBufferPointer, timeout: Duration) throws(ReplicationError) -> Int {
        guard out.count > 0 else { return 0 }
        if start < buffer.count {
            let count = min(out.count, buffer.count - start)
            buffer.withUnsafeBytes { raw in
                out.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[start..<(start + count)]))
            }
            start += count
            compact()
            return count
        }
        return try socket.receive(into: out, timeout: timeout)
    }

    /// Decoded chunked body bytes; 0 when the input held only framing (call again) or the body ended.
    func readChunked(
        _ decoder: inout HTTPChunkedDecoder, into out: UnsafeMutableRawBufferPointer, timeout: Duration
    ) throws(ReplicationError) -> Int {
        if start >= buffer.count {
            let count = try socket.receive(into: scratch, timeout: timeout)
            if count == 0 { throw .connectionReset(socket.peer) }
            buffer.removeAll(keepingCapacity: true)
            start = 0
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
        }
        // Body bytes in the buffer that the decoder has already passed over are kept as a window.
        if let window = pendingData {
            let count = min(out.count, window.count)
            buffer.withUnsafeBytes { raw in
                out.copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: raw[window.lowerBound..<(window.lowerBound + count)]))
            }
            pendingData = count == window.count ? nil : (window.lowerBound + count)..<window.upperBound
            if pendingData == nil { start = window.upperBound }
            return count
        }
        let step: HTTPChunkedDecoder.Step
        do {
            step = try buffer.withUnsafeBytes { raw throws(HTTPParseError) in
                try decoder.decode(UnsafeRawBufferPointer(rebasing: raw[start..<buffer.count]))
            }
        } catch {
            throw .protocolError("bad chunked response body")
        }
        switch step {
        case .needMoreData:
            start = buffer.count
            return 0
        case .data(let range):
            pendingData = (start + range.lowerBound)..<(start + range.upperBound)
            return try readChunked(&decoder, into: out, timeout: timeout)
        case .end(let consumed):
            start += consumed
            return 0
        }
    }

    private var pendingData: Range<Int>?

    func close() {
        guard !closed else { return }
        closed = true
        socket.close()
    }
}

/// The bound on a whole response: its head must arrive within `2 × timeout` of the request being sent, and
/// its body may take that plus one second per `ClientRequest.minimumBytesPerSecond` bytes read. Each wait is
/// the shorter of the progress timeout and what is left; past the bound a read fails with `.tooSlow`.
struct ReplyDeadline: Sendable {
    let start: ContinuousClock.Instant
    let base: Duration
    /// The request, for the message (`POST /db/_revs_diff`).
    let what: String
    let peer: String

    init(timeout: Duration, what: String, peer: String) {
        start = .now
        base = timeout * 2
        self.what = what
        self.peer = peer
    }

    func allowance(received: Int) -> Duration {
        base + .seconds(received / ClientRequest.minimumBytesPerSecond)
    }

    /// Runs one read with a wait bounded by both the progress timeout and this deadline.
    func receive(
        received: Int, timeout: Duration, _ read: (Duration) throws(ReplicationError) -> Int
    ) throws(ReplicationError) -> Int {
        let left = start + allowance(received: received) - .now
        guard left > .zero else { throw expired(received) }
        do {
            return try read(min(timeout, left))
        } catch {
            // A wait cut short by the deadline that times out is the deadline's.
            if case .timeout = error, left <= timeout { throw expired(received) }
            throw error
        }
    }

    func expired(_ received: Int) -> ReplicationError {
        let seconds = allowance(received: received).components.seconds
        return .tooSlow(
            peer,
            "its reply to \(what) was not complete after \(seconds) s (\(received) body bytes had arrived); "
                + "a peer must answer within twice the \(base.components.seconds / 2) s progress timeout, "
                + "then send at least \(ClientRequest.minimumBytesPerSecond / 1024) KiB/s")
    }
}
