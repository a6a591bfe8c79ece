import CouchWire

/// The status line and header fields of a response, parsed strictly enough to stay in step with the
/// peer (a malformed head is a protocol error, never a guess).
struct ResponseHead: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var http10: Bool

    /// Parses a complete head (without its final empty line).
    static func parse(_ bytes: ArraySlice<UInt8>) throws(ReplicationError) -> ResponseHead {
        var lines = splitLines(bytes)
        guard !lines.isEmpty else { throw .protocolError("empty response head") }
        let statusLine = lines.removeFirst()
        // HTTP/1.x SP 3DIGIT [SP reason]
        let parts = statusLine.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].starts(with: Array("HTTP/1.".utf8)), parts[1].count == 3,
            let status = Int(String(decoding: parts[1], as: UTF8.self)), status >= 100
        else {
            throw .protocolError("not an HTTP/1.x response: \(String(decoding: statusLine.prefix(60), as: UTF8.self))")
        }
        var headers = HTTPHeaders()
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else {
                throw .protocolError("malformed response header line")
            }
            let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self)
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self)
            headers.add(name, value.trimmingCharacters())
        }
        return ResponseHead(status: status, headers: headers, http10: parts[0].elementsEqual(Array("HTTP/1.0".utf8)))
    }

    private static func splitLines(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == 0x0A {
                var end = index
                if end > start && bytes[end - 1] == 0x0D { end -= 1 }
                lines.append(bytes[start..<end])
                start = index + 1
            }
            index += 1
        }
        if start < bytes.endIndex { lines.append(bytes[start...]) }
        return lines
    }
}

extension String {
    func trimmingCharacters() -> String {
        var view = Substring(self)
        while view.first == " " || view.first == "\t" { view.removeFirst() }
        while view.last == " " || view.last == "\t" { view.removeLast() }
        return String(view)
    }
}
