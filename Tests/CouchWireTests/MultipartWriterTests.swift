import CouchCrypto
import CouchWire
import Foundation
import Testing

@Suite("MultipartWriter")
struct MultipartWriterTests {
    @Test func randomBoundaryIs32LowercaseHex() {
        let a = MultipartWriter()
        let b = MultipartWriter()
        #expect(a.boundary.count == 32 && a.boundary != b.boundary)
        #expect(a.boundary.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        #expect(a.contentType() == "multipart/related; boundary=\"\(String(decoding: a.boundary, as: UTF8.self))\"")
    }

    @Test func framingMatchesCouchDB() {
        var writer = MultipartWriter(boundary: Array("B".utf8))
        var body = writer.partHeader(headers: MultipartWriter.jsonPartHeaders) + Array("{}".utf8)
        body += writer.partHeader(
            headers: MultipartWriter.attachmentHeaders(
                name: "a.txt", contentType: "text/plain", length: 3, encoding: "gzip"))
        body += Array("abc".utf8) + writer.closing()
        let expected =
            "--B\r\nContent-Type: application/json\r\n\r\n{}\r\n--B\r\nContent-Disposition: attachment; filename=\"a.txt\""
            + "\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nContent-Encoding: gzip\r\n\r\nabc\r\n--B--"
        #expect(String(decoding: body, as: UTF8.self) == expected)
    }

    @Test func headerInjectionIsNeutralised() throws {
        var writer = MultipartWriter(boundary: Array("B".utf8))
        let header = writer.partHeader(
            headers: MultipartWriter.attachmentHeaders(name: "x\"\r\nEvil: 1", contentType: "a/b\r\n\r\n", length: 0))
        let body = header + writer.closing()
        let parsed = try parseMultipart(body, boundary: "B")
        #expect(parsed.parts.count == 1 && parsed.parts[0].headers.count == 3)
        #expect(
            MultipartHeaders.filename(in: [("Content-Disposition", parsed.parts[0].header("Content-Disposition") ?? "")]
            ) == "x\"  Evil: 1")
    }

    @Test(arguments: [Feeding.whole, Feeding.byteAtATime])
    func writerOutputParsesBack(feeding: Feeding) throws {
        var writer = MultipartWriter()
        var generator = SeededGenerator(seed: 9)
        let attachment = (0..<5000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let json = Array("{\"_id\":\"x\"}".utf8)
        var body = writer.partHeader(headers: MultipartWriter.jsonPartHeaders) + json
        body += writer.partHeader(
            headers: MultipartWriter.attachmentHeaders(
                name: "é/ x.bin", contentType: "application/octet-stream", length: attachment.count))
        body += attachment + writer.closing()
        #expect(
            writer.relatedBodyLength(
                jsonLength: json.count,
                attachments: [
                    .init(name: "é/ x.bin", contentType: "application/octet-stream", length: attachment.count)
                ])
                == body.count)
        let parsed = try parseMultipart(
            body, boundary: String(decoding: writer.boundary, as: UTF8.self), feeding: feeding)
        #expect(parsed.parts.map(\.body) == [json, attachment])
        #expect(parsed.parts[1].header("Content-Length") == "5000")
    }

    /// CouchDB's own formula (`couch_httpd_multipart:length_multipart_stream`), to check that
    /// ours agrees with it.
    private func couchLength(boundary: Int, json: Int, attachments: [MultipartWriter.Attachment]) -> Int {
        var total = 2 + boundary + 36 + json + 4 + boundary + 2
        for a in attachments {
            total += 4 + String(a.length).count + a.length + 4 + boundary + a.name.utf8.count + a.contentType.utf8.count
            total += "\r\nContent-Disposition: attachment; filename=\"\"".utf8.count + "\r\nContent-Type: ".utf8.count
            total += "\r\nContent-Length: ".utf8.count
            if let e = a.encoding { total += e.count + "\r\nContent-Encoding: ".utf8.count }
        }
        return total
    }

    @Test func relatedBodyLengthAgreesWithCouchDBFormula() {
        let writer = MultipartWriter()
        let sets: [[MultipartWriter.Attachment]] = [
            [.init(name: "a.jpg", contentType: "image/jpeg", length: 50013)],
            [
                .init(name: "a.jpg", contentType: "image/jpeg", length: 1),
                .init(name: "notes.txt", contentType: "text/plain", length: 49, encoding: "gzip"),
            ],
            [.init(name: "v.mp4", contentType: "video/mp4", length: 1 << 30)],
        ]
        for attachments in sets {
            #expect(
                writer.relatedBodyLength(jsonLength: 321, attachments: attachments)
                    == couchLength(boundary: 32, json: 321, attachments: attachments))
        }
    }

    /// Rebuilds every recorded `open_revs` reply from its parsed pieces and compares bytes.
    @Test func reproducesOpenRevsRepliesByteForByte() throws {
        for exchange in try Transcripts.openRevsReplies() {
            let contentType = try #require(exchange.responseHeaders["Content-Type"])
            let (_, outerBoundary) = try MultipartBoundary.parse(contentType: contentType)
            let parsed = try parseMultipart(
                exchange.responseBody, boundary: String(decoding: outerBoundary, as: UTF8.self))
            var outer = MultipartWriter(boundary: outerBoundary)
            #expect(outer.contentType(mediaType: "multipart/mixed") == contentType)
            var rebuilt: [UInt8] = []
            for part in parsed.parts {
                let type = try #require(part.header("Content-Type"))
                rebuilt += outer.partHeader(headers: [("Content-Type", type)])
                if type == "application/json" {
                    rebuilt += part.body
                } else {
                    let (_, innerBoundary) = try MultipartBoundary.parse(contentType: type)
                    let inner = try parseMultipart(part.body, boundary: String(decoding: innerBoundary, as: UTF8.self))
                    rebuilt += try rebuildRelated(inner.parts, boundary: innerBoundary)
                }
            }
            rebuilt += outer.closing()
            #expect(rebuilt == exchange.responseBody, "\(exchange.path)")
        }
    }

    /// Rebuilds every replicator multipart PUT body and checks its Content-Length.
    @Test func reproducesReplicatorPutBodiesByteForByte() throws {
        for exchange in try Transcripts.multipartPuts() {
            let (_, boundary) = try MultipartBoundary.parse(
                contentType: try #require(exchange.requestHeaders["Content-Type"]))
            let parsed = try parseMultipart(exchange.requestBody, boundary: String(decoding: boundary, as: UTF8.self))
            let rebuilt = try rebuildRelated(parsed.parts, boundary: boundary)
            #expect(rebuilt == exchange.requestBody, "\(exchange.path)")
            #expect(String(rebuilt.count) == exchange.requestHeaders["Content-Length"])
        }
    }

    private func rebuildRelated(_ parts: [ParsedPart], boundary: [UInt8]) throws -> [UInt8] {
        var writer = MultipartWriter(boundary: boundary)
        var out = writer.partHeader(headers: MultipartWriter.jsonPartHeaders) + parts[0].body
        var attachments: [MultipartWriter.Attachment] = []
        for part in parts.dropFirst() {
            let name = try #require(
                MultipartHeaders.filename(in: [("Content-Disposition", part.header("Content-Disposition") ?? "")]))
            let attachment = MultipartWriter.Attachment(
                name: name, contentType: try #require(part.header("Content-Type")), length: part.body.count,
                encoding: part.header("Content-Encoding"))
            attachments.append(attachment)
            out += writer.partHeader(
                headers: MultipartWriter.attachmentHeaders(
                    name: name, contentType: attachment.contentType, length: attachment.length,
                    encoding: attachment.encoding))
            out += part.body
        }
        out += writer.closing()
        #expect(writer.relatedBodyLength(jsonLength: parts[0].body.count, attachments: attachments) == out.count)
        return out
    }
}
