/// Bounds the multipart parser enforces while bytes arrive, so that a hostile body cannot make
/// it buffer without limit. Part bodies are never buffered, so they need no limit here; the
/// attachment size limit belongs to whoever stores them.
public enum MultipartLimits {
    /// Longest boundary, in bytes (RFC 2046 §5.1.1: 1 to 70 characters).
    public static let maxBoundaryLength = 70
    /// Largest header block of one part, in bytes, counted from the end of the boundary line to
    /// the blank line (16 KiB). Real parts carry three or four short headers.
    public static let maxPartHeaderBlockLength = 16 * 1024
    /// Most parts in one body. A document with this many attachments is refused.
    public static let maxParts = 1_000
    /// Most bytes discarded before the first boundary (16 KiB). Real clients send none (CouchDB)
    /// or one CRLF (Couchbase Lite); a long preamble means a wrong boundary.
    public static let maxPreambleLength = 16 * 1024
    /// Most spaces and tabs allowed between a boundary and its CRLF (RFC 2046 transport padding).
    public static let maxTransportPadding = 256
}
