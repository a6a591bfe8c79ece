#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A streaming multipart (RFC 2046) parser: a pure state machine with bounded memory.
///
/// Feed it the body in chunks of any size; it returns the events those bytes complete. Part
/// bodies are handed out as they arrive and never accumulated; only one part's header block is
/// buffered, up to ``MultipartLimits/maxPartHeaderBlockLength``. The delimiter `CRLF--boundary`
/// is found even when split across chunks (a KMP matcher holds at most the matched prefix, which
/// is always a prefix of the delimiter and so needs no storage).
///
/// Accepted, because real clients send it (CouchDB `couch_httpd:parse_multipart_request`,
/// Couchbase Lite `CBLMultipartWriter`, OkHttp): a preamble (such as CBL's leading CRLF), parts
/// with no headers or headers in any order, transport padding after a boundary, an epilogue, a
/// closing boundary with or without CRLF. Lines must end in CRLF: CouchDB's own parser matches
/// only `\r\n--B` and `\r\n\r\n`, so LF-only bodies are not tolerated.
public struct MultipartParser: Sendable {
    private enum State: Sendable {
        /// Discarding bytes until the first delimiter.
        case preamble
        /// Just after `--boundary`: expecting `--`, padding, or CRLF.
        case afterDelimiter
        /// Read one `-` after the boundary.
        case afterDelimiterDash
        /// Read padding after the boundary.
        case afterDelimiterPadding
        /// Read CR after the boundary (and padding).
        case afterDelimiterCR
        /// Collecting a part's header block.
        case headers
        /// Streaming a part's body.
        case body
        /// After the closing boundary; everything is ignored.
        case epilogue
        /// A parse error happened; the parser refuses further input.
        case failed(MultipartError)
    }

    /// `\r\n--` followed by the boundary.
    private let delimiter: [UInt8]
    /// KMP prefix function of `delimiter`: `border[k]` is the length of the longest proper
    /// prefix of `delimiter[0...k]` that is also its suffix.
    private let border: [Int]
    private var state: State = .preamble
    /// Delimiter bytes matched so far (in the preamble or a body).
    private var matched: Int
    private var headerBlock: [UInt8] = []
    private var preambleLength = 0
    private var paddingLength = 0
    private var partCount = 0
    private var inPart = false

    /// Creates a parser for one body.
    /// - Parameter boundary: The boundary from ``MultipartBoundary/parse(contentType:)``.
    public init(boundary: [UInt8]) {
        precondition(!boundary.isEmpty, "a multipart boundary is never empty")
        delimiter = Array("\r\n--".utf8) + boundary
        var border = [Int](repeating: 0, count: delimiter.count)
        var k = 0
        for i in 1..<delimiter.count {
            while k > 0, delimiter[i] != delimiter[k] { k = border[k - 1] }
            if delimiter[i] == delimiter[k] { k += 1 }
            border[i] = k
        }
        self.border = border
        // The body start counts as a line start: `--B` at offset 0 is the first delimiter
        // (RFC 2046 `dash-boundary`), so the matcher starts with the CRLF already matched.
        matched = 2
    }

    /// Whether the closing boundary has been read.
    public var isComplete: Bool {
        if case .epilogue = state { return true }
        return false
    }

    /// Parses the next bytes of the body.
    /// - Parameter bytes: Any number of bytes, continuing the previous call.
    /// - Returns: The events these bytes complete, in order.
    /// - Throws: A ``MultipartError``; the parser then refuses all further input.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(MultipartError) -> [MultipartEvent] {
        var events: [MultipartEvent] = []
        try parse(bytes) { events.append($0) }
        return events
    }

    /// Parses the next bytes of the body.
    public mutating func parse(_ bytes: [UInt8]) throws(MultipartError) -> [MultipartEvent] {
        var events: [MultipartEvent] = []
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(MultipartError) in try parse(buffer) { events.append($0) } }
        }
        try result.get()
        return events
    }

    /// Parses the next bytes of the body, handing each event to `emit` as it is found.
    ///
    /// This variant allocates no event array; body chunks are still copied out of `bytes` (one chunk per
    /// part per call).
    /// - Parameters:
    ///   - bytes: Any number of bytes, continuing the previous call.
    ///   - emit: Called synchronously for each event.
    /// - Throws: A ``MultipartError``; the parser then refuses all further input.
    public mutating func parse(
        _ bytes: UnsafeRawBufferPointer, _ emit: (MultipartEvent) -> Void
    ) throws(MultipartError) {
        if case .failed(let error) = state { throw error }
        var pending: [UInt8] = []
        do {
            try run(bytes) { event in
                switch event {
                case .bodyBytes(let piece):
                    pending.append(contentsOf: piece)
                    return
                case .partBegin(let headers):
                    Self.flush(&pending, emit)
                    emit(.partBegin(headers: headers))
                case .partEnd:
                    Self.flush(&pending, emit)
                    emit(.partEnd)
                case .end:
                    Self.flush(&pending, emit)
                    emit(.end)
                }
            }
            Self.flush(&pending, emit)
        } catch {
            state = .failed(error)
            throw error
        }
    }

    private static func flush(_ pending: inout [UInt8], _ emit: (MultipartEvent) -> Void) {
        guard !pending.isEmpty else { return }
        emit(.bodyChunk(pending))
        pending = []
    }

    /// Parses the next bytes of the body, lending part bytes to `handle` without copying them.
    ///
    /// For streaming large parts (attachments) straight from the socket buffer to their destination.
    /// - Parameters:
    ///   - bytes: Any number of bytes, continuing the previous call.
    ///   - handle: Called synchronously for each event; a `.bodyBytes` buffer is valid only during the call.
    ///     If it throws, no further events are delivered and the parser refuses further input.
    /// - Throws: A ``MultipartError`` (the parser then refuses all further input), or what `handle` threw.
    public mutating func parse(
        borrowing bytes: UnsafeRawBufferPointer, _ handle: (MultipartBorrowedEvent) throws -> Void
    ) throws {
        if case .failed(let error) = state { throw error }
        var handlerError: (any Error)?
        do {
            // A handler error stops delivery at once; the rest of this input is only scanned, not delivered.
            try run(bytes) { event in
                guard handlerError == nil else { return }
                do { try handle(event) } catch { handlerError = error }
            }
        } catch {
            state = .failed(error)
            throw error
        }
        if let handlerError {
            state = .failed(.aborted)
            throw handlerError
        }
    }

    /// Declares the end of the body.
    /// - Throws: `.truncated` if the closing boundary never came.
    public mutating func finish() throws(MultipartError) {
        switch state {
        case .epilogue: return
        case .failed(let error): throw error
        default:
            state = .failed(.truncated)
            throw .truncated
        }
    }

    // MARK: - State machine

    private mutating func run(
        _ bytes: UnsafeRawBufferPointer, _ emit: (MultipartBorrowedEvent) -> Void
    ) throws(MultipartError) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        var index = 0
        while index < count {
            switch state {
            case .preamble:
                index = try scanPreamble(bytes, from: index)
            case .body:
                index = scanBody(bytes, from: index, emit)
            case .headers:
                index = try collectHeaders(bytes, from: index, emit)
            case .epilogue:
                return
            case .failed(let error):
                throw error
            case .afterDelimiter, .afterDelimiterDash, .afterDelimiterPadding, .afterDelimiterCR:
                try afterDelimiter(base.load(fromByteOffset: index, as: UInt8.self), emit)
                index += 1
            }
        }
    }

    /// Advances the KMP matcher by one byte.
    @inline(__always)
    private func advance(_ matched: Int, _ byte: UInt8) -> Int {
        var m = matched
        while m > 0, delimiter[m] != byte { m = border[m - 1] }
        return delimiter[m] == byte ? m + 1 : 0
    }

    private mutating func scanPreamble(_ bytes: UnsafeRawBufferPointer, from start: Int) throws(MultipartError) -> Int {
        var index = start
        while index < bytes.count {
            matched = advance(matched, bytes[index])
            index += 1
            preambleLength += 1
            if matched == delimiter.count {
                matched = 0
                state = .afterDelimiter
                return index
            }
            // The virtual leading CRLF is not body bytes; only real bytes count.
            if preambleLength > MultipartLimits.maxPreambleLength + delimiter.count { throw .preambleTooLarge }
        }
        return index
    }

    /// Streams body bytes until the delimiter or the end of input.
    ///
    /// Positions are counted in a virtual stream: the `carry` delimiter prefix held from the
    /// previous call, then `bytes[start...]`. Data is released once per call, lazily, up to the
    /// delimiter or to the end minus the bytes the matcher still holds.
    private mutating func scanBody(
        _ bytes: UnsafeRawBufferPointer, from start: Int, _ emit: (MultipartBorrowedEvent) -> Void
    ) -> Int {
        let carry = matched
        let count = bytes.count
        var index = start
        var m = matched
        while index < count {
            if m == 0 {
                // Fast path: only CR can start a delimiter.
                guard let base = bytes.baseAddress,
                    let hit = memchr(base + index, 0x0D, count - index)
                else {
                    index = count
                    break
                }
                index = base.distance(to: UnsafeRawPointer(hit))
            }
            m = advance(m, bytes[index])
            index += 1
            if m == delimiter.count {
                let end = carry + (index - start) - delimiter.count
                emitData(bytes, start: start, carry: carry, from: 0, to: end, emit)
                emit(.partEnd)
                inPart = false
                matched = 0
                state = .afterDelimiter
                return index
            }
        }
        matched = m
        emitData(bytes, start: start, carry: carry, from: 0, to: carry + (index - start) - m, emit)
        return index
    }

    /// Emits virtual range `from..<to` (see `scanBody`): the held delimiter prefix's part of it, then the input's.
    private func emitData(
        _ bytes: UnsafeRawBufferPointer, start: Int, carry: Int, from: Int, to: Int,
        _ emit: (MultipartBorrowedEvent) -> Void
    ) {
        guard to > from else { return }
        if from < carry {
            delimiter.withUnsafeBytes { held in
                emit(.bodyBytes(UnsafeRawBufferPointer(rebasing: held[from..<min(to, carry)])))
            }
        }
        let inputFrom = max(from, carry) - carry + start
        let inputTo = to - carry + start
        if inputTo > inputFrom {
            emit(.bodyBytes(UnsafeRawBufferPointer(rebasing: bytes[inputFrom..<inputTo])))
        }
    }

    private mutating func afterDelimiter(
        _ byte: UInt8, _ emit: (MultipartBorrowedEvent) -> Void
    ) throws(MultipartError) {
        let isPadding = byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
        switch (state, byte) {
        case (.afterDelimiter, UInt8(ascii: "-")):
            state = .afterDelimiterDash
        case (.afterDelimiterDash, UInt8(ascii: "-")):
            emit(.end)
            state = .epilogue
        case (.afterDelimiter, UInt8(ascii: "\r")), (.afterDelimiterPadding, UInt8(ascii: "\r")):
            state = .afterDelimiterCR
        case (.afterDelimiter, _) where isPadding, (.afterDelimiterPadding, _) where isPadding:
            paddingLength += 1
            guard paddingLength <= MultipartLimits.maxTransportPadding else { throw .malformedDelimiter }
            state = .afterDelimiterPadding
        case (.afterDelimiterCR, UInt8(ascii: "\n")):
            paddingLength = 0
            partCount += 1
            guard partCount <= MultipartLimits.maxParts else { throw .tooManyParts }
            headerBlock.removeAll(keepingCapacity: true)
            state = .headers
        default:
            throw .malformedDelimiter
        }
    }

    private mutating func collectHeaders(
        _ bytes: UnsafeRawBufferPointer, from start: Int, _ emit: (MultipartBorrowedEvent) -> Void
    ) throws(MultipartError) -> Int {
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            headerBlock.append(byte)
            guard headerBlock.count <= MultipartLimits.maxPartHeaderBlockLength else { throw .headerBlockTooLarge }
            guard byte == UInt8(ascii: "\n") else { continue }
            // The block ends at an empty line: CRLF right away, or CRLF CRLF.
            let n = headerBlock.count
            let done =
                (n == 2 && headerBlock[0] == 0x0D)
                || (n >= 4 && headerBlock[n - 2] == 0x0D && headerBlock[n - 3] == 0x0A && headerBlock[n - 4] == 0x0D)
            if done {
                let headers = try Self.parseHeaderBlock(headerBlock.dropLast(2))
                emit(.partBegin(headers: headers))
                inPart = true
                matched = 0
                state = .body
                return index
            }
        }
        return index
    }

    /// Splits `Name: value` lines separated by CRLF; bare CR or LF is refused, because
    /// tolerating it would let header lines be read differently here and in other parsers.
    static func parseHeaderBlock(_ block: ArraySlice<UInt8>) throws(MultipartError) -> [(String, String)] {
        var headers: [(String, String)] = []
        var lineStart = block.startIndex
        var index = block.startIndex
        func addLine(_ line: ArraySlice<UInt8>) throws(MultipartError) {
            guard !line.isEmpty else { return }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw .malformedHeader }
            let name = trim(line[line.startIndex..<colon])
            guard !name.isEmpty, !name.contains(where: { $0 == 0x20 || $0 == 0x09 }) else { throw .malformedHeader }
            let value = trim(line[(colon + 1)...])
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        while index < block.endIndex {
            let byte = block[index]
            if byte == 0x0D {
                guard index + 1 < block.endIndex, block[index + 1] == 0x0A else { throw .malformedHeader }
                try addLine(block[lineStart..<index])
                index += 2
                lineStart = index
            } else if byte == 0x0A {
                throw .malformedHeader
            } else {
                index += 1
            }
        }
        try addLine(block[lineStart..<block.endIndex])
        return headers
    }

    private static func trim(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return slice
    }
}
