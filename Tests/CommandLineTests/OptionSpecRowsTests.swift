import Testing

@testable import CouchServer
@testable import PhotoDrop
@testable import couchlite

/// The row shapes of the option tables (`OptionSpec.text`, `.integer`, `.choice`, `.toggle`): each accepts what
/// it should, refuses the rest with one message naming the flag and what it wants, and leaves the settings alone
/// when it refuses.
@Suite struct OptionSpecRowsTests {
    enum Colour: String, Sendable { case red, green }

    struct Settings: Sendable {
        var dir = "unset"
        var count = -1
        var port = -1
        var colour = Colour.red
        var on = false
    }

    typealias Spec = OptionSpec<Settings>

    static let table = OptionTable<Settings>(
        summary: "usage: rows",
        specs: [
            .text("--dir", environment: "R_DIR", valueName: "DIR", help: "a folder", needs: "a directory") {
                $0.dir = $1
            },
            .integer("--count", help: "how many", in: 1...Int.max) { $0.count = $1 },
            .integer("--port", valueName: "PORT", help: "a port", in: 0...65535) { $0.port = $1 },
            .choice("--colour", valueName: "C", help: "red or green", of: "red or green") { $0.colour = $1 },
            .toggle("--on", environment: "R_ON", help: "a switch") { $0.on = $1 },
        ])

    func parse(_ arguments: [String], _ environment: [String: String] = [:]) -> Result<Settings, OptionsError> {
        var settings = Settings()
        do throws(OptionsError) {
            _ = try OptionSpecRowsTests.table.parse(arguments, environment: environment, into: &settings)
            return .success(settings)
        } catch {
            return .failure(error)
        }
    }

    func message(_ arguments: [String], _ environment: [String: String] = [:]) -> String {
        switch parse(arguments, environment) {
        case .success: "no error"
        case .failure(let error): error.description
        }
    }

    @Test func goodValuesAreSet() throws {
        let s = try parse(["--dir", "d", "--count", "3", "--port=0", "--colour", "green", "--on"]).get()
        #expect(s.dir == "d" && s.count == 3 && s.port == 0 && s.colour == .green && s.on)
        #expect(try parse(["--port", "65535", "--on=false"], ["R_ON": "true"]).get().port == 65535)
        #expect(try parse([], ["R_ON": "true", "R_DIR": "e"]).get().on)
        #expect(try parse(["--on=false"], ["R_ON": "true"]).get().on == false)
    }

    @Test func emptyTextIsRefusedNamingWhatIsNeeded() {
        #expect(message(["--dir", ""]) == "--dir needs a directory")
        #expect(message(["--dir="]) == "--dir needs a directory")
        #expect(message([], ["R_DIR": ""]) == "--dir needs a directory")
    }

    @Test func numbersOutsideTheirRangeOrNotNumbersAreRefused() {
        #expect(message(["--count", "0"]) == "--count must be a positive integer, got '0'")
        #expect(message(["--count", "-5"]) == "--count must be a positive integer, got '-5'")
        #expect(message(["--count", "1.5"]) == "--count must be a positive integer, got '1.5'")
        #expect(message(["--count", " 2"]) == "--count must be a positive integer, got ' 2'")
        #expect(message(["--count", "99999999999999999999999"]).hasPrefix("--count must be a positive integer"))
        #expect(message(["--port", "65536"]) == "--port must be 0...65535, got '65536'")
        #expect(message(["--port", "x"]) == "--port must be 0...65535, got 'x'")
    }

    @Test func unknownWordsAndSwitchValuesAreRefused() {
        #expect(message(["--colour", "Red"]) == "--colour must be red or green, got 'Red'")
        #expect(message(["--colour", ""]) == "--colour must be red or green, got ''")
        #expect(message(["--on=yes"]) == "--on takes no value (or true/false)")
        #expect(message([], ["R_ON": "1"]) == "--on takes no value (or true/false)")
    }

    @Test func rangesReadAsWords() {
        #expect(Spec.describe(1...Int.max) == "a positive integer")
        #expect(Spec.describe(0...Int.max) == "a non-negative integer")
        #expect(Spec.describe(8...16384) == "8...16384")
    }

    @Test func theServerTableRefusesWithTheSameShapes() {
        #expect(refusal(["--max-dbs-open", "0"]) == "--max-dbs-open must be a positive integer, got '0'")
        #expect(refusal(["--max-connections-per-address", "-1"]).contains("a non-negative integer"))
        #expect(refusal(["--js-workers", "999"]) == "--js-workers must be 1...256, got '999'")
        #expect(refusal(["--log-format", "xml"]) == "--log-format must be text or json, got 'xml'")
        #expect(refusal(["--data-dir", ""]) == "--data-dir needs a directory")
        #expect(refusal(["--max-connections-per-address", "0"]) == "no error")
        // A zero first pause would retry a crashed replication at once, for ever.
        #expect(refusal(["--replicator-retry", "0"]) == "--replicator-retry must be 1...3600, got '0'")
    }

    @Test func theReplicatorRetryIsCouchDBsThirtySecondsUnlessSet() throws {
        #expect(try #require(try Options.parse(arguments: [], environment: [:])).replicatorRetrySeconds == 30)
        let set = try #require(try Options.parse(arguments: [], environment: ["COUCHLITE_REPLICATOR_RETRY": "2"]))
        #expect(set.replicatorRetrySeconds == 2)
    }

    @Test func theSchedulerLimitsAreCouchDBsUnlessSet() throws {
        let defaults = try #require(try Options.parse(arguments: [], environment: [:]))
        #expect(defaults.replicatorMaxJobs == 500)
        #expect(defaults.replicatorIntervalMilliseconds == 60_000)
        #expect(defaults.replicatorMaxChurn == 20)
        let set = try #require(
            try Options.parse(
                arguments: [
                    "--replicator-max-jobs", "0", "--replicator-interval", "250", "--replicator-max-churn", "0",
                ],
                environment: ["COUCHLITE_REPLICATOR_MAX_JOBS": "7"]))
        #expect(set.replicatorMaxJobs == 0 && set.replicatorIntervalMilliseconds == 250 && set.replicatorMaxChurn == 0)
        let env = try #require(try Options.parse(arguments: [], environment: ["COUCHLITE_REPLICATOR_MAX_JOBS": "7"]))
        #expect(env.replicatorMaxJobs == 7)
        // A zero interval would make the scheduler's timer spin; a negative limit means nothing.
        #expect(refusal(["--replicator-interval", "0"]) == "--replicator-interval must be 1...86400000, got '0'")
        #expect(refusal(["--replicator-max-jobs", "-1"]) == "--replicator-max-jobs must be 0...1000000, got '-1'")
        #expect(refusal(["--replicator-max-churn", "x"]) == "--replicator-max-churn must be 0...1000000, got 'x'")
    }
}

/// What `Options.parse` says of `arguments`: its refusal, or "no error".
private func refusal(_ arguments: [String]) -> String {
    do throws(OptionsError) {
        _ = try Options.parse(arguments: arguments, environment: [:])
        return "no error"
    } catch {
        return error.description
    }
}
