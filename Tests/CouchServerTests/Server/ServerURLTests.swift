import Testing

@testable import CouchServer

/// The URL `serve` prints for its `--bind` address: one a browser or curl takes as it is.
@Suite struct ServerURLTests {
    @Test func anIPv4AddressIsPrintedAsTheDottedQuadItStandsFor() {
        #expect(ServerProcess.urlHost(bind: "127.0.0.1") == "127.0.0.1")
        #expect(ServerProcess.urlHost(bind: "0.0.0.0") == "0.0.0.0")
        // inet_aton's short forms, which the resolver takes too (`--bind 0` printed `http://0:PORT/`).
        #expect(ServerProcess.urlHost(bind: "0") == "0.0.0.0")
        #expect(ServerProcess.urlHost(bind: "127.1") == "127.0.0.1")
        #expect(ServerProcess.urlHost(bind: "0x7f.1") == "127.0.0.1")
    }

    @Test func anIPv6AddressIsBracketedAndAHostNameKept() {
        #expect(ServerProcess.urlHost(bind: "::1") == "[::1]")
        #expect(ServerProcess.urlHost(bind: "::") == "[::]")
        #expect(ServerProcess.urlHost(bind: "localhost") == "localhost")
        #expect(ServerProcess.urlHost(bind: "name.invalid") == "name.invalid")
        // Not an address: as given, whatever it holds (a bind that fails to resolve never gets this far).
        #expect(ServerProcess.urlHost(bind: "") == "")
        #expect(ServerProcess.urlHost(bind: "é.example") == "é.example")
        #expect(ServerProcess.urlHost(bind: "1.2.3.4.5") == "1.2.3.4.5")
    }
}
