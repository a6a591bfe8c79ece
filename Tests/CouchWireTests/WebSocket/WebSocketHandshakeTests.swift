import Testing

@testable import CouchWire

@Suite struct WebSocketHandshakeTests {
    static let blipProtocols = ["BLIP_3+CBMobile_3", "BLIP_3+CBMobile_2"]

    /// The upgrade LiteCore 3.2 sent (conformance/transcripts/cbl3-3.2-first-frames.txt, connection 1).
    static func liteCoreRequest(protocols: String? = "BLIP_3+CBMobile_3,BLIP_3+CBMobile_2") -> HTTPRequestHead {
        var headers: HTTPHeaders = [
            "Host": "127.0.0.1:6200", "User-Agent": "couchbase-lite-core/0.0.0 (<unknown branch>:)",
            "Authorization": "Basic YWxpY2U6c2VjcmV0", "Connection": "Upgrade", "Upgrade": "websocket",
            "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "vhMv6pajVi3gZsHOCuJiCw==",
        ]
        if let protocols { headers.add("Sec-WebSocket-Protocol", protocols) }
        return HTTPRequestHead(method: "GET", target: "/db/_blipsync", headers: headers)
    }

    @Test func rfcSampleKeyGivesTheRfcAccept() {
        #expect(WebSocketHandshake.accept(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func liteCoreUpgradeIsAcceptedWithCBMobile3() throws {
        let handshake = try WebSocketHandshake(request: Self.liteCoreRequest(), supportedProtocols: Self.blipProtocols)
        #expect(handshake.selectedProtocol == "BLIP_3+CBMobile_3")
        // Computed with Python's hashlib for this key.
        #expect(handshake.accept == "BDQST+wiMNbIeQKNNSjAs0XuuLY=")
        let head = String(decoding: handshake.responseHead(serverHeader: "couchlite"), as: UTF8.self)
        #expect(
            head == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: BDQST+wiMNbIeQKNNSjAs0XuuLY=\r\nSec-WebSocket-Protocol: BLIP_3+CBMobile_3\r\n"
                + "Server: couchlite\r\n\r\n")
    }

    @Test func theServersPreferenceDecidesNotTheClientsOrder() throws {
        let reversed = Self.liteCoreRequest(protocols: "BLIP_3+CBMobile_2, BLIP_3+CBMobile_3")
        #expect(
            try WebSocketHandshake(request: reversed, supportedProtocols: Self.blipProtocols).selectedProtocol
                == "BLIP_3+CBMobile_3")
        let onlyTwo = Self.liteCoreRequest(protocols: "BLIP_3+CBMobile_2")
        #expect(
            try WebSocketHandshake(request: onlyTwo, supportedProtocols: Self.blipProtocols).selectedProtocol
                == "BLIP_3+CBMobile_2")
    }

    @Test func protocolsOfferedInSeveralHeadersCount() throws {
        var request = Self.liteCoreRequest(protocols: "chat")
        request.headers.add("Sec-WebSocket-Protocol", "BLIP_3+CBMobile_3")
        #expect(
            try WebSocketHandshake(request: request, supportedProtocols: Self.blipProtocols).selectedProtocol
                == "BLIP_3+CBMobile_3")
    }

    @Test func unknownProfileOrNoProtocolIsRefusedWith400() throws {
        for offered in ["BLIP_2+CBMobile_1", "blip_3+cbmobile_3", "BLIP_3+CBMobile_3x"] {
            #expect(throws: WebSocketHandshake.Failure.noCommonProtocol(offered: [offered])) {
                try WebSocketHandshake(
                    request: Self.liteCoreRequest(protocols: offered),
                    supportedProtocols: Self.blipProtocols)
            }
        }
        #expect(throws: WebSocketHandshake.Failure.noCommonProtocol(offered: [])) {
            try WebSocketHandshake(
                request: Self.liteCoreRequest(protocols: nil), supportedProtocols: Self.blipProtocols)
        }
        #expect(WebSocketHandshake.Failure.noCommonProtocol(offered: []).status == 400)
        // An endpoint that names no protocol takes a request that offers none.
        #expect(
            try WebSocketHandshake(request: Self.liteCoreRequest(protocols: nil), supportedProtocols: [])
                .selectedProtocol == nil)
    }

    @Test func wrongVersionIsRefusedWith426NamingVersion13() {
        for version in ["8", "14", "13, 8"] {
            var request = Self.liteCoreRequest()
            request.headers.set("Sec-WebSocket-Version", version)
            #expect(throws: WebSocketHandshake.Failure.unsupportedVersion) {
                try WebSocketHandshake(request: request, supportedProtocols: Self.blipProtocols)
            }
        }
        #expect(WebSocketHandshake.Failure.unsupportedVersion.status == 426)
        #expect(WebSocketHandshake.Failure.unsupportedVersion.headers["Sec-WebSocket-Version"] == "13")
    }

    @Test func requestsThatAreNotUpgradesAreRefusedWith400() {
        var post = Self.liteCoreRequest()
        post.method = "POST"
        var http10 = Self.liteCoreRequest()
        http10.version = HTTPVersion(major: 1, minor: 0)
        var noUpgrade = Self.liteCoreRequest()
        noUpgrade.headers.remove("Upgrade")
        var otherUpgrade = Self.liteCoreRequest()
        otherUpgrade.headers.set("Upgrade", "h2c")
        var noConnection = Self.liteCoreRequest()
        noConnection.headers.set("Connection", "keep-alive")
        var shortKey = Self.liteCoreRequest()
        shortKey.headers.set("Sec-WebSocket-Key", "AAAAAAAAAAAAAAAA")  // 12 bytes
        var notBase64 = Self.liteCoreRequest()
        notBase64.headers.set("Sec-WebSocket-Key", "!!!!!!!!!!!!!!!!!!!!!!==")
        var twoKeys = Self.liteCoreRequest()
        twoKeys.headers.add("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
        var withBody = Self.liteCoreRequest()
        withBody.headers.add("Content-Length", "4")
        for request in [post, http10, noUpgrade, otherUpgrade, noConnection, shortKey, notBase64, twoKeys, withBody] {
            #expect(throws: WebSocketHandshake.Failure.self) {
                try WebSocketHandshake(request: request, supportedProtocols: Self.blipProtocols)
            }
        }
    }

    @Test func tokensAreCaseInsensitiveAsRfc6455Says() throws {
        var request = Self.liteCoreRequest()
        request.headers.set("Upgrade", "WebSocket")
        request.headers.set("Connection", "keep-alive, upgrade")
        #expect(
            try WebSocketHandshake(request: request, supportedProtocols: Self.blipProtocols).accept
                == "BDQST+wiMNbIeQKNNSjAs0XuuLY=")
    }
}
