import CouchCrypto
import CouchWire
import Foundation

/// The `AuthSession` cookie: base64url of `name:HEXTIME:` followed by an HMAC-SHA256 of
/// `name:HEXTIME` keyed by the server secret and the user's password salt, the layout CouchDB
/// uses, so a password change (new salt) ends every session of that user.
struct SessionCookie: Equatable {
    package let name: String
    /// Seconds since 1970 when the cookie was issued.
    let issued: Int
    let mac: [UInt8]

    static let cookieName = "AuthSession"

    /// A freshly signed cookie value.
    static func value(name: String, issued: Int, secret: [UInt8], salt: String) -> String {
        let payload = Array("\(name):\(String(issued, radix: 16, uppercase: true))".utf8)
        let mac = Secrets.hmacSHA256(key: secret + Array(salt.utf8), message: payload)
        return Base64URL.encode(payload + [UInt8(ascii: ":")] + mac)
    }

    /// Splits a cookie value into its parts.
    /// - Throws: 400 `bad_request` "Malformed AuthSession cookie…" as CouchDB, for anything that is
    ///   not base64url of three colon-separated parts with a hex time.
    init(parsing value: String) throws(CouchError) {
        let malformed = CouchError.badRequest("Malformed AuthSession cookie. Please clear your cookies.")
        guard value.utf8.count <= AuthLimits.credentialBytes, let bytes = Base64URL.decode(value) else {
            throw malformed
        }
        let colon = UInt8(ascii: ":")
        guard let first = bytes.firstIndex(of: colon),
            let second = bytes[(first + 1)...].firstIndex(of: colon),
            let name = String(validating: bytes[..<first], as: UTF8.self),
            let timeText = String(validating: bytes[(first + 1)..<second], as: UTF8.self)
        else { throw malformed }
        guard !timeText.isEmpty, timeText.count <= 16, let issued = Int(timeText, radix: 16) else {
            // CouchDB treats an unreadable time as an expired cookie, not a malformed one.
            self.init(name: name, issued: 0, mac: [])
            return
        }
        self.init(name: name, issued: issued, mac: Array(bytes[(second + 1)...]))
    }

    init(name: String, issued: Int, mac: [UInt8]) {
        self.name = name
        self.issued = issued
        self.mac = mac
    }

    /// Whether the MAC is ours for this user's salt; compared in constant time.
    func isAuthentic(secret: [UInt8], salt: String) -> Bool {
        let payload = Array("\(name):\(String(issued, radix: 16, uppercase: true))".utf8)
        let expected = Secrets.hmacSHA256(key: secret + Array(salt.utf8), message: payload)
        return Secrets.constantTimeEqual(expected, mac)
    }

    /// The `Set-Cookie` value for `value` (empty to log out), with CouchDB's attributes plus
    /// `SameSite=Lax`; `Secure` when the request came over HTTPS, as CouchDB does (the browser then never
    /// sends the cookie over plain HTTP).
    /// - Parameters:
    ///   - seconds: how long the browser keeps it (default the session timeout); a drop account's cookie lives as
    ///     long as the account.
    ///   - sameSite: `Lax` (CouchDB's pages), or `Strict` for the drop page's sign-in by token, which is only ever
    ///     used by same-origin requests of that page.
    static func header(
        _ value: String, now: Int, secure: Bool = false, seconds: Int = AuthLimits.sessionSeconds,
        sameSite: String = "Lax"
    ) -> String {
        let expires = httpCookieDate(now + seconds)
        return
            "\(cookieName)=\(value); Version=1; Expires=\(expires); Max-Age=\(seconds); Path=/"
            + (secure ? "; Secure" : "") + "; HttpOnly; SameSite=\(sameSite)"
    }

    /// `Sun, 29-Nov-2026 13:24:06 GMT`, the date form mochiweb writes into cookies.
    static func httpCookieDate(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return String(
            format: "%@, %02d-%@-%04d %02d:%02d:%02d GMT", days[Int(parts.tm_wday) % 7], parts.tm_mday,
            months[Int(parts.tm_mon) % 12], parts.tm_year + 1900, parts.tm_hour, parts.tm_min, parts.tm_sec)
    }

    /// The first `AuthSession` value in a `Cookie` header, nil when there is none or it is empty.
    static func find(in cookieHeader: String?) -> String? {
        guard let cookieHeader else { return nil }
        for piece in cookieHeader.split(separator: ";") {
            let pair = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces) == cookieName else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            return value.isEmpty ? nil : value
        }
        return nil
    }
}

/// Base64 with the URL alphabet and no padding (RFC 4648 §5), as CouchDB's `encodeBase64Url`.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        var text = Base64.encodedString(bytes)
        while text.hasSuffix("=") { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    static func decode(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): bytes.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): bytes.append(UInt8(ascii: "/"))
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="), 0x20, 0x09, 0x0A, 0x0D: return nil
            default: bytes.append(byte)
            }
        }
        if bytes.count % 4 == 1 { return nil }
        while bytes.count % 4 != 0 { bytes.append(UInt8(ascii: "=")) }
        return Base64.decode(bytes)
    }
}
