import CouchCrypto
import CouchWire
import Foundation

/// The server admins: names with PBKDF2 hashes, kept in `<data-dir>/admins.json` (hashes only,
/// never a password), like CouchDB's `[admins]` section after it hashes the plain values.
struct ServerAdmins: Sendable {
    private(set) var hashes: [String: PasswordHash]

    /// A password generated on a first start; shown once, never stored.
    struct Generated: Sendable {
        let name: String
        let password: String
    }

    static let fileName = "admins.json"
    /// The name given to a generated admin.
    static let generatedName = "admin"

    /// Sets up the admins at startup.
    ///
    /// `--admin USER:PASS` (or `COUCHLITE_ADMIN`) replaces whatever was stored, keeping the stored
    /// hash when it already matches so that open sessions survive a restart. Without one, the
    /// stored admins are used; on a first start with none stored, an admin with a strong random
    /// password is created and returned so that `main` can print it once.
    /// - Throws: when the admins file cannot be written.
    static func setUp(credentials: String?, dataDir: String) throws -> (ServerAdmins, Generated?) {
        let path = dataDir + "/" + fileName
        let stored = load(path: path)
        if let credentials, let colon = credentials.firstIndex(of: ":") {
            let name = String(credentials[..<colon])
            let password = Array(credentials[credentials.index(after: colon)...].utf8)
            if let existing = stored[name], stored.count == 1, existing.verify(password) {
                return (ServerAdmins(hashes: stored), nil)
            }
            let admins = ServerAdmins(hashes: [name: PasswordHash.make(password: password)])
            try admins.save(path: path)
            return (admins, nil)
        }
        if !stored.isEmpty { return (ServerAdmins(hashes: stored), nil) }
        let password = Secrets.randomBytes(AuthLimits.generatedPasswordBytes).hexString
        let admins = ServerAdmins(hashes: [generatedName: PasswordHash.make(password: Array(password.utf8))])
        try admins.save(path: path)
        return (admins, Generated(name: generatedName, password: password))
    }

    private static func load(path: String) -> [String: PasswordHash] {
        guard let data = FileManager.default.contents(atPath: path), let json = try? JSON.parse(Array(data)),
            case .object(let object) = json
        else { return [:] }
        var hashes: [String: PasswordHash] = [:]
        for (name, value) in object {
            if let fields = value.objectValue, let hash = PasswordHash(fields) { hashes[name] = hash }
        }
        return hashes
    }

    private func save(path: String) throws {
        var object = JSONObject()
        for (name, hash) in hashes.sorted(by: { $0.key < $1.key }) {
            object[name] = .object(JSONObject(hash.userDocumentFields))
        }
        try Data(JSON.object(object).serialized()).write(to: URL(fileURLWithPath: path), options: .atomic)
        // Hashes only, but still nobody else's business.
        chmod(path, 0o600)
    }
}
