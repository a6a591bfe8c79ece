/// Limits the HTTP engine enforces while bytes arrive, so no client can make it buffer without bound.
///
/// Values follow CouchDB/mochiweb and SwiftNIO's `NIOHTTPDecoderLimitConfiguration`.
public enum HTTPLimits {
    /// Longest request line, excluding its CRLF, in bytes (8 KiB). Longer → 414.
    public static let maxRequestLineBytes = 8 * 1024
    /// Largest header block (all field lines with their CRLFs, after the request line), in bytes (80 KiB). Larger → 431.
    public static let maxHeaderBlockBytes = 80 * 1024
    /// Most header fields in one request (count). More → 431.
    public static let maxHeaderCount = 100
    /// Most empty lines (CRLF) ignored before a request line (RFC 9112 §2.2), count. More → 400.
    public static let maxLeadingEmptyLines = 4
    /// Most hexadecimal digits in a chunk-size (16 digits = 64 bits). More → 400.
    public static let maxChunkSizeDigits = 16
    /// Longest chunk extension (`;name=value…`) after a chunk-size, in bytes (4 KiB). Longer → 400.
    public static let maxChunkExtensionBytes = 4 * 1024
    /// Most Content-Length digits accepted (18 digits fit in `Int`). More → 413.
    public static let maxContentLengthDigits = 18
    /// Unread request body the engine will still read and discard to keep a connection alive, in bytes (64 KiB).
    /// A larger unread remainder closes the connection instead.
    public static let maxDrainBytes = 64 * 1024
    /// Response bytes buffered before they are sent without an explicit flush, in bytes (64 KiB).
    public static let responseBufferBytes = 64 * 1024
    /// Most buffer capacity a response keeps across an explicit flush (a live feed waiting), in bytes (4 KiB).
    public static let waitingBufferBytes = 4 * 1024
    /// Per-connection read buffer, in bytes (16 KiB). Body reads larger than this go straight to the caller.
    public static let readBufferBytes = 16 * 1024
    /// Stack of each connection thread, in bytes (512 KiB). Only touched pages count towards RSS.
    public static let threadStackBytes = 512 * 1024
    /// Pending connections the kernel queues before `accept`, count.
    public static let listenBacklog: Int32 = 1024

    /// Most bytes one body read takes from the socket at once, in bytes (256 KiB), whatever `maxCount` asks.
    public static let maxReadChunkBytes = 256 * 1024
    /// After an error response, how long the engine keeps reading (and discarding) before closing, so the
    /// client sees the response rather than a reset caused by its unread request bytes.
    public static let lingerDuration: Duration = .seconds(1)
    /// Most bytes discarded while lingering, in bytes (256 KiB).
    public static let lingerBytes = 256 * 1024
}
