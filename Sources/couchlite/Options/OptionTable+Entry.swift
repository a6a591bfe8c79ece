import CouchServer
import Foundation
import PhotoDrop

/// Where a subcommand's entry writes: `--help` on standard output, a mistake on standard error (tests collect
/// them instead).
struct CommandOutput {
    var help: (String) -> Void
    /// The mistake's message and the usage.
    var mistake: (String, String) -> Void

    static var standard: CommandOutput {
        CommandOutput(help: { print($0) }, mistake: { Commands.printUsageError($0, usage: $1) })
    }
}

/// How a subcommand's command line ends: the settings to run with, or the exit status to return at once.
enum CommandEntry<Value> {
    case run(Value)
    case exit(Int32)
}

extension OptionTable {
    /// The start every subcommand shares: parses the environment and the arguments into `value` (see `parse`),
    /// then `check`s the result (positional arguments, flags that need one another). `--help` prints the usage
    /// and ends with 0; a mistake prints `couchlite: MESSAGE`, a blank line and the usage on standard error and
    /// ends with 64 (EX_USAGE).
    func enter(
        _ arguments: [String], environment: [String: String], into value: Value,
        positional: ((inout Value, String) throws(OptionsError) -> Void)? = nil,
        check: (inout Value) throws(OptionsError) -> Void = { _ in }, output: CommandOutput = .standard
    ) -> CommandEntry<Value> {
        var value = value
        do throws(OptionsError) {
            guard try parse(arguments, environment: environment, into: &value, positional: positional) else {
                output.help(usage)
                return .exit(0)
            }
            try check(&value)
            return .run(value)
        } catch {
            output.mistake(error.description, usage)
            return .exit(64)
        }
    }
}
