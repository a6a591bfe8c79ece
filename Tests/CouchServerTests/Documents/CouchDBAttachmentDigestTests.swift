import Testing

@testable import CouchServer

/// Which attachments CouchDB 3.4.3 stores gzipped (and so hashes by the md5 of its gzip): the default
/// `compressible_types`, matched as `couch_db:compressible_att_type/1` matches them (whole type, any case,
/// parameters and blanks allowed around it).
@Suite struct CouchDBAttachmentDigestTests {
    @Test(arguments: [
        "text/plain", "text/html", "TEXT/HTML", "text/", "text/plain; charset=utf-8", " text/csv ",
        "application/json", "application/json;charset=utf-8", "Application/JavaScript", "application/xml",
    ])
    func compressible(type: String) {
        #expect(CouchDBAttachmentDigest.isCompressible(type))
    }

    @Test(arguments: [
        "image/jpeg", "video/mp4", "application/octet-stream", "application/jsonx", "application/json-patch",
        "xtext/plain", "application/xhtml+xml", "", ";text/plain", "application/ json",
    ])
    func notCompressible(type: String) {
        #expect(!CouchDBAttachmentDigest.isCompressible(type))
    }
}
