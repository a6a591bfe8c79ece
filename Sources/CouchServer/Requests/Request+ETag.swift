import CouchWire

extension Request {
    /// Whether `If-None-Match` names `etag`, as `chttpd:etag_match` reads it: the header split at commas and
    /// spaces, a `W/` prefix ignored, `etag` compared whole (quotes included; `*` is no wildcard).
    func ifNoneMatch(_ etag: String) -> Bool {
        guard let header = head.headers["If-None-Match"] else { return false }
        return Self.etags(in: header).contains(etag)
    }

    /// The entity tags of an `If-None-Match` value, `W/` prefixes dropped.
    static func etags(in header: String) -> [String] {
        header.split(whereSeparator: { $0 == "," || $0 == " " }).map { tag in
            tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : String(tag)
        }
    }
}
