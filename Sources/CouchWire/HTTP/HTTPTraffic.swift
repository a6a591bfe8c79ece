import Synchronization

/// What a server's sockets carried: bytes in and out and the connections open now, as plain atomics
/// (relaxed: these are statistics, read by `_node/_local/_stats`, never used to order anything).
///
/// One is shared by every connection of an `HTTPServer` (`HTTPServerConfiguration.traffic`), so the
/// request path pays one atomic add per `recv`/`send`, never a lock.
public final class HTTPTraffic: Sendable {
    private let received = Atomic<Int>(0)
    private let sent = Atomic<Int>(0)
    private let open = Atomic<Int>(0)
    private let accepted = Atomic<Int>(0)

    public init() {}

    /// Bytes read from client sockets (request heads and bodies), since start.
    public var bytesReceived: Int { received.load(ordering: .relaxed) }
    /// Bytes written to client sockets (response heads and bodies), since start.
    public var bytesSent: Int { sent.load(ordering: .relaxed) }
    /// Connections being served now.
    public var openConnections: Int { open.load(ordering: .relaxed) }
    /// Connections served since start.
    public var connectionsAccepted: Int { accepted.load(ordering: .relaxed) }

    func didReceive(_ count: Int) { received.add(count, ordering: .relaxed) }
    func didSend(_ count: Int) { sent.add(count, ordering: .relaxed) }
    func connectionOpened() {
        open.add(1, ordering: .relaxed)
        accepted.add(1, ordering: .relaxed)
    }
    func connectionClosed() { open.subtract(1, ordering: .relaxed) }
}
