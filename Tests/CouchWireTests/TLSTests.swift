import Foundation
import Testing

@testable import CouchWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A self-signed identity for tests, made once (key generation is the slow part).
private let testIdentity: (certificate: TLSCertificate, key: TLSPrivateKey)? = {
    guard let key = try? TLSPrivateKey.generateP256(),
        let certificate = try? TLSCertificate.selfSigned(
            key: key, commonName: "couchlite test", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"],
            validityDays: 30)
    else { return nil }
    return (certificate, key)
}()

private func identity() throws -> (certificate: TLSCertificate, key: TLSPrivateKey) {
    guard let testIdentity else { throw HTTPTestFailure("cannot generate a test identity") }
    return testIdentity
}

/// Runs `body` against the engine's test handler served over TLS with `certificate`/`key`.
private func withTLSTestServer(
    certificate: TLSCertificate? = nil, key: TLSPrivateKey? = nil, _ body: (Int) throws -> Void
) throws {
    let (defaultCertificate, defaultKey) = try identity()
    let context = try TLSContext.server(certificate: certificate ?? defaultCertificate, key: key ?? defaultKey)
    try withHTTPTestServer({ $0.tls = context }) { port, _, _ in try body(port) }
}

/// Connects to 127.0.0.1:`port` and runs a client handshake checking `host`.
private func connectTLS(port: Int, trust: TLSTrust, host: String = "127.0.0.1") throws -> (RawHTTPClient, TLSStream) {
    let client = try RawHTTPClient(port: port)
    let flags = fcntl(client.descriptor, F_GETFL, 0)
    _ = fcntl(client.descriptor, F_SETFL, flags | O_NONBLOCK)
    let stream = try TLSStream.client(
        context: try TLSContext.client(trust: trust), descriptor: client.descriptor, host: host)
    try stream.handshake(timeout: .seconds(5))
    return (client, stream)
}

/// Sends one request over `stream` and reads until `Connection: close` ends the response.
private func exchange(_ stream: TLSStream, _ request: String) throws -> String {
    try stream.send(Array(request.utf8), timeout: .seconds(5))
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = try buffer.withUnsafeMutableBytes { try stream.receive(into: $0, timeout: .seconds(5)) }
        if count == 0 { break }
        received += buffer[0..<count]
    }
    return String(decoding: received, as: UTF8.self)
}

private func expectTLSError(_ body: () throws -> Void) -> TLSError? {
    do {
        try body()
        return nil
    } catch let error as TLSError {
        return error
    } catch {
        return .failed("unexpected \(error)")
    }
}

@Suite struct TLSFingerprintTests {
    @Test func formatsAsColonPairsAndLowercaseHex() {
        let fingerprint = TLSFingerprint(der: Array("abc".utf8))
        // SHA-256("abc"), FIPS 180-2's test vector.
        let expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        #expect(fingerprint.hex == expected)
        #expect(fingerprint.colonHex.count == 32 * 3 - 1)
        #expect(fingerprint.colonHex.hasPrefix("BA:78:16:BF:"))
        #expect(TLSFingerprint(parsing: fingerprint.colonHex) == fingerprint)
        #expect(TLSFingerprint(parsing: fingerprint.hex) == fingerprint)
        #expect(TLSFingerprint(parsing: fingerprint.hex.uppercased()) == fingerprint)
        #expect(TLSFingerprint(parsing: "sha256:" + fingerprint.hex) == fingerprint)
    }

    @Test func refusesWhatIsNotSixtyFourHexDigits() {
        let hex = String(repeating: "ab", count: 32)
        #expect(TLSFingerprint(parsing: String(hex.dropLast(2))) == nil)
        #expect(TLSFingerprint(parsing: hex + "ab") == nil)
        #expect(TLSFingerprint(parsing: String(hex.dropLast()) + "g") == nil)
        // UInt8("+a", radix: 16) is 10: a sign must not pass as a digit.
        #expect(TLSFingerprint(parsing: "+a" + String(hex.dropFirst(2))) == nil)
        #expect(TLSFingerprint(parsing: "ab:" + String(repeating: "ab:", count: 30) + "a") == nil)
        #expect(TLSFingerprint(parsing: "") == nil)
    }
}

@Suite(.serialized) struct TLSTests {
    @Test func selfSignedCertificateCarriesNamesValidityAndKey() throws {
        let (certificate, key) = try identity()
        #expect(certificate.subjectAlternativeNames == ["localhost", "127.0.0.1", "::1"])
        #expect(certificate.matches(key))
        #expect(!certificate.matches(try TLSPrivateKey.generateP256()))
        let days = ((certificate.notAfter ?? .distantPast).timeIntervalSinceNow / 86_400).rounded()
        #expect(days == 30)
        // PEM round trips give the same certificate and a usable key.
        let reread = try TLSCertificate(pem: certificate.pem)
        #expect(reread.fingerprint == certificate.fingerprint)
        #expect(reread.matches(try TLSPrivateKey(pem: key.pem)))
        #expect(certificate.fingerprint == TLSFingerprint(der: certificate.der))
    }

    @Test func garbageIsNotACertificateOrKey() {
        #expect(expectTLSError { _ = try TLSCertificate(pem: Array("not a certificate".utf8)) } != nil)
        #expect(expectTLSError { _ = try TLSPrivateKey(pem: []) } != nil)
        #expect(expectTLSError { _ = try TLSCertificate(pemFile: "/nonexistent/cert.pem") } != nil)
    }

    @Test func mismatchedKeyIsRefused() throws {
        let (certificate, _) = try identity()
        let other = try TLSPrivateKey.generateP256()
        let error = expectTLSError { _ = try TLSContext.server(certificate: certificate, key: other) }
        #expect(error?.description.contains("does not match") == true)
    }

    @Test func pinnedClientSpeaksHTTP11OverTLS() throws {
        let (certificate, _) = try identity()
        try withTLSTestServer { port in
            let (client, stream) = try connectTLS(port: port, trust: .pinned(certificate.fingerprint))
            #expect(stream.negotiatedProtocol == "http/1.1")
            #expect(stream.protocolVersion == "TLSv1.3")
            #expect(stream.peerCertificate?.fingerprint == certificate.fingerprint)
            let response = try exchange(stream, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(response.hasSuffix("hello"))
            withExtendedLifetime(client) {}
        }
    }

    @Test func wrongPinIsRefusedNamingBothFingerprints() throws {
        let wrong = TLSFingerprint(der: [1, 2, 3])
        try withTLSTestServer { port in
            let error = expectTLSError { _ = try connectTLS(port: port, trust: .pinned(wrong)) }
            guard case .pinMismatch(let expected, _) = error else {
                Issue.record("expected a pin mismatch, got \(String(describing: error))")
                return
            }
            #expect(expected == wrong)
            #expect(error?.description.contains(wrong.colonHex) == true)
        }
    }

    @Test func caFileVerificationChecksTheHostName() throws {
        let (certificate, _) = try identity()
        let path = NSTemporaryDirectory() + "couchlite-tls-\(getpid())-ca.pem"
        try Data(certificate.pem).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        let trust = TLSTrust.verified(caFile: path, systemStore: false)
        try withTLSTestServer { port in
            for host in ["127.0.0.1", "localhost"] {
                let (client, stream) = try connectTLS(port: port, trust: trust, host: host)
                #expect(
                    try exchange(stream, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        .hasSuffix("hello"))
                withExtendedLifetime(client) {}
            }
            let error = expectTLSError { _ = try connectTLS(port: port, trust: trust, host: "photos.example") }
            guard case .verification(let message) = error else {
                Issue.record("expected a verification failure, got \(String(describing: error))")
                return
            }
            #expect(message.contains("mismatch"))
            #expect(message.contains("photos.example"))
            #expect(message.contains("localhost"))
        }
    }

    @Test func systemStoreRefusesASelfSignedServer() throws {
        try withTLSTestServer { port in
            let error = expectTLSError { _ = try connectTLS(port: port, trust: .system) }
            guard case .verification(let message) = error else {
                Issue.record("expected a verification failure, got \(String(describing: error))")
                return
            }
            #expect(message.contains("self-signed") || message.contains("self signed"))
        }
    }

    @Test func expiredPinnedCertificateIsRefused() throws {
        let key = try TLSPrivateKey.generateP256()
        let expired = try TLSCertificate.selfSigned(
            key: key, commonName: "old", dnsNames: ["localhost"], ipAddresses: [], validityDays: -1)
        try withTLSTestServer(certificate: expired, key: key) { port in
            let error = expectTLSError { _ = try connectTLS(port: port, trust: .pinned(expired.fingerprint)) }
            #expect(error?.description.contains("expired") == true)
        }
    }

    @Test func insecureClientAcceptsAnyCertificate() throws {
        try withTLSTestServer { port in
            let (client, stream) = try connectTLS(port: port, trust: .insecure)
            #expect(
                try exchange(stream, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .hasSuffix("hello"))
            withExtendedLifetime(client) {}
        }
    }

    @Test func plainHTTPToTheTLSPortIsAnswered400() throws {
        try withTLSTestServer { port in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 400)
            #expect(response.bodyText.contains("HTTPS"))
            #expect(response.header("Connection") == "close")
        }
    }

    @Test func keepAliveAndLargeBodiesCrossTLSIntact() throws {
        let (certificate, _) = try identity()
        try withTLSTestServer { port in
            let (client, stream) = try connectTLS(port: port, trust: .pinned(certificate.fingerprint))
            let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            try stream.send(
                Array("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body,
                timeout: .seconds(5))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while !(received.count > body.count && received.suffix(body.count).elementsEqual(body)) {
                let count = try buffer.withUnsafeMutableBytes { try stream.receive(into: $0, timeout: .seconds(5)) }
                if count == 0 { break }
                received += buffer[0..<count]
            }
            #expect(received.suffix(body.count).elementsEqual(body))
            #expect(!stream.isPeerClosed())
            let second = try exchange(stream, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(second.hasSuffix("hello"))
            withExtendedLifetime(client) {}
        }
    }
}
