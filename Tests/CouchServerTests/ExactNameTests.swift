import CouchWire
import Testing

@testable import CouchServer

/// Names that Swift's `String` calls equal (canonical equivalence) are different people to CouchDB, which compares
/// bytes: comparing them as `String`s would let a look-alike name reach another user's databases and document.
@Suite struct ExactNameTests {
    static let twins: [(String, String)] = [
        ("Kate", "\u{212A}ate"),  // LATIN CAPITAL K / KELVIN SIGN
        ("jos\u{E9}", "jose\u{301}"),  // NFC / NFD
        ("\u{C5}ngstr\u{F6}m", "\u{212B}ngstr\u{F6}m"),  // Å / ANGSTROM SIGN
    ]

    @Test func lookalikeTwinsAreDifferentNames() {
        for (victim, twin) in ExactNameTests.twins {
            #expect(victim == twin, "the premise: Swift's String calls them equal")
            #expect(ExactName(victim) != ExactName(twin))
            #expect(Set([ExactName(victim)]).contains(ExactName(twin)) == false)
            #expect([ExactName(victim): 1][ExactName(twin)] == nil)
            #expect(ExactName(victim) == ExactName(String(victim)))
        }
    }

    @Test func bytePrefixSeesWhatCouchDBSees() {
        #expect("_design/\u{301}x".hasPrefix("_design/") == false, "the premise")
        #expect("_design/\u{301}x".hasBytePrefix("_design/"))
        #expect("_\u{301}x".hasBytePrefix("_"))
        #expect("org.couchdb.user:\u{301}x".afterBytePrefix("org.couchdb.user:") == "\u{301}x")
        #expect("a:\u{301}b".containsByte(UInt8(ascii: ":")))
        #expect("\u{212A}ate".hasBytePrefix("K") == false)
    }

    @Test func securityListsMatchNamesAndRolesByBytes() throws {
        let object = try SecurityObject(
            JSON.parse(
                Array(
                    #"{"admins":{"names":["Kate"],"roles":[]},"members":{"names":["jos\#u{E9}"],"roles":["Keepers"]}}"#
                        .utf8)))
        let twinAdmin = UserContext(name: "\u{212A}ate", roles: [], handler: "default")
        let twinMember = UserContext(name: "jose\u{301}", roles: [], handler: "default")
        let twinRole = UserContext(name: "x", roles: ["\u{212A}eepers"], handler: "default")
        #expect(!object.isAdmin(twinAdmin) && !object.isMember(twinAdmin))
        #expect(!object.isMember(twinMember))
        #expect(!object.isMember(twinRole))
        #expect(object.isAdmin(UserContext(name: "Kate", roles: [], handler: "default")))
        #expect(object.isMember(UserContext(name: "jos\u{E9}", roles: [], handler: "default")))
        #expect(object.isMember(UserContext(name: "x", roles: ["Keepers"], handler: "default")))
    }

    @Test func twinCannotUpdateVictimsUserDocument() {
        let old = JSONObject([("name", "Kate"), ("type", "user"), ("roles", ["boss"])])
        var doc = old
        doc["_id"] = "org.couchdb.user:Kate"
        let twin = UserContext(name: "\u{212A}ate", roles: [], handler: "default")
        #expect(throws: CouchError.self) {
            try UserHandlers.validateUserDocument(doc, old: old, user: twin, isAdmin: false, maxIterations: 1000)
        }
        var twinDoc = JSONObject([("name", "\u{212A}ate"), ("type", "user"), ("roles", [])])
        twinDoc["_id"] = "org.couchdb.user:Kate"
        #expect(throws: CouchError.self) {
            try UserHandlers.validateUserDocument(
                twinDoc, old: nil, user: .anonymous, isAdmin: false, maxIterations: 1000)
        }
    }

    @Test func selfSuppliedHashIterationsAreBounded() throws {
        var doc = JSONObject([
            ("_id", "org.couchdb.user:m"), ("name", "m"), ("type", "user"), ("roles", []),
            ("password_scheme", "pbkdf2"), ("salt", "00"), ("derived_key", "00"),
            ("iterations", .number(JSONNumber(10_000_000))),
        ])
        #expect(throws: CouchError.self) {
            try UserHandlers.validateUserDocument(
                doc, old: nil, user: .anonymous, isAdmin: false, maxIterations: 600_000)
        }
        try UserHandlers.validateUserDocument(doc, old: nil, user: .anonymous, isAdmin: true, maxIterations: 600_000)
        doc["iterations"] = .number(JSONNumber(600_000))
        try UserHandlers.validateUserDocument(doc, old: nil, user: .anonymous, isAdmin: false, maxIterations: 600_000)
    }
}
