import Testing

@testable import CouchServer
@testable import PhotoDrop
@testable import couchlite

/// The one command-line parser every subcommand uses: flags with values (`--x v`, `--x=v`), switches,
/// positional arguments, the environment under the arguments, and clear mistakes.
@Suite struct OptionTableTests {
    struct Settings: Sendable {
        var name = "default"
        var verbose = false
        var tags: [String] = []
        var rest: [String] = []
        var inner = Inner()
    }

    struct Inner: Sendable {
        var level = 0
    }

    static let innerSpec = OptionSpec<Inner>(flag: "--level", environment: "T_LEVEL", valueName: "N", help: "a level") {
        inner, text throws(OptionsError) in
        guard let level = Int(text) else { throw OptionsError("--level needs a number") }
        inner.level = level
    }

    static let table = OptionTable<Settings>(
        summary: "usage: t [options]",
        specs: [
            .init(flag: "--name", environment: "T_NAME", valueName: "NAME", help: "a name") { $0.name = $1 },
            .init(flag: "--verbose", environment: "T_VERBOSE", valueName: nil, help: "chatty") {
                s, v throws(OptionsError) in s.verbose = try OptionSpec<Settings>.boolean("--verbose", v)
            },
            .init(flag: "--tag", valueName: "TAG", help: "repeatable") { $0.tags.append($1) },
            innerSpec.lifted(\Settings.inner),
        ],
        footer: "the end")

    func parse(_ arguments: [String], _ environment: [String: String] = [:], positional: Bool = true)
        throws(OptionsError) -> Settings?
    {
        var settings = Settings()
        let done = try OptionTableTests.table.parse(
            arguments, environment: environment, into: &settings, positional: positional ? { $0.rest.append($1) } : nil
        )
        return done ? settings : nil
    }

    @Test func valuesSwitchesAndPositionalsInAnyOrder() throws {
        let s = try #require(try parse(["a", "--name", "x", "--verbose", "--tag=1", "b", "--tag", "2", "--level=7"]))
        #expect(s.name == "x" && s.verbose && s.tags == ["1", "2"] && s.rest == ["a", "b"] && s.inner.level == 7)
        #expect(try parse(["--verbose=false"])?.verbose == false)
        // A lone "-" is an argument (standard input, by convention), not an option.
        #expect(try parse(["-"])?.rest == ["-"])
    }

    @Test func argumentsWinOverTheEnvironment() throws {
        let environment = ["T_NAME": "env", "T_VERBOSE": "true", "T_LEVEL": "3"]
        let fromEnvironment = try #require(try parse([], environment))
        #expect(fromEnvironment.name == "env" && fromEnvironment.verbose && fromEnvironment.inner.level == 3)
        let fromArguments = try #require(try parse(["--name", "arg", "--level", "4"], environment))
        #expect(fromArguments.name == "arg" && fromArguments.inner.level == 4 && fromArguments.verbose)
    }

    @Test func helpStopsParsingWhereverItIs() throws {
        #expect(try parse(["--name", "x", "--help"]) == nil)
        #expect(try parse(["-h", "--no-such-flag"]) == nil)
        // As a flag's value it is just the value.
        #expect(try parse(["--name", "--help"])?.name == "--help")
    }

    @Test func mistakesSayWhatIsWrong() {
        func error(_ arguments: [String], _ environment: [String: String] = [:], positional: Bool = true) -> String {
            do {
                _ = try parse(arguments, environment, positional: positional)
                return "no error"
            } catch {
                return error.description
            }
        }
        #expect(error(["--nope"]) == "unknown option '--nope'")
        #expect(error(["--name"]) == "--name needs a value")
        #expect(error(["--verbose=maybe"]) == "--verbose takes no value (or true/false)")
        #expect(error(["--level", "x"]) == "--level needs a number")
        #expect(error([], ["T_LEVEL": "x"]) == "--level needs a number")
        #expect(error(["stray"], positional: false) == "unexpected argument 'stray'")
        #expect(error(["--name=x=y"]) == "no error")
    }

    @Test func usageListsEveryOptionWithItsVariable() {
        let usage = OptionTableTests.table.usage
        #expect(usage.hasPrefix("usage: t [options]\n\noptions:\n"))
        #expect(usage.contains("  --name NAME") && usage.contains("a name [$T_NAME]"))
        #expect(usage.contains("  --verbose ") && usage.contains("chatty [$T_VERBOSE]"))
        #expect(usage.contains("repeatable\n") && usage.contains("a level [$T_LEVEL]"))
        #expect(usage.hasSuffix("show this help\n\nthe end"))
    }

    /// What a subcommand's entry wrote.
    final class Written {
        var help: [String] = []
        var mistakes: [String] = []
        var output: CommandOutput {
            CommandOutput(help: { self.help.append($0) }, mistake: { self.mistakes.append("\($0)|\($1)") })
        }
    }

    func enter(
        _ arguments: [String], _ written: Written, check: (inout Settings) throws(OptionsError) -> Void = { _ in }
    )
        -> CommandEntry<Settings>
    {
        OptionTableTests.table.enter(
            arguments, environment: ["T_NAME": "env"], into: Settings(), positional: { $0.rest.append($1) },
            check: check, output: written.output)
    }

    @Test func entryRunsWithTheCheckedSettings() {
        let written = Written()
        let entry = enter(["a", "--level=2"], written) { s throws(OptionsError) in s.tags.append("checked") }
        guard case .run(let s) = entry else {
            Issue.record("no run: \(entry)")
            return
        }
        #expect(s.name == "env" && s.rest == ["a"] && s.inner.level == 2 && s.tags == ["checked"])
        #expect(written.help.isEmpty && written.mistakes.isEmpty)
    }

    @Test func entryHelpPrintsTheUsageAndExitsZero() {
        let written = Written()
        guard case .exit(0) = enter(["--help", "--nope-is-not-read"], written) else {
            Issue.record("--help did not exit 0")
            return
        }
        #expect(written.help == [OptionTableTests.table.usage] && written.mistakes.isEmpty)
    }

    @Test func entryMistakesPrintTheMessageAndUsageAndExit64() {
        let usage = OptionTableTests.table.usage
        let written = Written()
        guard case .exit(64) = enter(["--nope"], written) else {
            Issue.record("a bad option did not exit 64")
            return
        }
        // A failed check is a usage mistake as well.
        let check: (inout Settings) throws(OptionsError) -> Void = { s throws(OptionsError) in
            guard s.rest.count == 2 else { throw OptionsError("t needs two arguments") }
        }
        guard case .exit(64) = enter(["one"], written, check: check) else {
            Issue.record("a failed check did not exit 64")
            return
        }
        #expect(written.mistakes == ["unknown option '--nope'|\(usage)", "t needs two arguments|\(usage)"])
        #expect(written.help.isEmpty)
    }

    @Test func longHelpWrapsBetweenWordsAndLongFlagsGetTheirOwnLine() {
        let words = Array(repeating: "word", count: 40).joined(separator: " ")
        let rows = OptionTable<Settings>.row("  --short N", words + " [$T_VARIABLE]")
        #expect(rows.count > 1 && rows.allSatisfy { $0.count <= OptionTable<Settings>.width })
        #expect(rows[0].hasPrefix("  --short N   ") && rows[0].dropFirst(30).hasPrefix("word"))
        #expect(rows.dropFirst().allSatisfy { $0.prefix(30).allSatisfy { $0 == " " } && $0.dropFirst(30).first != " " })
        #expect(rows.last?.hasSuffix("[$T_VARIABLE]") == true)
        // Nothing is lost or reordered: the words read back as given.
        let text = rows.map { $0.dropFirst(30) }.joined(separator: " ")
        #expect(text == words + " [$T_VARIABLE]")

        let long = OptionTable<Settings>.row("  --a-very-long-option-name BOOL", "short help")
        #expect(long == ["  --a-very-long-option-name BOOL", String(repeating: " ", count: 30) + "short help"])
        // One word longer than the room left is kept whole on its own line rather than cut.
        let huge = String(repeating: "x", count: 90)
        #expect(
            OptionTable<Settings>.row("  --x", "a " + huge) == [
                "  --x" + String(repeating: " ", count: 25) + "a",
                String(repeating: " ", count: 30) + huge,
            ])
    }
}
