import CouchWire
import Foundation
import Synchronization
import Testing

@testable import Replicator

/// Self-signed identities made once (key generation is the slow part): one naming 127.0.0.1 and localhost,
/// one naming only another host, one expired.
private struct Identity: @unchecked Sendable {
    let certificate: TLSCertificate
    let key: TLSPrivateKey

    init(dns: [String], ips: [String], days: Int) throws {
        key = try TLSPrivateKey.generateP256()
        certificate = try TLSCertificate.selfSigned(
            key: key, commonName: "couchlite test", dnsNames: dns, ipAddresses: ips, validityDays: days)
    }
}

private let local = Result { try Identity(dns: ["localhost"], ips: ["127.0.0.1"], days: 30) }
private let elsewhere = Result { try Identity(dns: ["elsewhere.test"], ips: [], days: 30) }
private let expired = Result { try Identity(dns: ["localhost"], ips: ["127.0.0.1"], days: -1) }

/// The request targets a server saw, to prove what went on the wire (and what did not).
private final class Seen: Sendable {
    let targets = Mutex<[String]>([])
}

/// Runs `body` with the port of an HTTPS server (or a plain one when `identity` is nil) that answers every
/// request `{"ok":true}` and records its target.
private func withServer(_ identity: Identity?, _ body: (Int, Seen) throws -> Void) throws {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
    configuration.idleTimeout = .seconds(5)
    if let identity { configuration.tls = try TLSContext.server(certificate: identity.certificate, key: identity.key) }
    let seen = Seen()
    let server = HTTPServer(configuration: configuration) { head, _, writer in
        seen.targets.withLock { $0.append(head.target) }
        try? writer.respond(
            status: 200, headers: ["Content-Type": "application/json"], body: Array("{\"ok\":true}".utf8))
    }
    let port = try server.start()
    defer { server.shutdown(timeout: .seconds(2)) }
    try body(port, seen)
}

private func get(_ endpoint: Endpoint) throws(ReplicationError) -> JSON {
    try endpoint.client.send(endpoint.request("GET", "/_changes?since=0")).json()
}

/// The error `body` throws, as the replicator reports it.
private func failure(_ body: () throws(ReplicationError) -> Void) -> ReplicationError? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

private func pemFile(_ certificate: TLSCertificate) throws -> String {
    let path = NSTemporaryDirectory() + "couchlite-ca-\(UUID().uuidString).pem"
    try Data(certificate.pem).write(to: URL(fileURLWithPath: path))
    return path
}

@Suite struct HTTPSClientTests {
    @Test func pinnedByTheURLFragmentItReplicatesAndTheFragmentIsNotSent() throws {
        let identity = try local.get()
        try withServer(identity) { port, seen in
            let pin = identity.certificate.fingerprint
            let endpoint = try Endpoint.remote(url: "https://u:p@127.0.0.1:\(port)/db#sha256=\(pin.hex)")
            #expect(try get(endpoint) == ["ok": true])
            #expect(try get(endpoint) == ["ok": true])  // again, over the pooled TLS connection
            #expect(seen.targets.withLock { $0 } == ["/db/_changes?since=0", "/db/_changes?since=0"])
        }
    }

    @Test func aWrongPinIsRefusedNamingBothFingerprintsAndNothingIsSent() throws {
        let identity = try local.get()
        let other = try elsewhere.get().certificate.fingerprint
        try withServer(identity) { port, seen in
            let endpoint = try Endpoint.remote(url: "https://u:p@127.0.0.1:\(port)/db#sha256=\(other.colonHex)")
            let error = failure { () throws(ReplicationError) in _ = try get(endpoint) }
            guard case .certificateRejected(let peer, let reason) = error else {
                Issue.record("not a certificate refusal: \(String(describing: error))")
                return
            }
            #expect(peer == "127.0.0.1:\(port)")
            #expect(reason.contains(identity.certificate.fingerprint.colonHex) && reason.contains(other.colonHex))
            #expect(error?.description.contains("does not match the pin") == true)
            #expect(seen.targets.withLock { $0 }.isEmpty)
        }
    }

    @Test func aSelfSignedPeerIsRefusedByTheSystemTrustStoreWithAHint() throws {
        try withServer(try local.get()) { port, seen in
            let error = failure { () throws(ReplicationError) in
                _ = try get(try Endpoint.remote(url: "https://127.0.0.1:\(port)/db"))
            }
            guard case .certificateRejected(_, let reason) = error else {
                Issue.record("not a certificate refusal: \(String(describing: error))")
                return
            }
            #expect(reason.contains("self-signed") || reason.contains("self signed"), "\(reason)")
            #expect(reason.contains("--pin") && reason.contains("--cacert"))
            #expect(seen.targets.withLock { $0 }.isEmpty)
        }
    }

    @Test func theCACertificateFileTrustsThePeerByNameAndAddress() throws {
        let identity = try local.get()
        let path = try pemFile(identity.certificate)
        defer { unlink(path) }
        try withServer(identity) { port, _ in
            let trust = PeerTrust(caFile: path)
            for host in ["127.0.0.1", "localhost"] {
                let endpoint = try Endpoint.remote(url: "https://\(host):\(port)/db", trust: trust)
                #expect(try get(endpoint) == ["ok": true])
            }
        }
    }

    @Test func aNameMismatchNamesWhatTheCertificateHoldsAndTheHostAskedFor() throws {
        let identity = try elsewhere.get()
        let path = try pemFile(identity.certificate)
        defer { unlink(path) }
        try withServer(identity) { port, seen in
            let endpoint = try Endpoint.remote(url: "https://127.0.0.1:\(port)/db", trust: PeerTrust(caFile: path))
            let error = failure { () throws(ReplicationError) in _ = try get(endpoint) }
            guard case .certificateRejected(_, let reason) = error else {
                Issue.record("not a certificate refusal: \(String(describing: error))")
                return
            }
            #expect(reason.contains("elsewhere.test") && reason.contains("127.0.0.1"), "\(reason)")
            #expect(seen.targets.withLock { $0 }.isEmpty)
        }
    }

    @Test func anExpiredCertificateIsRefusedEvenWhenPinned() throws {
        let identity = try expired.get()
        let path = try pemFile(identity.certificate)
        defer { unlink(path) }
        try withServer(identity) { port, seen in
            let pinned = PeerTrust(pin: identity.certificate.fingerprint)
            for trust in [pinned, PeerTrust(caFile: path)] {
                let endpoint = try Endpoint.remote(url: "https://127.0.0.1:\(port)/db", trust: trust)
                let error = failure { () throws(ReplicationError) in _ = try get(endpoint) }
                guard case .certificateRejected(_, let reason) = error else {
                    Issue.record("not a certificate refusal: \(String(describing: error))")
                    continue
                }
                #expect(reason.contains("expired"), "\(reason)")
            }
            #expect(seen.targets.withLock { $0 }.isEmpty)
        }
    }

    @Test func insecureAcceptsASelfSignedPeer() throws {
        try withServer(try elsewhere.get()) { port, _ in
            let endpoint = try Endpoint.remote(url: "https://127.0.0.1:\(port)/db", trust: PeerTrust(insecure: true))
            #expect(endpoint.trust?.verifiesNothing == true)
            #expect(try get(endpoint) == ["ok": true])
        }
    }

    @Test func anHTTPSURLToAPlainHTTPServerSaysSo() throws {
        try withServer(nil) { port, _ in
            let endpoint = try Endpoint.remote(url: "https://127.0.0.1:\(port)/db", trust: PeerTrust(insecure: true))
            let error = failure { () throws(ReplicationError) in _ = try get(endpoint) }
            guard case .tlsFailed = error else {
                Issue.record("not a TLS failure: \(String(describing: error))")
                return
            }
            #expect(error?.description.contains("http:// server") == true, "\(String(describing: error))")
        }
    }

    @Test func anUnreadableOrBogusCAFileIsABadRequestBeforeAnyConnection() throws {
        let path = NSTemporaryDirectory() + "couchlite-bogus-\(UUID().uuidString).pem"
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        for file in [path, "/nonexistent/ca.pem"] {
            let error = failure { () throws(ReplicationError) in
                _ = try Endpoint.remote(url: "https://h/db", trust: PeerTrust(caFile: file))
            }
            guard case .badRequest(let reason) = error else {
                Issue.record("not a bad request: \(String(describing: error))")
                continue
            }
            #expect(reason.contains(file))
        }
    }
}
