import Testing

@testable import CouchServer
@testable import PhotoDrop
@testable import couchlite

@Suite struct ReceiveOptionsTests {
    @Test func defaults() throws {
        let options = try #require(try ReceiveOptions.parse(arguments: [], environment: [:]))
        #expect(options.out == "./PhotoDrop" && options.database == "photodrop" && options.server.port == 5984)
        #expect(options.bind == nil && options.ttl == .seconds(900) && !options.once && !options.json)
        #expect(options.qrPNG == nil)
    }

    @Test func flagsWinOverTheEnvironment() throws {
        let environment = ["COUCHLITE_RECEIVE_OUT": "/env", "COUCHLITE_PORT": "7000", "COUCHLITE_RECEIVE_ONCE": "true"]
        let options = try #require(
            try ReceiveOptions.parse(
                arguments: ["--out=/arg", "--port", "0", "--json", "--ttl", "1h30m", "--db", "drop-1"],
                environment: environment))
        #expect(options.out == "/arg" && options.server.port == 0 && options.once && options.json)
        #expect(options.ttl == .seconds(5400) && options.database == "drop-1")
    }

    @Test func helpIsNil() throws {
        #expect(try ReceiveOptions.parse(arguments: ["--out", "x", "--help"], environment: [:]) == nil)
    }

    @Test(arguments: [
        ["--nope"], ["--ttl", "0"], ["--ttl", "-5m"], ["--ttl", "5x"], ["--ttl", "m"], ["--db", "_users"],
        ["--db", "Caps"], ["--out"], ["--port", "-1"], ["--once=maybe"], ["--bind", ""],
        ["--ttl", "99999999999999999999d"],
    ])
    func badFlagsThrow(arguments: [String]) {
        #expect(throws: OptionsError.self) { try ReceiveOptions.parse(arguments: arguments, environment: [:]) }
    }

    @Test func durations() {
        #expect(ReceiveOptions.parseDuration("90") == 90)
        #expect(ReceiveOptions.parseDuration("90s") == 90)
        #expect(ReceiveOptions.parseDuration("15m") == 900)
        #expect(ReceiveOptions.parseDuration("2h") == 7200)
        #expect(ReceiveOptions.parseDuration("1d2h3m4s") == 93784)
        #expect(ReceiveOptions.parseDuration("") == nil)
        #expect(ReceiveOptions.parseDuration("1h30") == nil)
        #expect(ReceiveOptions.parseDuration("1.5h") == nil)
        #expect(ReceiveOptions.parseDuration("9223372036854775807d") == nil)
    }
}
