/// Limits that protect the tree algorithms from hostile input.
public enum RevTreeLimits {
    /// Longest accepted replicated history (`_revisions.ids`), in revisions. CouchDB itself accepts any length and
    /// stems afterwards; a path this long would only be stemmed to `_revs_limit` (at most `maxRevsLimit`) anyway,
    /// so refusing it costs nothing legitimate and bounds the work per document.
    public static let maxPathLength = 10_000
    /// Longest accepted hash part of a rev id, in UTF-8 bytes. CouchDB accepts any opaque string; real clients send
    /// 32 (md5, CouchDB/PouchDB) or 40 (sha1, Couchbase Lite) hex digits.
    public static let maxHashBytes = 256
    /// Most decimal digits in the generation number (keeps `pos` far from `Int` overflow).
    public static let maxPosDigits = 15
    /// Largest accepted `_revs_limit`, in revisions.
    public static let maxRevsLimit = 1_000_000
    /// CouchDB's default `_revs_limit`, in revisions.
    public static let defaultRevsLimit = 1000
}
