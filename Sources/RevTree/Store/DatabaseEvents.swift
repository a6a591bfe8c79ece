import Synchronization

/// What happened to a database, as `_db_updates` reports it.
public enum DatabaseEvent: String, Sendable {
    case created, updated, deleted
}

/// Who hears of a store's database events (`Store.observe(_:)`): one observer, called on the thread that made the
/// event (a write's after its commit), so it must be quick and must not call back into the store.
final class DatabaseEventObserver: Sendable {
    private let observer = Mutex<(@Sendable (String, DatabaseEvent) -> Void)?>(nil)

    func set(_ body: @escaping @Sendable (String, DatabaseEvent) -> Void) { observer.withLock { $0 = body } }

    func notify(_ name: String, _ event: DatabaseEvent) {
        observer.withLock { $0 }?(name, event)
    }
}
