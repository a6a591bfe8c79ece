import CouchCrypto
import CouchWire
import Foundation

/// The server admins: names with PBKDF2 hashes, kept in `<data-dir>/admins.json` (hashes only,
/// never a password, written owner-only), like CouchDB's `[admins]` section after it hashes the
/// plain values. Names are `ExactName`s: a look-alike of an admin's name is somebody else.
package struct ServerAdmins: Sendable {
    private(set) var hashes: [ExactName: PasswordHash]
    /// Where the hashes are kept.
    let path: String

    /// A password generated on a first start; shown once, never stored.
    package struct Generated: Sendable {
        package let name: String
        package let password: String
    }

    static let fileName = "admins.json"
    /// The name given to a generated admin.
    static let generatedName = "admin"

    /// Sets up the admins at startup.
    ///
    /// `--admin USER:PASS` (or `COUCHLITE_ADMIN`, `--admin-file`) replaces whatever was stored, keeping
    /// the stored hash when it already matches at `iterations` or more so that open sessions survive a
    /// restart (a weaker stored hash is re-derived with its salt, which keeps them too). Without one,
    /// the stored admins are used; on a first start with none stored, an admin with a strong random
    /// password is created and returned so that `main` can print it once.
    /// - Throws: when the admins file cannot be written.
    static func setUp(credentials: String?, dataDir: String, iterations: Int) throws -> (ServerAdmins, Generated?) {
        let path = dataDir + "/" + fileName
        let stored = load(path: path)
        if let credentials, let colon = credentials.firstIndex(of: ":") {
            let name = ExactName(String(credentials[..<colon]))
            let password = Array(credentials[credentials.index(after: colon)...].utf8)
            let maxIterations = max(iterations, AuthLimits.pbkdf2Iterations)
            if let existing = stored[name], stored.count == 1, existing.verify(password, maxIterations: maxIterations) {
                if existing.iterations >= iterations { return (ServerAdmins(hashes: stored, path: path), nil) }
                var admins = ServerAdmins(hashes: stored, path: path)
                try admins.replace(name, existing.rehashed(password: password, iterations: iterations))
                return (admins, nil)
            }
            let admins = ServerAdmins(
                hashes: [name: PasswordHash.make(password: password, iterations: iterations)], path: path)
            try admins.save()
            return (admins, nil)
        }
        if !stored.isEmpty { return (ServerAdmins(hashes: stored, path: path), nil) }
        let password = Secrets.randomBytes(AuthLimits.generatedPasswordBytes).hexString
        let admins = ServerAdmins(
            hashes: [
                ExactName(generatedName): PasswordHash.make(password: Array(password.utf8), iterations: iterations)
            ],
            path: path)
        try admins.save()
        return (admins, Generated(name: generatedName, password: password))
    }

    /// Replaces one admin's hash (a transparent upgrade) and saves the file.
    mutating func replace(_ name: ExactName, _ hash: PasswordHash) throws {
        hashes[name] = hash
        try save()
    }

    private static func load(path: String) -> [ExactName: PasswordHash] {
        guard let data = FileManager.default.contents(atPath: path), let json = try? JSON.parse(Array(data)),
            case .object(let object) = json
        else { return [:] }
        var hashes: [ExactName: PasswordHash] = [:]
        for (name, value) in object {
            if let fields = value.objectValue, let hash = PasswordHash(fields) { hashes[ExactName(name)] = hash }
        }
        return hashes
    }

    private func save() throws {
        var object = JSONObject()
        for (name, hash) in hashes.sorted(by: { $0.key.text.utf8.lexicographicallyPrecedes($1.key.text.utf8) }) {
            object[name.text] = .object(JSONObject(hash.userDocumentFields))
        }
        try PrivateFile.write(JSON.object(object).serialized(), to: path)
    }
}
