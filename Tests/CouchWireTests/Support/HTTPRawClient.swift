#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

struct HTTPTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A parsed response as the test client saw it.
struct RawHTTPResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// A deliberately simple blocking TCP client that speaks raw bytes, independent of the server code.
final class RawHTTPClient {
    let descriptor: Int32
    private var buffer: [UInt8] = []

    /// Connects to `host` (numeric IPv4/IPv6) and `port`; receives time out after `timeout` seconds.
    init(host: String = "127.0.0.1", port: Int, timeout: Double = 5) throws {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else {
            throw HTTPTestFailure("cannot resolve \(host)")
        }
        defer { freeaddrinfo(info) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPTestFailure("socket failed: \(errno)") }
        guard connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            close(fd)
            throw HTTPTestFailure("connect failed: \(errno)")
        }
        var time = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        descriptor = fd
    }

    deinit { close(descriptor) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw HTTPTestFailure("send failed: \(errno)") }
            offset += sent
        }
    }

    /// Reads more bytes into the buffer; returns false at end of stream, throws on timeout.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(descriptor, &chunk, chunk.count, 0)
        if count > 0 {
            buffer += chunk[0..<count]
            return true
        }
        if count == 0 { return false }
        if errno == EAGAIN || errno == EWOULDBLOCK { throw HTTPTestFailure("receive timed out") }
        return false  // reset counts as closed
    }

    private func readLine() throws -> String {
        while true {
            if let index = buffer.firstIndex(of: 0x0A) {
                let line = buffer[..<index]
                buffer.removeFirst(index + 1)
                guard line.last == 0x0D else { throw HTTPTestFailure("response line without CRLF") }
                return String(decoding: line.dropLast(), as: UTF8.self)
            }
            guard try fill() else { throw HTTPTestFailure("connection closed mid-line") }
        }
    }

    func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw HTTPTestFailure("connection closed mid-body") }
        }
        let bytes = Array(buffer[..<count])
        buffer.removeFirst(count)
        return bytes
    }

    /// Reads one status line and header block (may be an interim 100 response).
    func readHead() throws -> RawHTTPResponse {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw HTTPTestFailure("bad status line: \(statusLine)")
        }
        var headers: [(String, String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw HTTPTestFailure("bad header: \(line)") }
            headers.append(
                (String(line[..<colon]), String(line[line.index(after: colon)...].drop { $0 == " " })))
        }
        return RawHTTPResponse(status: status, headers: headers, body: [])
    }

    /// Reads a whole response, framed by Content-Length, chunked coding, or connection close.
    func readResponse(isHEAD: Bool = false) throws -> RawHTTPResponse {
        var response = try readHead()
        if isHEAD || response.status == 204 || response.status == 304 || response.status < 200 { return response }
        if let length = response.header("Content-Length").flatMap({ Int($0) }) {
            response.body = try readExactly(length)
        } else if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            while true {
                let sizeLine = try readLine()
                guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else {
                    throw HTTPTestFailure("bad chunk size \(sizeLine)")
                }
                if size == 0 {
                    while try !readLine().isEmpty {}
                    break
                }
                response.body += try readExactly(size)
                guard try readLine().isEmpty else { throw HTTPTestFailure("chunk without CRLF") }
            }
        } else {
            response.body = try readUntilClosed()
        }
        return response
    }

    /// Reads until the server closes; throws on timeout.
    func readUntilClosed() throws -> [UInt8] {
        while try fill() {}
        let bytes = buffer
        buffer = []
        return bytes
    }

    /// True when the server closes the connection (without sending more bytes) within the receive timeout.
    func serverClosed() -> Bool {
        guard buffer.isEmpty else { return false }
        return (try? fill()) == false
    }
}

enum HTTPTestSupport {
    /// True when this machine can bind a TCP socket to ::1.
    static let hasIPv6Loopback: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
            }
        }
    }()
}
