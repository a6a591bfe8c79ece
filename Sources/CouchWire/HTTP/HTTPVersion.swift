/// An HTTP protocol version, such as 1.1 ([RFC 9112 §2.3](https://www.rfc-editor.org/rfc/rfc9112#section-2.3)).
public struct HTTPVersion: Sendable, Equatable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    public var description: String { "HTTP/\(major).\(minor)" }

    /// True for HTTP/1.1 and later minors, which default to persistent connections and allow chunked framing.
    var isAtLeast1_1: Bool { major > 1 || (major == 1 && minor >= 1) }
}
