import CouchWire
import Foundation
import Testing

@testable import Replicator

private let hexFixture = "3f2a9c1b7e40d5a6b8c9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5"
private let colonsFixture =
    "3F:2A:9C:1B:7E:40:D5:A6:B8:C9:E0:F1:A2:B3:C4:D5:E6:F7:08:19:2A:3B:4C:5D:6E:7F:80:91:A2:B3:C4:D5"

/// Not a SHA-256 fingerprint in either accepted form.
private let badPins: [String] = {
    let hex = hexFixture
    let colons = colonsFixture
    var pins: [String] = ["", "3f2a", String(hex.dropLast()), hex + "0", hex + "00"]
    pins.append("da39a3ee5e6b4b0d3255bfef95601890afd80709")  // a SHA-1 fingerprint
    pins.append(String(hex.dropLast()) + "g")
    pins.append(String(hex.dropLast(2)) + "-0")  // UInt8("-0", radix: 16) would take it
    pins.append(String(hex.dropLast(2)) + "+f")
    pins.append(String(colons.dropLast(3)))
    pins.append(colons + ":")
    pins.append(":" + String(colons.dropFirst()))
    pins.append("3F2A:" + String(colons.dropFirst(6)))
    pins.append(colons.replacingOccurrences(of: ":", with: "-"))
    pins.append(colons.replacingOccurrences(of: ":", with: " "))
    pins.append("3F::2A" + String(colons.dropFirst(5)))
    pins.append("sha256/" + hex)
    pins.append(String(hex.prefix(32)) + " " + String(hex.dropFirst(32)))
    pins.append(String(repeating: "\u{0661}", count: 64))  // Arabic-Indic digits are not hex
    return pins
}()

@Suite struct PeerTrustTests {
    static let hex = hexFixture
    static let colons = colonsFixture

    @Test func plainAndColonSeparatedHexInAnyCaseAreTheSamePin() throws {
        let plain = try PeerTrust.parsePin(Self.hex)
        #expect(plain.bytes.count == 32)
        #expect(plain.bytes.first == 0x3f && plain.bytes.last == 0xd5)
        #expect(try PeerTrust.parsePin(Self.hex.uppercased()) == plain)
        #expect(try PeerTrust.parsePin(Self.colons) == plain)
        #expect(try PeerTrust.parsePin(Self.colons.lowercased()) == plain)
        #expect(try PeerTrust.parsePin("  \(Self.colons)\n") == plain)  // as pasted from a terminal
        #expect(plain.colonHex == Self.colons && plain.hex == Self.hex)
    }

    @Test(arguments: badPins)
    func anythingElseIsRefusedWithAReason(_ text: String) {
        #expect(throws: ReplicationError.self) { try PeerTrust.parsePin(text) }
        do {
            _ = try PeerTrust.parsePin(text)
        } catch {
            guard case .badRequest(let reason) = error else { return #expect(Bool(false), "\(error)") }
            #expect(reason.contains("pin"))
        }
    }

    @Test func aSHA1FingerprintIsNamedAsOne() {
        #expect(throws: ReplicationError.self) { try PeerTrust.parsePin("da39a3ee5e6b4b0d3255bfef95601890afd80709") }
        do {
            _ = try PeerTrust.parsePin("da39a3ee5e6b4b0d3255bfef95601890afd80709")
        } catch {
            #expect(error.description.contains("SHA-1"))
        }
    }

    @Test func controlCharactersAreEscapedInTheMessage() {
        do {
            _ = try PeerTrust.parsePin("z\u{1b}[2J\u{7}" + String(hexFixture.dropFirst(6)))
            #expect(Bool(false))
        } catch {
            #expect(!error.description.contains("\u{1b}") && !error.description.contains("\u{7}"))
            #expect(error.description.contains("?[2J?"))
        }
    }

    /// A megabyte of `_replicate` body in `couchlite_pin` must be refused at once, not parsed character by
    /// character with offset indexing (quadratic: minutes of a server thread).
    @Test(.timeLimit(.minutes(1))) func hugePinIsRefusedWithoutQuadraticWork() {
        let huge = String(repeating: "A:", count: 512 * 1024) + "\u{1b}[2J"
        do {
            _ = try PeerTrust.parsePin(huge)
            #expect(Bool(false))
        } catch {
            #expect(error.description.count < 400)
            #expect(!error.description.contains("\u{1b}"))
        }
    }

    // MARK: - the URL fragment

    @Test func theSha256FragmentPinsTheEndpointAndIsNeverSent() throws {
        let endpoint = try Endpoint.remote(url: "https://u:p@192.168.1.20:6984/photodrop#sha256=\(Self.hex)")
        #expect(endpoint.trust == PeerTrust(pin: try PeerTrust.parsePin(Self.hex)))
        #expect(endpoint.basePath == "/photodrop")
        let request = endpoint.request("GET", "/_changes?since=0")
        #expect(request.target == "/photodrop/_changes?since=0")
        for shown in [endpoint.display, endpoint.redacted, endpoint.identity, request.target] {
            #expect(!shown.contains("#") && !shown.lowercased().contains("sha256") && !shown.contains(Self.hex))
        }
        #expect(endpoint.redacted == "https://192.168.1.20:6984/photodrop/")
    }

    @Test func aPinnedAndAnUnpinnedURLShareTheReplicationIdentity() throws {
        let pinned = try Endpoint.remote(url: "https://u:p@host:6984/db#sha256=\(Self.colons)")
        let plain = try Endpoint.remote(url: "https://u:p@host:6984/db", trust: PeerTrust(insecure: true))
        #expect(pinned.identity == plain.identity)
    }

    @Test func otherFragmentParametersAreIgnoredAndAColonPinWorks() throws {
        let endpoint = try Endpoint.remote(url: "https://host/db#name=drop&SHA256=\(Self.colons)&x")
        #expect(endpoint.trust?.pin == (try PeerTrust.parsePin(Self.hex)))
        #expect(endpoint.client.peerName == "host:443")
        let none = try Endpoint.remote(url: "https://host/db#photos")
        #expect(none.trust == PeerTrust())
    }

    @Test func aBadOrConflictingFragmentPinIsRefused() {
        #expect(throws: ReplicationError.self) { try Endpoint.remote(url: "https://host/db#sha256=abcd") }
        #expect(throws: ReplicationError.self) { try Endpoint.remote(url: "https://host/db#sha256=") }
        let other = String(Self.hex.reversed())
        #expect(throws: ReplicationError.self) {
            try Endpoint.remote(url: "https://host/db#sha256=\(Self.hex)&sha256=\(other)")
        }
        #expect(throws: ReplicationError.self) {
            try Endpoint.remote(
                url: "https://host/db#sha256=\(Self.hex)", trust: PeerTrust(pin: try PeerTrust.parsePin(other)))
        }
        // The same pin given twice is no conflict.
        #expect(throws: Never.self) {
            try Endpoint.remote(
                url: "https://host/db#sha256=\(Self.hex)", trust: PeerTrust(pin: try PeerTrust.parsePin(Self.colons)))
        }
    }

    @Test func aPinOnAPlainHTTPURLIsRefusedNotIgnored() throws {
        #expect(throws: ReplicationError.self) { try Endpoint.remote(url: "http://host:5984/db#sha256=\(Self.hex)") }
        #expect(throws: ReplicationError.self) {
            try Endpoint.remote(url: "http://host:5984/db", trust: PeerTrust(insecure: true))
        }
        #expect(throws: ReplicationError.self) {
            try Endpoint.remote(
                url: "http://host:5984/db", trust: PeerTrust(caFile: "/etc/ssl/certs/ca-certificates.crt"))
        }
        // Another fragment on a plain URL is harmless and is not sent either.
        let plain = try Endpoint.remote(url: "http://host:5984/db#top")
        #expect(plain.trust == nil && plain.request("GET", "").target == "/db")
    }

    @Test func httpsDefaultsToPort443AndIsShownAsHTTPS() throws {
        let endpoint = try Endpoint.remote(url: "HTTPS://admin:secret@[::1]/couch/db/")
        #expect(endpoint.client.peerName == "[::1]:443")
        #expect(endpoint.display == "https://admin@[::1]:443/couch/db/")
        #expect(endpoint.trust == PeerTrust())
        #expect(!endpoint.display.contains("secret"))
    }

    @Test func insecureWithoutAPinVerifiesNothingButWithAPinItIsPinned() throws {
        #expect(PeerTrust(insecure: true).verifiesNothing)
        #expect(!PeerTrust(pin: try PeerTrust.parsePin(Self.hex), insecure: true).verifiesNothing)
        #expect(!PeerTrust().verifiesNothing && PeerTrust().isDefault)
    }
}
