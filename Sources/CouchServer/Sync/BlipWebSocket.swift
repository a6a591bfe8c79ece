import Blip
import CouchWire

/// BLIP over a WebSocket channel, on the connection's own thread: every binary message is one BLIP frame in, every
/// frame `BlipConnection` has ready goes out as one binary message. A text message closes with 1003 (BLIP is binary
/// only), a frame the BLIP layer refuses with its code (1002, or 1009 for sizes).
///
/// The sync protocol (issue 39 item 3) is what will run on it; until then only tests do.
package final class BlipWebSocket {
    package let channel: WebSocketChannel
    package let connection: BlipConnection

    package init(channel: WebSocketChannel, limits: BlipLimits = BlipLimits()) {
        self.channel = channel
        connection = BlipConnection(limits: limits)
    }

    /// Serves until the connection ends: each complete incoming message (a request, or a reply to one of ours) goes
    /// to `handle`, which answers or sends through `connection`; what it queued is written before the next read.
    /// - Returns: The code the WebSocket ended with.
    @discardableResult
    package func run(_ handle: (BlipMessage) -> Void) -> WebSocketCloseCode {
        while true {
            do {
                while let frame = try connection.nextFrame() { try channel.send(.binary(frame)) }
            } catch let error as BlipError {
                return channel.close(.internalError, reason: "\(error)")
            } catch {
                return channel.close(.abnormal)
            }
            switch channel.receive() {
            case .message(.text):
                return channel.close(.unsupportedData, reason: "BLIP takes binary messages only.")
            case .message(.binary(let frame)):
                do throws(BlipError) {
                    if let message = try connection.receive(frame) { handle(message) }
                } catch {
                    return channel.close(WebSocketCloseCode(rawValue: error.closeCode), reason: Self.reason(error))
                }
            case .timedOut:
                continue
            case .closed(let code):
                return code
            }
        }
    }

    private static func reason(_ error: BlipError) -> String {
        switch error {
        case .protocolViolation(let text), .corrupt(let text), .tooBig(let text), .invalidMessage(let text): text
        case .outboxFull: "Outbox full."
        }
    }
}
