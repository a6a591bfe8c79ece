import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Serves HTTP over in-process socket pairs: no port, no TCP, nothing another process can reach.
///
/// The replicator reaches a local database through one of these, so a local endpoint and a remote
/// one speak the same protocol through the same client, and every rule of the endpoints (revision
/// merging, attachment streaming, error bodies) applies unchanged. Each `connect()` makes a
/// `socketpair`, serves one end on a connection thread exactly like an accepted socket, and hands the
/// other end to the caller. The handler is a closure of its own (not the network server's), so whatever
/// it trusts is decided by who built it, never by anything a request carries.
public final class HTTPLocalServer: Sendable {
    private let configuration: HTTPServerConfiguration
    private let handler: HTTPHandler
    private let registry: HTTPConnectionRegistry

    /// - Parameter handler: Called for every request of every local connection.
    public init(configuration: HTTPServerConfiguration = HTTPServerConfiguration(), handler: @escaping HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
        registry = HTTPConnectionRegistry(maxConnections: max(1, configuration.maxConnections))
        _ = registry.markRunning()
        registry.acceptThreadExited()
    }

    /// A new connection: the caller owns (and must close) the returned descriptor.
    /// - Returns: nil when no socket pair or thread could be made, or after `shutdown`.
    public func connect() -> Int32? {
        var pair: [Int32] = [-1, -1]
        #if canImport(Glibc)
            let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
            let kind = SOCK_STREAM
        #endif
        guard socketpair(AF_UNIX, kind, 0, &pair) == 0 else { return nil }
        signal(SIGPIPE, SIG_IGN)
        let socket = HTTPSocket(descriptor: pair[0])
        guard let id = registry.register(socket) else {
            close(pair[0])
            close(pair[1])
            return nil
        }
        let connection = HTTPConnection(
            socket: socket, id: id, configuration: configuration, registry: registry, handler: handler,
            remoteAddress: nil)
        guard HTTPThread.spawn({ connection.run() }) else {
            registry.removeAndClose(id, socket: socket)
            close(pair[1])
            return nil
        }
        return pair[1]
    }

    /// Closes every local connection (in-flight requests get up to `timeout` to finish).
    public func shutdown(timeout: Duration) {
        guard registry.beginShutdown() else { return }
        let seconds = Double(timeout.clampedNanoseconds) / 1e9
        registry.waitForBusyConnections(until: Date(timeIntervalSinceNow: seconds))
        registry.shutdownAllSockets()
        registry.waitForAllThreads(until: Date(timeIntervalSinceNow: seconds))
    }
}
