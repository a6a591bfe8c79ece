import Testing

@testable import Discovery

/// `couchlite push DIR --to NAME`: which announcement it sends to, and when it refuses.
@Suite struct DropLookupTests {
    static let fingerprint = String(repeating: "ab", count: 32)

    static func peer(_ name: String, address: [UInt8] = [10, 0, 0, 1], tls: Bool = true) -> Peer {
        var peer = Peer(name: name, type: ServiceDescription.photoDropType, firstSeen: 0, lastSeen: 0)
        peer.host = "anna.local"
        peer.port = 6984
        peer.addresses = [address]
        peer.txt = ["v": "1", "path": "/photodrop"]
        if tls {
            peer.txt["tls"] = "6984"
            peer.txt["sha256"] = fingerprint
        }
        return peer
    }

    static func choose(_ name: String, _ peers: [Peer]) -> DropLookup {
        DropLookup.choose(name: name, among: peers, isFingerprint: { $0.utf8.count == 64 })
    }

    @Test func theDropOfExactlyThatNameIsFoundWithItsURLAndPin() {
        let lookup = Self.choose("Anna's laptop", [Self.peer("Anna's laptop"), Self.peer("Bob")])
        guard case .found(let peer, let url, let pin) = lookup else {
            Issue.record("not found: \(lookup)")
            return
        }
        #expect(peer.name == "Anna's laptop")
        #expect(url == "https://10.0.0.1:6984/photodrop")
        #expect(pin == Self.fingerprint)
    }

    @Test func namesAreComparedByBytesSoALookAlikeIsNotTaken() {
        // Case and Unicode normalization differ: "é" precomposed is not "e" + combining acute.
        let heard = [Self.peer("anna"), Self.peer("Caf\u{E9}")]
        #expect(Self.choose("Anna", heard) == .none(heard: ["Caf\u{E9}", "anna"]))
        #expect(Self.choose("Cafe\u{301}", heard) == .none(heard: ["Caf\u{E9}", "anna"]))
        #expect(Self.choose("Anna", []) == .none(heard: []))
    }

    @Test func anImpostorAnnouncingTheSameNameMakesTheNameAmbiguous() {
        // Two announcements of one name (heard as two entries, or one entry whose SRV or TXT changed under it,
        // or one host name with two addresses): which is the drop cannot be told, so nothing is sent.
        let real = Self.peer("Anna")
        let impostor = Self.peer("Anna", address: [10, 0, 0, 2])
        guard case .several(let both) = Self.choose("Anna", [real, impostor]) else {
            Issue.record("two announcers of one name were not refused")
            return
        }
        #expect(both.count == 2)
        var claimed = real
        claimed.conflicting = true
        #expect(Self.choose("Anna", [claimed]) == .several([claimed]))
        var twoPlaces = real
        twoPlaces.addresses.append([10, 0, 0, 2])
        #expect(Self.choose("Anna", [twoPlaces]) == .several([twoPlaces]))
    }

    @Test func aDropWithoutACertificateToPinIsRefusedAndAGoneOneIsNotFound() {
        let plain = Self.peer("Anna", tls: false)
        #expect(Self.choose("Anna", [plain]) == .noCertificate(plain))
        var badPin = Self.peer("Anna")
        badPin.txt["sha256"] = "not-a-fingerprint"
        #expect(Self.choose("Anna", [badPin]) == .noCertificate(badPin))
        var gone = Self.peer("Anna")
        gone.removed = true
        #expect(Self.choose("Anna", [gone]) == .none(heard: []))
        var unresolved = Self.peer("Anna")
        unresolved.addresses = []
        #expect(Self.choose("Anna", [unresolved]) == .unresolved)
    }
}
