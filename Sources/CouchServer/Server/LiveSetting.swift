import Synchronization

/// An integer limit a server admin may change while the server runs (`PUT /_node/_local/_config/…`): the next
/// request reads the new value. One per process, as the server is (the limits are read from static contexts all
/// over the handlers); `initial` is what `DELETE` of the key goes back to.
package final class LiveInt: Sendable {
    private let stored: Atomic<Int>
    /// The built-in value.
    let initial: Int

    init(_ initial: Int) {
        self.initial = initial
        stored = Atomic(initial)
    }

    /// The value now.
    var value: Int { stored.load(ordering: .relaxed) }

    /// Sets a new value for every later request.
    func set(_ value: Int) { stored.store(value, ordering: .relaxed) }
}

/// Any other value a `_config` setting keeps while the server runs (CORS's switch and origin list).
final class LiveValue<Value: Sendable>: Sendable {
    private let stored: Mutex<Value>

    init(_ value: Value) { stored = Mutex(value) }

    var value: Value {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}
