import CouchServer
import PhotoDrop

/// The shapes most option rows have, so a table says what an option is (a directory, a positive number, one of
/// a few words, a switch) and the check and its message are written once.
extension OptionSpec {
    /// A value that may not be empty: `--data-dir needs a directory`.
    static func text(
        _ flag: String, environment: String? = nil, valueName: String, help: String, needs what: String,
        _ set: @escaping @Sendable (inout Value, String) -> Void
    ) -> OptionSpec {
        OptionSpec(flag: flag, environment: environment, valueName: valueName, help: help) {
            value, text throws(OptionsError) in
            guard !text.isEmpty else { throw OptionsError("\(flag) needs \(what)") }
            set(&value, text)
        }
    }

    /// A whole number in `range`: `--max-connections must be a positive integer, got '0'`, `--js-workers must be 1...256`.
    static func integer(
        _ flag: String, environment: String? = nil, valueName: String = "N", help: String, in range: ClosedRange<Int>,
        _ set: @escaping @Sendable (inout Value, Int) -> Void
    ) -> OptionSpec {
        OptionSpec(flag: flag, environment: environment, valueName: valueName, help: help) {
            value, text throws(OptionsError) in
            guard let number = Int(text), range.contains(number) else {
                throw OptionsError("\(flag) must be \(describe(range)), got '\(text)'")
            }
            set(&value, number)
        }
    }

    /// One of the raw values of `Choice`: `--log-format must be text or json`.
    static func choice<Choice: RawRepresentable<String> & Sendable>(
        _ flag: String, environment: String? = nil, valueName: String, help: String, of words: String,
        _ set: @escaping @Sendable (inout Value, Choice) -> Void
    ) -> OptionSpec {
        OptionSpec(flag: flag, environment: environment, valueName: valueName, help: help) {
            value, text throws(OptionsError) in
            guard let choice = Choice(rawValue: text) else {
                throw OptionsError("\(flag) must be \(words), got '\(text)'")
            }
            set(&value, choice)
        }
    }

    /// A switch: `--once` alone is true, `--once=false` (or the variable set to false) turns it off.
    static func toggle(
        _ flag: String, environment: String? = nil, help: String, _ set: @escaping @Sendable (inout Value, Bool) -> Void
    ) -> OptionSpec {
        OptionSpec(flag: flag, environment: environment, valueName: nil, help: help) {
            value, text throws(OptionsError) in
            set(&value, try boolean(flag, text))
        }
    }

    /// How a range reads in a message: "a positive integer", "a non-negative integer", or "10...3600000".
    static func describe(_ range: ClosedRange<Int>) -> String {
        switch (range.lowerBound, range.upperBound) {
        case (1, Int.max): "a positive integer"
        case (0, Int.max): "a non-negative integer"
        case (let low, let high): "\(low)...\(high)"
        }
    }
}
