import CouchStore
import CouchWire
import RevTree

/// A stored revision as a filter function gets it (`_id`, `_rev`, the fields, `_deleted`, `_revisions`,
/// attachment stubs), written straight from the stored body: the body is already a serialized JSON object, so
/// splicing it between the special members costs a copy instead of a parse and a serialization per document.
enum FilterDocument {
    static func serialized(id: String, _ revision: StoredRevision, renderer: DocumentRenderer) throws -> [UInt8] {
        let body = revision.body ?? Array("{}".utf8)
        guard revision.attachments.isEmpty, body.first == UInt8(ascii: "{"), body.last == UInt8(ascii: "}") else {
            return JSON.object(try renderer.render(revision)).serialized()
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(body.count + id.utf8.count + 48 + revision.history.count * 36)
        bytes += Array(#"{"_id":"#.utf8)
        JSON.appendQuoted(id, to: &bytes)
        bytes += Array(#","_rev":"#.utf8)
        JSON.appendQuoted(revision.rev.description, to: &bytes)
        if body.count > 2 {
            bytes.append(UInt8(ascii: ","))
            bytes += body[1..<(body.count - 1)]
        }
        if revision.deleted { bytes += Array(#","_deleted":true"#.utf8) }
        bytes += Array(#","_revisions":{"start":\#(revision.rev.pos),"ids":["#.utf8)
        for (index, rev) in revision.history.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            JSON.appendQuoted(rev.hash, to: &bytes)
        }
        bytes += Array("]}}".utf8)
        return bytes
    }
}
