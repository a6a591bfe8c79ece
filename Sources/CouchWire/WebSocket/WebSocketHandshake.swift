import CouchCrypto

/// The server side of the opening handshake ([RFC 6455 §4.2](https://www.rfc-editor.org/rfc/rfc6455#section-4.2)):
/// checks an upgrade request, picks a subprotocol, and writes the `101 Switching Protocols` head.
public struct WebSocketHandshake: Sendable, Equatable {
    /// Why a request is not an acceptable WebSocket upgrade, with the HTTP answer it gets instead.
    public enum Failure: Error, Sendable, Equatable {
        /// Not a GET on HTTP/1.1 or later, no `Upgrade: websocket` or `Connection: Upgrade`, a body, or a
        /// `Sec-WebSocket-Key` that is not the base64 of 16 bytes (400).
        case badRequest(String)
        /// A `Sec-WebSocket-Version` other than 13 (426, with `Sec-WebSocket-Version: 13`).
        case unsupportedVersion
        /// The client offered none of the subprotocols the endpoint speaks (400).
        case noCommonProtocol(offered: [String])

        /// The HTTP status to answer with.
        public var status: Int {
            switch self {
            case .badRequest, .noCommonProtocol: 400
            case .unsupportedVersion: 426
            }
        }

        /// The CouchDB-style `reason`.
        public var reason: String {
            switch self {
            case .badRequest(let reason): reason
            case .unsupportedVersion: "Only WebSocket version 13 is supported."
            case .noCommonProtocol(let offered):
                "None of the offered WebSocket subprotocols (\(offered.joined(separator: ", "))) is supported."
            }
        }

        /// Headers the refusal must carry (426 names the version we speak, §4.4).
        public var headers: HTTPHeaders {
            self == .unsupportedVersion ? ["Sec-WebSocket-Version": "13"] : HTTPHeaders()
        }
    }

    /// The value of `Sec-WebSocket-Accept` for the client's key.
    public let accept: String
    /// The subprotocol chosen, or nil when the endpoint names none.
    public let selectedProtocol: String?

    /// The GUID RFC 6455 §1.3 appends to the key before hashing.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// Checks `request` as an upgrade and negotiates the subprotocol.
    /// - Parameters:
    ///   - request: The request head.
    ///   - supportedProtocols: Subprotocols the endpoint speaks, best first (the server's preference decides, as Sync
    ///     Gateway prefers `BLIP_3+CBMobile_3` to `BLIP_3+CBMobile_2`); empty to accept a request that offers none.
    ///     Names compare by bytes.
    /// - Throws: `Failure`.
    public init(request: HTTPRequestHead, supportedProtocols: [String]) throws(Failure) {
        guard Array(request.method.utf8) == Array("GET".utf8) else {
            throw .badRequest("A WebSocket upgrade must be a GET.")
        }
        guard request.version.isAtLeast1_1 else { throw .badRequest("A WebSocket upgrade needs HTTP/1.1.") }
        guard request.headers.containsToken("websocket", in: "Upgrade") else {
            throw .badRequest("Missing Upgrade: websocket.")
        }
        guard request.headers.containsToken("upgrade", in: "Connection") else {
            throw .badRequest("Missing Connection: Upgrade.")
        }
        if request.headers.contains("Content-Length") || request.headers.contains("Transfer-Encoding") {
            throw .badRequest("A WebSocket upgrade has no body.")
        }
        let versions = request.headers.values("Sec-WebSocket-Version")
        guard versions.count == 1, let version = versions.first,
            Array(version.utf8) == Array("13".utf8)
        else { throw .unsupportedVersion }
        let keys = request.headers.values("Sec-WebSocket-Key")
        guard keys.count == 1, let key = keys.first, let nonce = Base64.decode(key), nonce.count == 16 else {
            throw .badRequest("Sec-WebSocket-Key must be the base64 of 16 bytes.")
        }
        let offered = request.headers.tokens("Sec-WebSocket-Protocol").map(String.init)
        if supportedProtocols.isEmpty {
            selectedProtocol = nil
        } else {
            let offeredBytes = offered.map { Array($0.utf8) }
            guard let chosen = supportedProtocols.first(where: { offeredBytes.contains(Array($0.utf8)) }) else {
                throw .noCommonProtocol(offered: offered)
            }
            selectedProtocol = chosen
        }
        accept = Self.accept(forKey: key)
    }

    /// `base64(SHA-1(key ‖ GUID))` (§4.2.2 item 5.4).
    public static func accept(forKey key: String) -> String {
        Base64.encodedString(Digest.hash(.sha1, Array((key + guid).utf8)))
    }

    /// The `101 Switching Protocols` response head.
    public func responseHead(serverHeader: String) -> [UInt8] {
        var headers: HTTPHeaders = [
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": accept,
        ]
        if let selectedProtocol { headers.add("Sec-WebSocket-Protocol", selectedProtocol) }
        headers.add("Server", serverHeader)
        var text = "HTTP/1.1 101 Switching Protocols\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }
}
