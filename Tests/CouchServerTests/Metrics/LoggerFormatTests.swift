import CouchWire
import Testing

@testable import CouchServer

/// `--log-format`: today's text lines, or one JSON object per line.
@Suite struct LoggerFormatTests {
    let access: [(String, String)] = [
        ("client", "127.0.0.1"), ("method", "GET"), ("path", "/db/doc?x=\"1\"\n"), ("status", "200"),
        ("bytes", "57"), ("ms", "0.4"),
    ]

    @Test func textIsUnchanged() {
        let line = Logger.line(
            .text, time: "2026-12-01T12:00:00.000Z", level: .info, label: "couchlite", message: "request",
            metadata: [("method", "GET"), ("status", "200")])
        #expect(line == "2026-12-01T12:00:00.000Z [info] couchlite: request method=GET status=200\n")
    }

    @Test func jsonIsOneObjectPerLineWithTheRequestFields() throws {
        let line = Logger.line(
            .json, time: "2026-12-01T12:00:00.000Z", level: .info, label: "couchlite", message: "request",
            metadata: access)
        #expect(line.hasSuffix("\n"))
        #expect(line.dropLast().contains("\n") == false)
        let object = try #require(try JSON.parse(Array(line.utf8.dropLast())).objectValue)
        #expect(object["time"] == "2026-12-01T12:00:00.000Z")
        #expect(object["level"] == "info")
        #expect(object["message"] == "request")
        #expect(object["method"] == "GET")
        #expect(object["path"] == .string("/db/doc?x=\"1\"\n"))
        #expect(object["status"] == .int(200))
        #expect(object["bytes"] == .int(57))
        #expect(object["ms"]?.numberValue?.text == "0.4")
    }

    @Test func metadataCannotForgeTheFixedFields() throws {
        let line = Logger.line(
            .json, time: "t", level: .error, label: "couchlite", message: "real",
            metadata: [("message", "forged"), ("level", "debug"), ("status", "not a number")])
        let object = try #require(try JSON.parse(Array(line.utf8.dropLast())).objectValue)
        #expect(object["message"] == "real")
        #expect(object["level"] == "error")
        #expect(object["meta_message"] == "forged")
        #expect(object["meta_level"] == "debug")
        #expect(object["status"] == "not a number")
    }
}
