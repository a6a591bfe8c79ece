/// Why `HTTPServer.start()` failed.
public enum HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `getaddrinfo` could not resolve the configured host.
    case cannotResolve(host: String, message: String)
    /// Creating, binding or listening on a socket failed, with the `errno` text.
    case cannotListen(host: String, port: Int, message: String)
    /// `start()` was called twice, or after `shutdown`.
    case notStartable
    /// The accept thread could not be created.
    case cannotStartThread

    public var description: String {
        switch self {
        case .cannotResolve(let host, let message): "cannot resolve \(host): \(message)"
        case .cannotListen(let host, let port, let message): "cannot listen on \(host) port \(port): \(message)"
        case .notStartable: "server already started or stopped"
        case .cannotStartThread: "cannot create the accept thread"
        }
    }
}
