extension HTTPResponseWriter {
    /// Answers `101 Switching Protocols` and turns the connection into a WebSocket
    /// ([RFC 6455 §4.2.2](https://www.rfc-editor.org/rfc/rfc6455#section-4.2.2)); the HTTP exchange ends here and
    /// the connection closes when the handler returns.
    ///
    /// Decide authorization and every refusal (401, 403, 404, the handshake's 400/426) before calling it: after the
    /// 101 only WebSocket close codes remain.
    /// - Parameters:
    ///   - handshake: The checked request and chosen subprotocol.
    ///   - limits: Frame and message sizes and the timers of the connection.
    /// - Returns: The channel, usable on the handler's thread until the handler returns.
    /// - Throws: `.responseMisuse` when a response already started; `.clientGone`/`.timeout` if the 101 cannot be sent.
    public func upgradeToWebSocket(
        _ handshake: WebSocketHandshake, limits: WebSocketLimits = WebSocketLimits()
    ) throws(HTTPError) -> WebSocketChannel {
        guard !headSent else { throw .responseMisuse("The response head was already sent.") }
        guard !isBroken else { throw .clientGone }
        let connection = upgradeConnection
        let head = handshake.responseHead(serverHeader: connection.configuration.serverHeader)
        markUpgraded()
        try connection.transport.send(head, stall: connection.configuration.sendStallTimeout)
        connection.registry.markUpgraded(connection.id)
        return WebSocketChannel(connection: connection, selectedProtocol: handshake.selectedProtocol, limits: limits)
    }
}
