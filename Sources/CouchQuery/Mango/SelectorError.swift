import CouchWire

/// Why a Mango selector was refused: CouchDB's `error` name (`bad_arg`, `invalid_operator`, …) and `reason`,
/// both meant for a 400 body.
public struct SelectorError: Error, CustomStringConvertible, Equatable {
    /// CouchDB's error name (`mango_error:info/2`); `bad_request` for refusals CouchDB has no name for.
    public var error: String
    /// Human-readable cause, worded like CouchDB's (e.g. "Invalid operator: $foo").
    public var reason: String
    /// The HTTP status: 400, or 503 when the server has no room for the selector's `$regex` programs now.
    public var status: Int

    public init(error: String = "bad_request", reason: String, status: Int = 400) {
        self.error = error
        self.reason = reason
        self.status = status
    }

    public var description: String { reason }

    static func badArgument(_ operator: String, _ argument: JSON) -> SelectorError {
        SelectorError(
            error: "bad_arg", reason: "Bad argument for operator \(`operator`): \(ErlangText.format(argument))")
    }

    static func invalidOperator(_ operator: String) -> SelectorError {
        SelectorError(error: "invalid_operator", reason: "Invalid operator: \(`operator`)")
    }

    static func notSupported(_ operator: String) -> SelectorError {
        SelectorError(error: "not_supported", reason: "Unsupported operator: \(`operator`)")
    }

    static func badField(_ selector: JSON) -> SelectorError {
        SelectorError(
            error: "bad_field", reason: "Invalid field normalization on selector: \(ErlangText.format(selector))")
    }

    static let missingFieldName = SelectorError(
        error: "invalid_selector", reason: "One or more conditions is missing a field name.")

    static let tooDeep = SelectorError(reason: "Selector is nested too deeply")

    static let regexesTooLarge = SelectorError(
        reason: "The selector's $regex patterns compile to more than \(Selector.maxRegexBytes >> 20) MiB")

    static let regexMemoryFull = SelectorError(
        error: "service_unavailable",
        reason: "The server has too many $regex patterns compiled at once; retry later", status: 503)
}
