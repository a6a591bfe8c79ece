import CouchWire

/// The `headers` of a design function's `req`, as CouchDB builds them (`mochiweb_headers:to_list` of what Erlang's
/// HTTP packet parser read): each name in Erlang's canonical case, repeated headers merged into one value joined by
/// `", "` (the first spelling kept), sorted by lower-case name. `JSON.stringify(req)` then reads the same on both
/// servers, whatever order and case the client sent.
enum DesignRequestHeaders {
    /// Erlang's parser leaves longer names as sent (`HTTP_MAX_NAME_LEN`, found against CouchDB 3.4.3: a 50-byte
    /// name is canonicalized, a 51-byte one is not).
    static let longestCanonicalName = 50

    /// The headers of `fields` with `excluded` (lower-case names) left out.
    static func json(_ fields: some Sequence<(name: String, value: String)>, excluding excluded: Set<String>)
        -> JSONObject
    {
        var merged: [String: (name: String, value: String)] = [:]
        for (name, value) in fields {
            let key = name.lowercased()
            guard !excluded.contains(key) else { continue }
            if let first = merged[key] {
                merged[key] = (first.name, first.value + ", " + value)
            } else {
                merged[key] = (canonicalName(name), value)
            }
        }
        var object = JSONObject()
        for key in merged.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            if let field = merged[key] { object[field.name] = .string(field.value) }
        }
        return object
    }

    /// Erlang's `decode_packet(httph_bin)` spelling of a header name: the first letter and each letter right after
    /// a `-` upper case, every other letter lower case (`x--b` is `X--b`: the second `-` takes the turn). Only
    /// ASCII letters change.
    static func canonicalName(_ name: String) -> String {
        guard name.utf8.count <= longestCanonicalName else { return name }
        var upper = true
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.utf8.count)
        for byte in name.utf8 {
            if upper {
                bytes.append(byte >= 0x61 && byte <= 0x7A ? byte - 0x20 : byte)
                upper = false
            } else if byte >= 0x41 && byte <= 0x5A {
                bytes.append(byte + 0x20)
            } else {
                bytes.append(byte)
                upper = byte == UInt8(ascii: "-")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
