/// The byte stream an `HTTPConnection` speaks through: the plain socket itself, or TLS over it.
///
/// Everything above it (parsing, limits, timeouts, the handlers) is the same for both; the registry
/// still holds the `HTTPSocket`, whose `shutdown()` wakes a waiting thread whichever transport it uses.
protocol HTTPTransport: AnyObject {
    /// Receives into `buffer`, waiting until `deadline` for data.
    func receive(into buffer: UnsafeMutableRawBufferPointer, deadline: HTTPDeadline) -> HTTPSocket.ReceiveOutcome
    /// Sends all of `bytes`; each wait for buffer space may last up to `stall`.
    /// - Throws: `.timeout` when the peer stops reading, `.clientGone` when the connection failed.
    func send(_ bytes: UnsafeRawBufferPointer, stall: Duration) throws(HTTPError)
    /// Non-blocking: true when the peer has closed (or reset) its side.
    func isPeerClosed() -> Bool
    /// Ends our direction but keeps reading (lingering after an error response).
    func shutdownWrite()
    /// Called once before the descriptor is closed (TLS says close_notify).
    func finish()
}

extension HTTPTransport {
    func send(_ bytes: [UInt8], stall: Duration) throws(HTTPError) {
        let outcome: Result<Void, HTTPError> = bytes.withUnsafeBytes { raw in
            Result { () throws(HTTPError) in try send(raw, stall: stall) }
        }
        try outcome.get()
    }
}

extension HTTPSocket: HTTPTransport {
    func finish() {}
}
