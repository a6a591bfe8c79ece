import Callbacks

/// What happened to a database, as `_db_updates` reports it.
public enum DatabaseEvent: String, Sendable {
    case created, updated, deleted
}

/// Who hears of a store's database events (`Store.observe(_:)`): one observer, called on the thread that made the
/// event (a write's after its commit), so it must be quick and must not call back into the store.
final class DatabaseEventObserver: Sendable {
    private let observer = CallbackSlot<(String, DatabaseEvent)>()

    func set(_ body: @escaping @Sendable (String, DatabaseEvent) -> Void) { observer.set { body($0.0, $0.1) } }

    func notify(_ name: String, _ event: DatabaseEvent) { observer((name, event)) }
}
