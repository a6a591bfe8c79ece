import CouchWire

/// Where a `_find` stopped: the last row's index key and document id, sent to the client as opaque
/// base64url text and taken back to resume strictly after that row (`mango_json_bookmark`).
struct MangoBookmark: Sendable, Equatable {
    var key: JSON
    var docID: String

    /// The longest bookmark text accepted: a bookmark holds one index key.
    static let maxLength = 64 * 1024

    var encoded: String {
        let bytes = JSON.array([key, .string(docID)]).serialized()
        var text = Base64.encodedString(bytes)
        text = String(
            text.unicodeScalars.compactMap { scalar -> Character? in
                switch scalar {
                case "+": "-"
                case "/": "_"
                case "=": nil
                default: Character(scalar)
                }
            })
        return text
    }

    /// Decodes a bookmark; 400 `invalid_bookmark` (CouchDB's) for anything this server did not write.
    init(decoding text: String) throws(CouchError) {
        let invalid = CouchError.mango(
            "invalid_bookmark", "Invalid bookmark value: \(JSON.string(text).serializedString)")
        guard text.utf8.count <= MangoBookmark.maxLength else { throw invalid }
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while standard.utf8.count % 4 != 0 { standard += "=" }
        guard let bytes = Base64.decode(standard), let json = try? JSON.parse(bytes),
            case .array(let pair) = json, pair.count == 2, case .string(let docID) = pair[1]
        else { throw invalid }
        key = pair[0]
        self.docID = docID
    }

    init(key: JSON, docID: String) {
        self.key = key
        self.docID = docID
    }
}
