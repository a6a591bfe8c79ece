import CouchWire
import Testing

@testable import CouchServer
@testable import PhotoDrop

@Suite struct PhotoTimestampTests {
    static func seconds(_ json: String) throws -> Double? {
        guard case .object(let object) = try JSON.parse(json) else { return nil }
        return PhotoTimestamp.seconds(in: object)
    }

    @Test func fieldsInOrder() throws {
        #expect(try Self.seconds(#"{"taken":"2024-06-01T10:00:00Z","mtime":5,"date":6}"#) == 1_717_236_000)
        #expect(try Self.seconds(#"{"mtime":1700000000,"date":6}"#) == 1_700_000_000)
        #expect(try Self.seconds(#"{"date":1700000000123}"#) == 1_700_000_000.123)
        #expect(try Self.seconds(#"{"taken":"nonsense","mtime":42}"#) == 42)
        #expect(try Self.seconds(#"{}"#) == nil)
    }

    @Test func stringFormats() {
        #expect(PhotoTimestamp.parse("2024-06-01T10:00:00.250Z") == 1_717_236_000.25)
        #expect(PhotoTimestamp.parse("2024-06-01T12:00:00+02:00") == 1_717_236_000)
        #expect(PhotoTimestamp.parse("2024:06:01 10:00:00") == 1_717_236_000)
        #expect(PhotoTimestamp.parse("2024-06-01") == 1_717_200_000)
        #expect(PhotoTimestamp.parse("yesterday") == nil)
        #expect(PhotoTimestamp.parse(String(repeating: "2", count: 100)) == nil)
    }

    @Test func unusableTimesAreIgnored() throws {
        #expect(try Self.seconds(#"{"taken":-5}"#) == nil)
        #expect(try Self.seconds(#"{"taken":1e300}"#) == nil)
        #expect(try Self.seconds(#"{"taken":true,"date":[1]}"#) == nil)
        #expect(try Self.seconds(#"{"taken":"1969-12-31T23:59:59Z"}"#) == nil)
    }
}
