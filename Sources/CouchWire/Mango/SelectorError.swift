/// Why a Mango selector was refused; `reason` is meant for a 400 `bad_request` body.
public struct SelectorError: Error, CustomStringConvertible, Equatable {
    /// Human-readable cause, worded like CouchDB's where there is an equivalent (e.g. "Invalid operator: $regex").
    public var reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
