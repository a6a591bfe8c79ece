import CouchCrypto

/// Frames multipart bodies byte for byte the way CouchDB 3 does
/// (`couch_httpd_multipart:encode_multipart_stream`, `chttpd_db:send_docs_multipart`).
///
/// A body is `partHeader` + part bytes for each part, then `closing()`:
/// ```
/// --B\r\nContent-Type: application/json\r\n\r\n{json}
/// \r\n--B\r\nContent-Disposition: attachment; filename="a.jpg"\r\nContent-Type: image/jpeg\r\nContent-Length: 5\r\n\r\n<5 bytes>
/// \r\n--B--
/// ```
/// The CRLF before each boundary belongs to the delimiter (RFC 2046), so `partHeader` adds it
/// from the second part on. The writer only frames; callers stream part bytes in between, which
/// is how a 1 GiB attachment goes out without being loaded.
///
/// For an `open_revs` reply (`multipart/mixed`), each revision is one outer part whose
/// `Content-Type` is `application/json` (no attachment follows), the inner writer's
/// ``contentType(mediaType:)`` (`multipart/related; boundary="…"`) with the inner body as part
/// bytes, or ``missingRevisionContentType`` with `{"missing":"rev"}`.
public struct MultipartWriter: Sendable {
    /// The boundary, without the leading `--`.
    public let boundary: [UInt8]
    private var partsWritten = 0

    /// `Content-Type` of an `open_revs` part that reports a missing revision.
    public static let missingRevisionContentType = "application/json; error=\"true\""

    /// Creates a writer with a fresh boundary of 32 random lowercase hex characters, as
    /// CouchDB's `couch_uuids:random()` makes them.
    public init() {
        boundary = Array(Secrets.randomBytes(16).hexString.utf8)
    }

    /// Creates a writer with a given boundary (tests, replays).
    /// - Parameter boundary: 1 to 70 RFC 2046 boundary characters.
    public init(boundary: [UInt8]) {
        precondition(MultipartBoundary.isValid(boundary), "invalid multipart boundary")
        self.boundary = boundary
    }

    /// The `Content-Type` header value for this body, with the boundary quoted as CouchDB does.
    /// - Parameter mediaType: `multipart/related` (a document with attachments) or
    ///   `multipart/mixed` (an `open_revs` reply).
    public func contentType(mediaType: String = "multipart/related") -> String {
        "\(mediaType); boundary=\"\(String(decoding: boundary, as: UTF8.self))\""
    }

    /// The delimiter and header block that open the next part.
    ///
    /// CR and LF in names or values are replaced by spaces, so stored data can never inject a
    /// header line.
    /// - Parameter headers: Part headers in the order to send them.
    /// - Returns: `[CRLF]--B CRLF (Name: value CRLF)* CRLF`; the leading CRLF only after the first part.
    public mutating func partHeader(headers: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(boundary.count + 8 + headers.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 4 })
        if partsWritten > 0 { out.append(contentsOf: Self.crlf) }
        out.append(contentsOf: Self.dashes)
        out.append(contentsOf: boundary)
        out.append(contentsOf: Self.crlf)
        for (name, value) in headers {
            out.append(contentsOf: Self.headerSafe(name))
            out.append(contentsOf: [UInt8(ascii: ":"), UInt8(ascii: " ")])
            out.append(contentsOf: Self.headerSafe(value))
            out.append(contentsOf: Self.crlf)
        }
        out.append(contentsOf: Self.crlf)
        partsWritten += 1
        return out
    }

    /// The closing delimiter `CRLF--B--` (`--B--` if no part was written). CouchDB sends no
    /// CRLF after it.
    public func closing() -> [UInt8] {
        (partsWritten > 0 ? Self.crlf : []) + Self.dashes + boundary + Self.dashes
    }

    /// Part headers for the JSON body of a `multipart/related` document.
    public static let jsonPartHeaders: [(String, String)] = [("Content-Type", "application/json")]

    /// Part headers for one attachment, in CouchDB's order: `Content-Disposition`,
    /// `Content-Type`, `Content-Length`, then `Content-Encoding` unless identity.
    /// - Parameters:
    ///   - name: Attachment name; `"` and `\` are backslash-escaped (CouchDB writes it raw, which
    ///     breaks on a quote).
    ///   - contentType: The attachment's `content_type`.
    ///   - length: Bytes that follow: the *encoded* length when an encoding is given.
    ///   - encoding: `gzip` for an encoded attachment, nil for identity.
    public static func attachmentHeaders(
        name: String, contentType: String, length: Int, encoding: String? = nil
    ) -> [(String, String)] {
        var escaped = ""
        for character in name {
            if character == "\"" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        var headers = [
            ("Content-Disposition", "attachment; filename=\"\(escaped)\""),
            ("Content-Type", contentType),
            ("Content-Length", String(length)),
        ]
        if let encoding, encoding != "identity" { headers.append(("Content-Encoding", encoding)) }
        return headers
    }

    /// One attachment of a `multipart/related` document, for ``relatedBodyLength(jsonLength:attachments:)``.
    public struct Attachment: Sendable {
        public var name: String
        public var contentType: String
        /// Bytes sent (encoded length when `encoding` is set).
        public var length: Int
        public var encoding: String?

        public init(name: String, contentType: String, length: Int, encoding: String? = nil) {
            self.name = name
            self.contentType = contentType
            self.length = length
            self.encoding = encoding
        }
    }

    /// The exact byte length of a `multipart/related` document body: the JSON part, then each
    /// attachment with ``attachmentHeaders(name:contentType:length:encoding:)``, then the closing
    /// delimiter. CouchDB sends it as `Content-Length` for `GET /db/doc` with
    /// `Accept: multipart/related` (`couch_doc:len_doc_to_multi_part_stream`).
    ///
    /// CouchDB answers plain `application/json` when no attachment follows; so should callers.
    /// - Parameters:
    ///   - jsonLength: Bytes of the JSON part.
    ///   - attachments: The attachments that follow, in `_attachments` order (stubs excluded).
    /// - Returns: The body length in bytes, when framed by this writer.
    public func relatedBodyLength(jsonLength: Int, attachments: [Attachment]) -> Int {
        var framing = MultipartWriter(boundary: boundary)
        var total = framing.partHeader(headers: Self.jsonPartHeaders).count + jsonLength
        for attachment in attachments {
            let headers = Self.attachmentHeaders(
                name: attachment.name, contentType: attachment.contentType, length: attachment.length,
                encoding: attachment.encoding)
            total += framing.partHeader(headers: headers).count + attachment.length
        }
        return total + framing.closing().count
    }

    private static let crlf: [UInt8] = [0x0D, 0x0A]
    private static let dashes: [UInt8] = [UInt8(ascii: "-"), UInt8(ascii: "-")]

    private static func headerSafe(_ text: String) -> [UInt8] {
        text.utf8.map { $0 == 0x0D || $0 == 0x0A ? UInt8(ascii: " ") : $0 }
    }
}
