/// Errors of the pure revision-tree layer; each maps to a 400 on the wire.
public enum RevTreeError: Error, Equatable, Sendable {
    /// A rev id is not `N-hash` with a positive decimal `N` and a non-empty hash ("Invalid rev format").
    case invalidRevFormat
    /// A `_revisions` path is malformed: `start` below 1, fewer generations than ids, empty, or not consecutive.
    case invalidRevisions(String)
    /// A `_revisions` path is longer than `RevTreeLimits.maxPathLength`.
    case pathTooLong(Int)
    /// A `_revisions` id of 32 characters that are not all hex digits (CouchDB: 400 `doc_validation`
    /// "RevId isn't a valid hexadecimal").
    case invalidHexRevID
}
