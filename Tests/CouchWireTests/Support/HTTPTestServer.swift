import Foundation
import Synchronization

@testable import CouchWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Shared state tests use to coordinate with handlers running on connection threads.
final class HTTPHandlerProbe: Sendable {
    let arrivals = Mutex(0)
    let observedErrors = Mutex<[HTTPError]>([])
    let released = Mutex(false)

    func arrive() -> Int {
        arrivals.withLock { count in
            count += 1
            return count
        }
    }

    var arrivalCount: Int { arrivals.withLock { $0 } }

    func record(_ error: HTTPError) { observedErrors.withLock { $0.append(error) } }
}

/// A test application exercising the engine; routes by path.
func httpTestHandler(probe: HTTPHandlerProbe, gateCount: Int = 0) -> HTTPHandler {
    { head, body, writer in
        do throws(HTTPError) {
            switch head.path {
            case "/hello":
                try writer.respond(status: 200, headers: ["Content-Type": "text/plain"], body: Array("hello".utf8))
            case "/echo":
                let bytes = try body.readAll(limit: 1 << 20)
                try writer.respond(
                    status: 200, headers: ["X-Method": head.method, "X-Path": head.target], body: bytes)
            case "/count":
                var total = 0
                while true {
                    let piece = try body.read(upTo: 64 * 1024)
                    if piece.isEmpty { break }
                    total += piece.count
                }
                try writer.respond(status: 200, headers: [:], body: Array(String(total).utf8))
            case "/stream":
                try writer.writeHead(status: 200, headers: ["Content-Type": "text/plain"], contentLength: nil)
                for index in 0..<3 {
                    try writer.write(Array("line \(index)\n".utf8))
                    try writer.flush()
                }
                try writer.finish()
            case "/fails-before-sending":
                // A stream that fails while all of it is still buffered: it can still become an error.
                try writer.writeHead(status: 200, headers: ["Content-Type": "application/json"], contentLength: nil)
                try writer.write(Array("{\"rows\":[".utf8))
                guard writer.retract() else { throw .responseMisuse("could not retract") }
                try writer.respond(status: 404, headers: [:], body: Array("gone".utf8))
            case "/fails-after-sending":
                // A stream that fails after some of it went out: it can only be cut off.
                try writer.writeHead(status: 200, headers: ["Content-Type": "application/json"], contentLength: nil)
                try writer.write(Array("{\"rows\":[".utf8))
                try writer.flush()
                guard !writer.retract() else { throw .responseMisuse("retracted bytes already sent") }
                writer.abort()
            case "/slow":
                usleep(400_000)
                try writer.respond(status: 200, headers: [:], body: Array("done".utf8))
            case "/gate":
                // Holds every request until `gateCount` have arrived, like long-poll feeds waiting for a change.
                _ = probe.arrive()
                let deadline = HTTPDeadline.after(.seconds(20))
                while probe.arrivalCount < gateCount, HTTPDeadline.now() < deadline { usleep(5_000) }
                try writer.respond(status: 200, headers: [:], body: Array(String(probe.arrivalCount).utf8))
            case "/hold":
                // Holds the request until the test releases it, like a long-poll feed with no changes.
                _ = probe.arrive()
                let deadline = HTTPDeadline.after(.seconds(30))
                while !probe.released.withLock({ $0 }), HTTPDeadline.now() < deadline { usleep(10_000) }
                try writer.respond(status: 200, headers: [:], body: Array("released".utf8))
            case "/longpoll":
                _ = probe.arrive()
                try writer.writeHead(status: 200, headers: [:], contentLength: nil)
                try writer.flush()
                while !writer.isPeerClosed() { usleep(10_000) }
                probe.record(.clientGone)
            case "/overflow":
                try writer.writeHead(status: 200, headers: [:], contentLength: 3)
                try writer.write(Array("12345".utf8))
            case "/flood":
                try writer.writeHead(status: 200, headers: [:], contentLength: nil)
                let block = [UInt8](repeating: 0x66, count: 64 * 1024)
                for _ in 0..<1024 { try writer.write(block) }
                try writer.finish()
            case "/stack":
                // Reports this thread's stack size, to check the engine's explicit pthread stack.
                // pthread_getattr_np is a GNU extension the Glibc module does not export; look it up instead.
                typealias GetAttr = @convention(c) (pthread_t, UnsafeMutablePointer<pthread_attr_t>) -> Int32
                let attributes = UnsafeMutablePointer<pthread_attr_t>.allocate(capacity: 1)
                defer { attributes.deallocate() }
                var size = 0
                if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pthread_getattr_np"),
                    unsafeBitCast(symbol, to: GetAttr.self)(pthread_self(), attributes) == 0
                {
                    pthread_attr_getstacksize(attributes, &size)
                    pthread_attr_destroy(attributes)
                }
                try writer.respond(status: 200, headers: [:], body: Array(String(size).utf8))
            case "/nothing":
                break
            case "/close":
                writer.closeAfterResponse()
                try writer.respond(status: 200, headers: [:], body: Array("bye".utf8))
            default:
                try writer.respond(status: 404, headers: [:], body: Array("{\"error\":\"not_found\"}".utf8))
            }
        } catch {
            probe.record(error)
        }
    }
}

/// Starts a server on 127.0.0.1 port 0 (unless configured otherwise), runs `body`, and shuts it down.
func withHTTPTestServer(
    _ configure: (inout HTTPServerConfiguration) -> Void = { _ in }, gateCount: Int = 0,
    _ body: (Int, HTTPServer, HTTPHandlerProbe) throws -> Void
) throws {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
    configuration.idleTimeout = .seconds(5)
    configuration.headerTimeout = .seconds(5)
    configuration.bodyStallTimeout = .seconds(5)
    configure(&configuration)
    let probe = HTTPHandlerProbe()
    let server = HTTPServer(configuration: configuration, handler: httpTestHandler(probe: probe, gateCount: gateCount))
    let port = try server.start()
    defer { server.shutdown(timeout: .seconds(2)) }
    try body(port, server, probe)
}

/// Resident set size of this process in bytes, from /proc/self/statm (0 where unavailable).
func processResidentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Seconds elapsed while running `body`.
func elapsedSeconds(_ body: () throws -> Void) rethrows -> Double {
    let start = HTTPDeadline.now()
    try body()
    return Double(HTTPDeadline.now().nanoseconds - start.nanoseconds) / 1e9
}
