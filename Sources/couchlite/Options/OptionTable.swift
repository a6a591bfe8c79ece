import CouchServer
import Foundation
import PhotoDrop

/// One option of a subcommand: its flag, environment variable, help line, and how a value changes the
/// subcommand's settings.
struct OptionSpec<Value>: Sendable {
    let flag: String
    /// The `COUCHLITE_*` variable that sets it too; nil when only the flag does.
    let environment: String?
    /// nil for a switch: `--flag` alone means `true` (`--flag=false` is allowed).
    let valueName: String?
    let help: String
    let apply: @Sendable (inout Value, String) throws(OptionsError) -> Void

    init(
        flag: String, environment: String? = nil, valueName: String?, help: String,
        apply: @escaping @Sendable (inout Value, String) throws(OptionsError) -> Void
    ) {
        self.flag = flag
        self.environment = environment
        self.valueName = valueName
        self.help = help
        self.apply = apply
    }

    /// The same option setting a part of a larger value (`receive` embeds every server option of `serve`).
    func lifted<Outer>(_ part: any WritableKeyPath<Outer, Value> & Sendable, help: String? = nil) -> OptionSpec<Outer> {
        let apply = self.apply
        return OptionSpec<Outer>(
            flag: flag, environment: environment, valueName: valueName, help: help ?? self.help
        ) { outer, text throws(OptionsError) in try apply(&outer[keyPath: part], text) }
    }

    /// A switch's value: absent or `true`/`false`.
    static func boolean(_ flag: String, _ text: String) throws(OptionsError) -> Bool {
        guard let value = Bool(text) else { throw OptionsError("\(flag) takes no value (or true/false)") }
        return value
    }
}

/// A subcommand's command line, made from one table of `OptionSpec`s: the parser, the environment lookup
/// and `--help` come from the same rows, so they can never disagree (swift-argument-parser's shape, without
/// the package).
struct OptionTable<Value>: Sendable {
    /// The usage text above the options: the synopsis and what the command does.
    let summary: String
    let specs: [OptionSpec<Value>]
    /// Text below the options (exit statuses, notes); empty for none.
    var footer = ""

    /// Where each option's help starts, and how wide the text may get (an 80-column terminal with room to spare
    /// would cut the longer helps anywhere; these break them between words instead).
    static var helpColumn: Int { 30 }
    static var width: Int { 100 }

    var usage: String {
        var lines = [summary, "", "options:"]
        for spec in specs {
            let left = "  \(spec.flag)" + (spec.valueName.map { " \($0)" } ?? "")
            let environment = spec.environment.map { " [$\($0)]" } ?? ""
            lines += Self.row(left, spec.help + environment)
        }
        lines += Self.row("  --help", "show this help")
        if !footer.isEmpty { lines += ["", footer] }
        return lines.joined(separator: "\n")
    }

    /// `left` with `text` beside it from `helpColumn` on, wrapped between words to `width`; a `left` too long
    /// for the column gets a line of its own.
    static func row(_ left: String, _ text: String) -> [String] {
        let indent = String(repeating: " ", count: helpColumn)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && helpColumn + line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        lines.append(line)
        var rows = lines.map { indent + $0 }
        if left.count + 2 <= helpColumn {
            rows[0] = left.padding(toLength: helpColumn, withPad: " ", startingAt: 0) + lines[0]
        } else {
            rows.insert(left, at: 0)
        }
        return rows
    }

    /// Applies the environment first, then the arguments, which win. Arguments that are not options go to
    /// `positional`; without it they are a usage error.
    /// - Returns: false when `--help` was asked for (nothing else is checked then).
    func parse(
        _ arguments: [String], environment: [String: String], into value: inout Value,
        positional: ((inout Value, String) throws(OptionsError) -> Void)? = nil
    ) throws(OptionsError) -> Bool {
        for spec in specs {
            if let name = spec.environment, let text = environment[name] { try spec.apply(&value, text) }
        }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--help" || argument == "-h" { return false }
            guard argument.hasPrefix("-") && argument.count > 1 else {
                guard let positional else { throw OptionsError("unexpected argument '\(argument)'") }
                try positional(&value, argument)
                continue
            }
            var name = argument
            var text: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                text = String(argument[argument.index(after: equals)...])
            }
            guard let spec = specs.first(where: { $0.flag == name }) else {
                throw OptionsError("unknown option '\(argument)'")
            }
            if spec.valueName == nil {
                try spec.apply(&value, text ?? "true")
                continue
            }
            if text == nil {
                guard index < arguments.count else { throw OptionsError("\(name) needs a value") }
                text = arguments[index]
                index += 1
            }
            try spec.apply(&value, text ?? "")
        }
        return true
    }
}
