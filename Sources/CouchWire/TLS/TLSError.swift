import COpenSSL

/// What went wrong in TLS setup or on a TLS connection, with a message naming what did not match.
public enum TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A certificate, key or CA file could not be read or used (path and OpenSSL's reason).
    case configuration(String)
    /// The handshake failed (OpenSSL's reason, e.g. "no shared cipher", "wrong version number").
    case handshake(String)
    /// The peer's certificate was refused: chain, host name or validity (e.g. "certificate has expired").
    case verification(String)
    /// The peer's certificate is not the pinned one.
    case pinMismatch(expected: TLSFingerprint, actual: TLSFingerprint)
    /// The peer did not speak TLS (a server sees plain HTTP, say).
    case notTLS
    /// A wait exceeded its deadline.
    case timeout
    /// The peer closed the connection (or reset it) before the operation completed.
    case closed
    /// Any other failure of the connection (OpenSSL's reason).
    case failed(String)

    public var description: String {
        switch self {
        case .configuration(let message): "TLS configuration: \(message)"
        case .handshake(let message): "TLS handshake failed: \(message)"
        case .verification(let message): "TLS certificate refused: \(message)"
        case .pinMismatch(let expected, let actual):
            "TLS certificate refused: its SHA-256 fingerprint \(actual.colonHex) is not the pinned \(expected.colonHex)"
        case .notTLS: "the peer does not speak TLS"
        case .timeout: "TLS operation timed out"
        case .closed: "the TLS connection was closed by the peer"
        case .failed(let message): "TLS connection failed: \(message)"
        }
    }

    /// Takes (and clears) this thread's OpenSSL error queue as one readable line; `fallback` when empty.
    static func drainQueue(fallback: String) -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            // "error:0A000126:SSL routines::unexpected eof while reading" → the part after the last "::" or ":".
            let reason = text.split(separator: ":", omittingEmptySubsequences: true).last.map(String.init) ?? text
            if !reasons.contains(reason) { reasons.append(reason) }
        }
        return reasons.isEmpty ? fallback : reasons.joined(separator: "; ")
    }
}
