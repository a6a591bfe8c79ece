import CouchServer
import CouchWire
import Foundation
import MediaDecoding
import MediaSandbox
import Replicator

/// The local database `couchlite push` sends from: one document per photo, its id from the content
/// hash, the file as its attachment (streamed from the file into the store, never read whole).
package struct Outbox {
    package let endpoint: Endpoint
    /// Reads each file's date taken, camera and size (EXIF, QuickTime) in a worker process: the files may have come
    /// from anyone.
    package let media: MediaSandbox

    package init(endpoint: Endpoint, media: MediaSandbox = MediaSandbox()) {
        self.endpoint = endpoint
        self.media = media
    }

    /// The document's fields: when the camera says it was taken (with its offset when it says; else the file's
    /// modification time), the camera and the size as displayed.
    func documentFields(_ photo: PhotoScanner.Photo) -> JSONObject {
        let info = try? media.probe(path: photo.path).get()
        let taken = info?.takenISO ?? ISO8601DateFormatter().string(from: photo.modified)
        return PhotoDocument.fields(
            name: photo.name, taken: taken, size: photo.size, make: info?.make, model: info?.model,
            width: info?.width, height: info?.height)
    }

    /// Creates the database unless it exists.
    package func create() throws {
        let response = try endpoint.client.send(endpoint.request("PUT", ""))
        response.discard()
        guard [201, 202, 412].contains(response.status) else {
            throw PushError.local("cannot create the outbox database (HTTP \(response.status))")
        }
    }

    /// Adds one photo unless a document with its id is already there.
    /// - Returns: whether it was added (false: sent or queued before).
    @discardableResult
    package func add(_ photo: PhotoScanner.Photo) throws -> Bool {
        let id = try PhotoScanner.documentID(photo.path)
        let existing = try endpoint.client.send(endpoint.request("GET", "/" + PathEncoding.docID(id)))
        existing.discard()
        if existing.status == 200 { return false }
        var fields = JSONObject([("_id", .string(id))])
        for (key, value) in documentFields(photo) {
            fields[key] = value
        }
        fields["_attachments"] = .object(
            JSONObject([
                (photo.name, ["content_type": .string(photo.contentType), "length": .int(photo.size), "follows": true])
            ]))
        let doc = JSON.object(fields)
        let template = MultipartWriter()
        let path = photo.path
        let json = doc.serialized()
        let size = photo.size
        let body: @Sendable (BodyWriter) throws -> Void = { out in
            var multipart = template
            try out.write(multipart.partHeader(headers: MultipartWriter.jsonPartHeaders))
            try out.write(json)
            try out.write(multipart.partHeader(headers: [("Content-Length", String(size))]))
            guard let handle = FileHandle(forReadingAtPath: path) else { throw PushError.local("cannot read \(path)") }
            defer { try? handle.close() }
            var sent = 0
            while sent < size {
                let chunk = handle.readData(ofLength: min(1 << 20, size - sent))
                if chunk.isEmpty { throw PushError.local("\(path) changed while it was read") }
                try chunk.withUnsafeBytes { try out.write($0) }
                sent += chunk.count
            }
            try out.write(multipart.closing())
        }
        var request = endpoint.request("PUT", "/" + PathEncoding.docID(id), timeout: .seconds(600))
        request.headers.set("Content-Type", template.contentType(mediaType: "multipart/related"))
        request.body = .stream(body)
        let response = try endpoint.client.send(request)
        let reply = (try? response.json(limit: 1 << 20)) ?? .null
        switch response.status {
        case 201, 202: return true
        case 409: return false  // added by a concurrent run
        case 507: throw PushError.diskFull(reply["reason"]?.stringValue ?? "")
        default:
            let reason = reply["reason"]?.stringValue ?? "HTTP \(response.status)"
            if reason.lowercased().contains("no space") || reply["error"]?.stringValue == "insufficient_storage" {
                throw PushError.diskFull(reason)
            }
            throw PushError.local("cannot add \(photo.relative) to the outbox: \(reason)")
        }
    }

    /// Every document's id, winning rev and `size`.
    package func contents() throws -> [(id: String, rev: String, size: Int)] {
        let response = try endpoint.client.send(endpoint.request("GET", "/_all_docs?include_docs=true"))
        let reply = try response.json(limit: 1 << 30)
        return (reply["rows"]?.arrayValue ?? []).compactMap { row in
            guard let id = row["id"]?.stringValue, let rev = row["value"]?["rev"]?.stringValue else { return nil }
            return (id, rev, row["doc"]?["size"]?.intValue ?? 0)
        }
    }
}
