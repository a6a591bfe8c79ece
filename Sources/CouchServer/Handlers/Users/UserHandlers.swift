import CouchCrypto
import CouchStore
import CouchWire
import RevTree

/// Writes to the `_users` database: passwords are hashed before anything is stored (the plain
/// text is never written or returned), and every user document is checked by the rules of
/// CouchDB's `_design/_auth` validate function and `couch_users_db:before_doc_update`.
struct UserHandlers: Sendable {
    let documents: DocumentWriter
    package let security: SecurityStore
    /// Names the server holds itself (the one-time `receive` users), which no document may take.
    let identities: ServerIdentities
    /// PBKDF2 iterations of the hashes this server makes, and the most a hash supplied by a non-admin may ask for.
    let iterations: Int

    /// `POST /_users`: a new user document, its `_id` from the body.
    package func create(_ c: RequestContext) throws -> Response {
        let request = c.request
        let database = try c.database()
        let doc = try userDocumentBody(request)
        guard let docID = doc["_id"]?.stringValue else {
            throw CouchError.forbidden("Doc ID must be of the form org.couchdb.user:name")
        }
        let rev = try writeUserDocument(
            database, docID: docID, doc, base: nil, newEdits: true, user: request.user)
        return userWrite(docID, rev, status: .created)
    }

    /// `PUT` and `DELETE /_users/{doc}`.
    func write(_ c: RequestContext) throws -> Response {
        let request = c.request
        let database = try c.database()
        let docID = try c.docID()
        var base = try request.query["rev"].map(DocumentInput.parseRev)
        if let ifMatch = request.head.headers["If-Match"] {
            base = try DocumentInput.parseRev(ifMatch.trimmingCharacters(in: "\""))
        }
        if request.verb == .DELETE {
            guard let base else { throw CouchError.conflict }
            let rev = try writeUserDocument(
                database, docID: docID, JSONObject([("_deleted", true)]), base: base, newEdits: true,
                user: request.user)
            return userWrite(docID, rev, status: .ok)
        }
        let doc = try userDocumentBody(request)
        // The URL names the document (a different body `_id` is ignored, as in CouchDB).
        if let bodyID = doc["_id"]?.stringValue, !bodyID.utf8Equals(docID) { try DocumentID.validate(bodyID) }
        if base == nil, let revText = doc["_rev"]?.stringValue { base = try DocumentInput.parseRev(revText) }
        let newEdits = request.query.newEdits
        let rev = try writeUserDocument(
            database, docID: docID, doc, base: base, newEdits: newEdits, user: request.user)
        return userWrite(docID, rev, status: .created)
    }

}

extension UserHandlers {
    private func userDocumentBody(_ request: Request) throws -> JSONObject {
        if request.contentType?.hasPrefix("multipart/") == true {
            // A multipart body would reach the store without its password being hashed.
            throw CouchError.badContentType("Content-Type must be application/json")
        }
        guard case .object(let object) = try request.documentJSONBody() else {
            throw CouchError.badRequest("Request body must be a JSON object")
        }
        return object
    }

    private func userWrite(_ docID: String, _ rev: RevID, status: Response.Status) -> Response {
        var headers = HTTPHeaders()
        headers.set("ETag", "\"\(rev)\"")
        if status == .created { headers.set("Location", "/_users/\(PercentEncoding.segment(docID))") }
        return .json(status, ["ok": true, "id": .string(docID), "rev": .string(rev.description)], headers: headers)
    }

    /// `POST /_users/_bulk_docs`: each document goes through the same checks, one at a time.
    func bulkDocs(_ c: RequestContext) throws -> Response {
        let request = c.request
        try request.requireJSONContent()
        let database = try c.database()
        let body = try request.jsonObjectBody(limit: Limits.bulkRequestBytes)
        guard let docs = body["docs"]?.arrayValue else {
            throw CouchError.badRequest("POST body must include `docs` parameter.")
        }
        try Limits.checkBulkCount(docs.count)
        let newEdits = body["new_edits"]?.boolValue ?? true
        var results: [JSON] = []
        for item in docs {
            let id = item["_id"]?.stringValue
            do {
                guard case .object(let doc) = item else { throw CouchError.notAnObject }
                guard let id else { throw CouchError.forbidden("Doc ID must be of the form org.couchdb.user:name") }
                let base = try doc["_rev"]?.stringValue.map(DocumentInput.parseRev)
                let rev = try writeUserDocument(
                    database, docID: id, doc, base: newEdits ? base : nil, newEdits: newEdits, user: request.user)
                if newEdits { results.append(["ok": true, "id": .string(id), "rev": .string(rev.description)]) }
            } catch let error as CouchError {
                var entry = JSONObject()
                if let id { entry["id"] = .string(id) }
                entry["error"] = .string(error.error)
                entry["reason"] = .string(error.reason)
                results.append(.object(entry))
            }
        }
        return .json(.created, .array(results))
    }

    /// Checks, hashes and stores one user document.
    func writeUserDocument(
        _ database: Database, docID: String, _ doc: JSONObject, base: RevID?, newEdits: Bool, user: UserContext
    ) throws -> RevID {
        try DocumentID.validate(docID)
        let isAdmin = security.security(of: App.usersDatabase).isAdmin(user)
        // Names are compared by bytes (`ExactName`): a look-alike of someone's name is not them.
        let docName = docID.afterBytePrefix(App.userDocumentPrefix).map { ExactName($0) }
        // couch_users_db:before_doc_update: others' documents do not exist for you.
        if !isAdmin, user.name != nil, user.name != docName { throw CouchError.notFound("missing") }
        // A name the server holds itself (a one-time `receive` user) can never be (re-)created here.
        if let docName, identities.isReserved(docName) {
            throw CouchError.forbidden("This user name is reserved by the server.")
        }
        if docID.hasBytePrefix("_design/") {
            guard isAdmin else { throw RequestAuthorizer.securityError(user, "You are not a db or server admin.") }
        }
        var doc = doc
        doc["_id"] = .string(docID)
        var oldDoc: JSONObject?
        if let current = try database.revision(docID, rev: nil), !current.deleted, let body = current.body,
            case .object(let object) = try JSON.parse(body)
        {
            oldDoc = object
        }
        if !docID.hasBytePrefix("_design/") {
            if doc["password"]?.stringValue != nil { doc = UserHandlers.hashingPassword(doc, iterations: iterations) }
            try UserHandlers.validateUserDocument(
                doc, old: oldDoc, user: user, isAdmin: isAdmin, maxIterations: iterations)
        }
        if let rev = base { doc["_rev"] = .string(rev.description) }
        let input = try DocumentInput(.object(doc))
        return try documents.writeOne(
            database, docID: docID, input: input, base: base ?? input.rev, newEdits: newEdits, followed: nil, user: user
        )
    }

    /// Replaces `password` by a fresh PBKDF2 hash (couch_users_db:save_doc).
    static func hashingPassword(_ doc: JSONObject, iterations: Int) -> JSONObject {
        guard let password = doc["password"]?.stringValue else { return doc }
        let hash = PasswordHash.make(password: Array(password.utf8), iterations: iterations)
        let passwordFields: Set<String> = [
            "derived_key", "iterations", "password", "password_scheme", "password_sha", "preserve_salt", "pbkdf2_prf",
            "salt",
        ]
        var out = JSONObject(hash.userDocumentFields)
        for (key, value) in doc where !passwordFields.contains(key) { out[key] = value }
        return out
    }

    /// The rules of CouchDB's `_users` validate function, with its messages; every name and role
    /// is compared by bytes. A hash supplied by someone who is not an admin may not ask for more
    /// than `maxIterations` (the server's own), or each failed login against it would cost more.
    static func validateUserDocument(
        _ doc: JSONObject, old: JSONObject?, user: UserContext, isAdmin: Bool, maxIterations: Int
    ) throws(CouchError) {
        let oldName = old?["name"]?.stringValue.map { ExactName($0) }
        if doc["_deleted"]?.boolValue == true {
            if user.isServerAdmin || (user.name != nil && user.name == oldName) { return }
            throw .forbidden("Only admins may delete other user docs.")
        }
        guard doc["type"]?.stringValue == "user" else { throw .forbidden("doc.type must be user") }
        guard let name = doc["name"]?.stringValue, !name.isEmpty else { throw .forbidden("doc.name is required") }
        guard let rolesJSON = doc["roles"], rolesJSON != .null, rolesJSON != false else {
            throw .forbidden("doc.roles must exist")
        }
        guard let roleItems = rolesJSON.arrayValue else { throw .forbidden("doc.roles must be an array") }
        var roles: [String] = []
        for item in roleItems {
            guard let role = item.stringValue else { throw .forbidden("doc.roles can only contain strings") }
            roles.append(role)
        }
        guard let id = doc["_id"]?.stringValue, id.utf8Equals(App.userDocumentPrefix + name) else {
            throw .forbidden("Doc ID must be of the form org.couchdb.user:name")
        }
        if old != nil, oldName != ExactName(name) { throw .forbidden("Usernames can not be changed.") }
        if doc["password_sha"] != nil, doc["salt"] == nil {
            throw .forbidden("Users with password_sha must have a salt.See /_utils/script/couch.js for example code.")
        }
        if let scheme = doc["password_scheme"]?.stringValue, !["simple", "pbkdf2", "simple+pbkdf2"].contains(scheme) {
            throw .forbidden("Password scheme `\(scheme)` not supported.")
        }
        if doc["password_scheme"]?.stringValue == "pbkdf2" {
            guard case .number = doc["iterations"] else { throw .forbidden("iterations must be a number.") }
            guard doc["derived_key"]?.stringValue != nil else { throw .forbidden("derived_key must be a string.") }
            if !isAdmin, let iterations = doc["iterations"]?.intValue, iterations > maxIterations {
                throw .forbidden("Iteration count is too high for this server")
            }
        }
        if !isAdmin {
            if let old {
                guard user.name == ExactName(name) else {
                    throw .forbidden("You may only update your own user document.")
                }
                let oldRoles = (old["roles"]?.arrayValue ?? []).compactMap(\.stringValue)
                guard ExactName.sortedByBytes(oldRoles) == ExactName.sortedByBytes(roles) else {
                    throw .forbidden("Only _admin may edit roles")
                }
            } else if !roles.isEmpty {
                throw .forbidden("Only _admin may set roles")
            }
        }
        for role in roles where !role.utf8Equals("_metrics") && role.hasBytePrefix("_") {
            throw .forbidden("No system roles (starting with underscore) in users db.")
        }
        if name.hasBytePrefix("_") { throw .forbidden("Username may not start with underscore.") }
        if name.containsByte(UInt8(ascii: ":")) { throw .forbidden("Character `:` is not allowed in usernames.") }
    }
}

extension UserHandlers: RouteCollection {
    package var routes: [Route] {
        return [
            Route([.POST], "/{db}", .usersMember, body: .document, onlyIn: App.usersDatabase, create),
            Route([.POST], "/{db}/_bulk_docs", .usersMember, body: .bulk, onlyIn: App.usersDatabase, bulkDocs),
            Route([.PUT, .DELETE], "/{db}/{doc}", .usersMember, body: .document, onlyIn: App.usersDatabase, write),
        ]
    }
}
