import CouchStore
import CouchWire
import Foundation
import Testing

@testable import CouchServer
@testable import PhotoDrop
@testable import couchlite

func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "couchserver-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite struct AccessSettingsTests {
    /// A `_users` document never shadows a server-held identity (a member could otherwise make themselves an
    /// admin by writing one), and a held name stays reserved after it is released.
    @Test func serverHeldIdentitiesComeBeforeUsersDatabase() throws {
        let directory = temporaryDirectory()
        let store = try Store(directory: directory + "/databases")
        let users = try store.create(App.usersDatabase)
        let impostor = PasswordHash.make(password: Array("impostor".utf8), iterations: 1000)
        var body = "{\"name\":\"drop-1\",\"type\":\"user\",\"roles\":[\"boss\"]"
        for (key, value) in impostor.userDocumentFields {
            body += ",\"\(key)\":" + String(decoding: value.serialized(), as: UTF8.self)
        }
        body += "}"
        _ = try users.applyEdits([RevisionWrite(docID: "org.couchdb.user:drop-1", path: [], body: Array(body.utf8))])
        let (admins, _) = try ServerAdmins.setUp(credentials: "admin:pw", dataDir: directory, iterations: 1000)
        let authenticator = Authenticator(admins: admins, secret: [1, 2, 3], store: store, iterations: 1000)
        #expect(authenticator.account(named: "drop-1")?.roles == ["boss"])
        let held = PasswordHash.make(password: Array("one-time".utf8), iterations: 1000)
        authenticator.identities.hold(Authenticator.Account(name: "drop-1", roles: ["drop"], hash: held))
        #expect(authenticator.account(named: "drop-1")?.roles == ["drop"])
        #expect(authenticator.login(name: "drop-1", password: Array("impostor".utf8), client: "a") == nil)
        #expect(authenticator.login(name: "drop-1", password: Array("one-time".utf8), client: "a") != nil)
        authenticator.identities.release("drop-1")
        #expect(authenticator.identities.isReserved("drop-1"))
        #expect(authenticator.account(named: "admin")?.roles == [UserContext.adminRole])
        #expect(authenticator.account(named: "\u{212A}admin") == nil)
    }

    /// A stored hash weaker than the server's (fewer PBKDF2 iterations) is re-derived on a successful
    /// login, keeping its salt, so old hashes do not stay cheap to crack.
    @Test func weakAdminHashIsUpgradedOnLogin() throws {
        let directory = temporaryDirectory()
        let store = try Store(directory: directory + "/databases")
        let (admins, _) = try ServerAdmins.setUp(credentials: "admin:pw", dataDir: directory, iterations: 1000)
        let old = try #require(admins.hashes["admin"])
        let authenticator = Authenticator(admins: admins, secret: [1], store: store, iterations: 2000)
        let account = try #require(authenticator.login(name: "admin", password: Array("pw".utf8), client: nil))
        #expect(account.hash.iterations == 2000 && account.hash.salt == old.salt)
        let (reloaded, _) = try ServerAdmins.setUp(credentials: nil, dataDir: directory, iterations: 2000)
        #expect(reloaded.hashes["admin"]?.iterations == 2000)
    }

    /// CORS: `*` never gets credentials unless the operator says `any-origin`, or any web page could act with a
    /// visitor's session.
    @Test func wildcardOriginGetsNoCredentialsUnlessExplicit() throws {
        #expect(CORSPolicy(origins: ["*"]).allowsCredentials("http://evil.example") == false)
        let listed = CORSPolicy(origins: ["http://app.example", "*"], credentials: .listed)
        #expect(listed.allowsCredentials("http://app.example"))
        #expect(listed.allowsCredentials("http://evil.example") == false)
        #expect(CORSPolicy(origins: ["*"], credentials: .anyOrigin).allowsCredentials("http://evil.example"))
        #expect(throws: OptionsError.self) {
            try Options.parse(arguments: ["--cors-origins", "*", "--cors-credentials", "true"], environment: [:])
        }
        #expect(try Options.parse(arguments: [], environment: [:])?.corsCredentials == .off)
    }

    /// Safe defaults: 600,000 PBKDF2 iterations and a `_users` security object nobody may edit; and the admin
    /// password can come from a file (`--admin-file`, `COUCHLITE_ADMIN_FILE`) instead of the command line, where
    /// other users see it in the process list.
    @Test func defaultsAndAdminFile() throws {
        let options = try #require(try Options.parse(arguments: [], environment: [:]))
        #expect(options.pbkdf2Iterations == 600_000)
        #expect(options.usersDBSecurityEditable == false)
        let file = temporaryDirectory() + "/admin"
        try Data("boss:s3cret pass\n".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try Options.parse(arguments: ["--admin-file", file], environment: [:])?.admin == "boss:s3cret pass")
        #expect(
            try Options.parse(arguments: [], environment: ["COUCHLITE_ADMIN_FILE": file])?.admin == "boss:s3cret pass")
        #expect(throws: OptionsError.self) {
            try Options.parse(arguments: ["--admin-file", file + "-no"], environment: [:])
        }
    }

    /// Files holding secrets (password hashes, admins) are owner-only from creation, whatever the umask.
    @Test func privateFilesAreOwnerOnlyWhateverTheUmask() throws {
        let directory = temporaryDirectory() + "/a/b"
        let previous = umask(0)
        defer { umask(previous) }
        try PrivateFile.createDirectory(directory)
        try PrivateFile.write(Array("secret".utf8), to: directory + "/f")
        try PrivateFile.write(Array("again".utf8), to: directory + "/f")
        var info = stat()
        #expect(stat(directory, &info) == 0 && info.st_mode & 0o777 == 0o700)
        #expect(stat(directory + "/f", &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try String(contentsOfFile: directory + "/f", encoding: .utf8) == "again")
    }
}

/// `--data-dir d`: a relative name of one character made Foundation's `deletingLastPathComponent` trap (SIGILL)
/// before the server started.
@Suite struct RelativeDataDirectoryTests {
    @Test func oneLetterRelativeDataDirIsCreated() throws {
        let base = temporaryDirectory()
        let previous = FileManager.default.currentDirectoryPath
        #expect(FileManager.default.changeCurrentDirectoryPath(base))
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        for name in ["d", "e/", "./f", "é", "g h", "i//", "j/k"] {
            try PrivateFile.createDirectory(name)
            var info = stat()
            #expect(stat(base + "/" + name, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR, "\(name)")
        }
    }

    @Test func parentOfAPath() {
        let cases = [
            "d": "", "d/": "", ".": "", "./": "", "./d": ".", "a/b": "a", "a//b/": "a", "/d": "/", "/": "/",
            "//": "/", "/a/b/c": "/a/b", "é/ü": "é", "": "",
        ]
        for (path, parent) in cases { #expect(PrivateFile.parent(of: path) == parent, "\(path)") }
    }
}
