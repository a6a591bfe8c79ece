#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A pure, incremental parser for one request head (request line and header fields), free of I/O.
///
/// Feed it whatever bytes arrived; it keeps a partial line between calls and checks the limits in
/// `HTTPLimits` as bytes arrive, so an endless line is refused before it is complete. It is strict
/// ([RFC 9112](https://www.rfc-editor.org/rfc/rfc9112)): lines must end in CRLF (a bare LF or CR is an error),
/// obsolete line folding is refused, and no whitespace is allowed between a field name and its colon.
/// After it returns `.head` it is ready for the next request on the same connection.
public struct HTTPRequestParser: Sendable {
    /// The outcome of one `parse` call.
    public enum ParseStep: Sendable {
        /// Every byte was consumed; the head is not complete yet.
        case needMoreData
        /// A complete head; `consumed` bytes of this input belong to it, the rest to the body or the next request.
        case head(HTTPRequestHead, framing: HTTPBodyFraming, consumed: Int)
    }

    private enum State: Sendable {
        case requestLine
        case headerLines(method: String, target: String, version: HTTPVersion)
    }

    private var state = State.requestLine
    /// The current, incomplete line (including a trailing CR if one arrived).
    private var line: [UInt8] = []
    private var headerBlockBytes = 0
    private var emptyLinesSkipped = 0
    private var headers = HTTPHeaders()

    public init() {}

    /// True once any byte of a request (other than ignorable leading CRLFs) has been received.
    public var hasPartialRequest: Bool {
        if case .headerLines = state { return true }
        return !line.isEmpty
    }

    /// Consumes bytes of a request head.
    /// - Parameter bytes: Newly received bytes, possibly containing the body or further requests after the head.
    /// - Returns: `.needMoreData` after consuming all of `bytes`, or the head and how many bytes it used.
    /// - Throws: `HTTPParseError` on a syntax error or an exceeded limit; the parser must then be discarded.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> ParseStep {
        guard let base = bytes.baseAddress else { return .needMoreData }
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            guard let found = memchr(base + index, 0x0A, remaining) else {
                line.append(contentsOf: UnsafeRawBufferPointer(start: base + index, count: remaining))
                try checkPartialLine()
                return .needMoreData
            }
            let lineFeed = base.distance(to: UnsafeRawPointer(found))
            line.append(contentsOf: UnsafeRawBufferPointer(start: base + index, count: lineFeed - index))
            index = lineFeed + 1
            try checkPartialLine()
            guard line.last == 0x0D else { throw .malformed("Line ends in a bare LF; CRLF is required.") }
            line.removeLast()
            if let (head, framing) = try completeLine() {
                return .head(head, framing: framing, consumed: index)
            }
        }
        return .needMoreData
    }

    /// Enforces the length limits on the line being received (before its CRLF is complete).
    private func checkPartialLine() throws(HTTPParseError) {
        // A trailing CR may still be the first half of the CRLF, so allow one extra byte.
        switch state {
        case .requestLine:
            if line.count > HTTPLimits.maxRequestLineBytes + 1 { throw .requestLineTooLong }
        case .headerLines:
            if headerBlockBytes + line.count > HTTPLimits.maxHeaderBlockBytes { throw .headerBlockTooLarge }
        }
    }

    /// Handles one complete line (CRLF removed); returns the head when the empty line ends the block.
    private mutating func completeLine() throws(HTTPParseError) -> (HTTPRequestHead, HTTPBodyFraming)? {
        defer { line.removeAll(keepingCapacity: true) }
        switch state {
        case .requestLine:
            if line.isEmpty {
                emptyLinesSkipped += 1
                if emptyLinesSkipped > HTTPLimits.maxLeadingEmptyLines { throw .malformed("Too many empty lines.") }
                return nil
            }
            if line.count > HTTPLimits.maxRequestLineBytes { throw .requestLineTooLong }
            let (method, target, version) = try Self.parseRequestLine(line)
            state = .headerLines(method: method, target: target, version: version)
            return nil
        case .headerLines(let method, let target, let version):
            headerBlockBytes += line.count + 2
            if headerBlockBytes > HTTPLimits.maxHeaderBlockBytes { throw .headerBlockTooLarge }
            if !line.isEmpty {
                if headers.count >= HTTPLimits.maxHeaderCount { throw .tooManyHeaders }
                let (name, value) = try Self.parseField(line)
                headers.add(name, value)
                return nil
            }
            if headers.values("Host").count > 1 { throw .malformed("More than one Host header.") }
            let head = HTTPRequestHead(method: method, target: target, version: version, headers: headers)
            let framing = try HTTPBodyFraming(of: head)
            self = HTTPRequestParser()
            return (head, framing)
        }
    }

    /// `method SP request-target SP HTTP-version`, with exactly one space between the three parts.
    private static func parseRequestLine(_ line: [UInt8]) throws(HTTPParseError) -> (String, String, HTTPVersion) {
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("Invalid request line.") }
        let method = parts[0]
        let target = parts[1]
        let version = parts[2]
        guard !method.isEmpty, method.allSatisfy(isTokenByte) else { throw .malformed("Invalid method.") }
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .malformed("Invalid request target.")
        }
        guard target.first == 0x2F || target.elementsEqual([0x2A]) || isAbsoluteForm(target) else {
            throw .malformed("Unsupported request target form.")
        }
        // "HTTP/" DIGIT "." DIGIT
        let prefix: [UInt8] = Array("HTTP/".utf8)
        guard version.count == 8, version.starts(with: prefix) else { throw .malformed("Invalid HTTP version.") }
        let major = version[version.startIndex + 5]
        let dot = version[version.startIndex + 6]
        let minor = version[version.startIndex + 7]
        guard isDigit(major), dot == 0x2E, isDigit(minor) else { throw .malformed("Invalid HTTP version.") }
        guard major == 0x31 else { throw .unsupportedVersion }
        return (
            String(decoding: method, as: UTF8.self), String(decoding: target, as: UTF8.self),
            HTTPVersion(major: 1, minor: Int(minor - 0x30))
        )
    }

    /// `field-name ":" OWS field-value OWS`; no whitespace before the colon, no folding, no control characters.
    private static func parseField(_ line: [UInt8]) throws(HTTPParseError) -> (String, String) {
        if line[0] == 0x20 || line[0] == 0x09 { throw .malformed("Obsolete header line folding is not allowed.") }
        guard let colon = line.firstIndex(of: 0x3A) else { throw .malformed("Header line without a colon.") }
        let name = line[..<colon]
        guard !name.isEmpty else { throw .malformed("Empty header name.") }
        if let last = name.last, last == 0x20 || last == 0x09 {
            throw .malformed("Whitespace between header name and colon is not allowed.")
        }
        guard name.allSatisfy(isTokenByte) else { throw .malformed("Invalid header name.") }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        // field-vchar = VCHAR / obs-text, with SP and HTAB inside; CR, LF, NUL and other controls are refused.
        guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
            throw .malformed("Invalid character in header value.")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    private static func isAbsoluteForm(_ target: ArraySlice<UInt8>) -> Bool {
        let lower = String(decoding: target.prefix(8), as: UTF8.self).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// tchar from RFC 9110 §5.6.2.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}
