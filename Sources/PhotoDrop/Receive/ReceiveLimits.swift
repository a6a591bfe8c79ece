import CouchServer

/// Sizes and times of `couchlite receive`.
enum ReceiveLimits {
    /// Random bytes of a one-time password (hex-encoded, so twice as many characters): 128 bits.
    static let passwordBytes = 16
    /// Random bytes of a one-time user name, after `drop-`.
    static let nameBytes = 6
    /// With `--once`: how long no request may arrive after the sender's checkpoint before the push counts as
    /// complete, in seconds ("no write for a few seconds").
    static let onceQuietSeconds = 3
    /// After the credentials end (ttl, `--once`), how long the server still answers, in seconds, so a sender
    /// still retrying gets a definite 401 (which ends a CouchDB or PouchDB replication) instead of a refused
    /// connection (which they retry for minutes).
    static let closingGraceSeconds = 2
    /// How often the session checks for its end, in milliseconds.
    static let pollMilliseconds = 100
    /// Most bytes one session writes to the folder decoded from gzip-encoded attachments (1 GiB): the only way
    /// the folder grows faster than the bytes received. Photos and videos do not compress, so senders do not
    /// gzip them (the CouchDB replicator gzips only text, JSON, JavaScript and XML).
    static let gzipExportBytes = 1 << 30
    /// Most a gzip-encoded attachment is exported decoded to: this many times its stored size, plus
    /// `gzipSlackBytes` (a photo gzips to about its own size; a gzip bomb to a thousandth of it).
    static let gzipExpansion = 4
    static let gzipSlackBytes = 1 << 20
}
