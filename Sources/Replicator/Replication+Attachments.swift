import CouchWire

/// Documents whose attachment bytes must travel: read with `open_revs` (multipart/mixed) and written
/// with a multipart `PUT ?new_edits=false` whose body is produced while the source's reply is read,
/// so an attachment of any size passes through in 64 KiB pieces.
extension Replication {
    /// Fetches `item`'s revisions with `GET /db/doc?revs=true&open_revs=[…]&latest=true&atts_since=[…]`,
    /// streams those with attachment bytes straight to the target, and hands back the others
    /// (`plainDocs` for `_bulk_docs`, `singleDocs` for a JSON `PUT`). Network failures on either side
    /// retry the whole document.
    func transferOpenRevs(_ item: Missing, plainDocs: inout [JSON], singleDocs: inout [JSON]) throws(ReplicationError) {
        var delay = options.retryDelay
        var attempt = 0
        while true {
            var plain: [JSON] = []
            var singles: [JSON] = []
            do {
                try transferOnce(item, plain: &plain, singles: &singles)
                plainDocs += plain
                singleDocs += singles
                return
            } catch {
                if isCancelled { throw .cancelled }
                guard error.isTransient, attempt < options.retries else { throw error }
            }
            attempt += 1
            try pause(delay)
            delay = delay * 2
        }
    }

    private func transferOnce(_ item: Missing, plain: inout [JSON], singles: inout [JSON]) throws(ReplicationError) {
        let revs = JSON.array(item.revs.map(JSON.string)).serializedString
        var path = "/" + PathEncoding.docID(item.id) + "?revs=true&open_revs=" + PathEncoding.query(revs)
        path += "&latest=true&attachments=true"
        if !item.ancestors.isEmpty {
            path += "&atts_since=" + PathEncoding.query(JSON.array(item.ancestors.map(JSON.string)).serializedString)
        }
        let response = try call(
            source, source.request("GET", path, accept: "multipart/mixed", timeout: ClientRequest.peerTimeout * 2))
        if response.status == 404 {
            // Deleted from the source meanwhile (or purged): nothing to copy.
            response.discard()
            return
        }
        guard response.status == 200 else {
            _ = try expect(response, source, [200], "open_revs")
            return
        }
        let reader = try OpenRevsReader(response)
        while let next = try reader.next() {
            switch next {
            case .missing:
                continue
            case .document(let doc):
                update { $0.docsRead += 1 }
                let isDesign = doc["_id"]?.stringValue?.hasPrefix("_design/") == true
                if doc["_attachments"] == nil && !isDesign { plain.append(doc) } else { singles.append(doc) }
            case .related(let doc):
                update { $0.docsRead += 1 }
                try putMultipart(doc, from: reader)
            }
        }
    }

    /// `PUT /db/doc?new_edits=false` as `multipart/related`, chunked: the JSON part, then each attachment
    /// part as it arrives from `reader` (with the part headers the source gave it).
    private func putMultipart(_ doc: JSON, from reader: OpenRevsReader) throws(ReplicationError) {
        guard let id = doc["_id"]?.stringValue else { throw .protocolError("open_revs document without _id") }
        let template = MultipartWriter()
        let contentType = template.contentType(mediaType: "multipart/related")
        let json = doc.serialized()
        let body: @Sendable (BodyWriter) throws -> Void = { [reader] out in
            var multipart = template
            try out.write(multipart.partHeader(headers: MultipartWriter.jsonPartHeaders))
            try out.write(json)
            while let headers = try reader.nextAttachmentHeaders() {
                let kept = headers.filter {
                    ["content-disposition", "content-type", "content-length", "content-encoding"].contains(
                        $0.0.lowercased())
                }
                try out.write(multipart.partHeader(headers: kept))
                while let chunk = try reader.readAttachment() {
                    try out.write(chunk)
                    // Counted as they go, so a progress display moves during a large video.
                    self.update { $0.attachmentBytes += chunk.count }
                }
            }
            try out.write(multipart.closing())
        }
        var headers = HTTPHeaders()
        headers.add("Accept", "application/json")
        headers.add("Content-Type", contentType)
        headers.add("User-Agent", "couchlite-replicator/1")
        if let authorization = target.authorization { headers.add("Authorization", authorization) }
        for (name, value) in target.extraHeaders { headers.set(name, value) }
        let request = ClientRequest(
            method: "PUT", target: target.basePath + "/" + PathEncoding.docID(id) + "?new_edits=false",
            headers: headers, body: .stream(body), timeout: ClientRequest.peerTimeout * 2)
        let response = try call(target, request)
        try judgeWrite(response, id: id)
    }
}

/// `@unchecked Sendable` only because `putMultipart`'s body producer is a `@Sendable` closure that captures the
/// reader: `HTTPClient.send` runs that producer on the calling thread, the replication thread that made the reader
/// and reads it before and after, and it has returned when `send` does. The reader never crosses a thread.
extension OpenRevsReader: @unchecked Sendable {}
