import Synchronization

/// Bytes held by the SQLite page caches of every open database's writer and idle readers, as each connection last
/// measured its own (`SQLITE_DBSTATUS_CACHE_USED`): a writer after each group commit, a reader when it returns to
/// its pool. A connection reads its own figure on its own thread, since SQLite's per-connection status is not
/// safe to read while another thread uses the connection.
///
/// For operators (`_node/_local/_system`, `memory.page_cache_writers` and `page_cache_readers`) and for the soak,
/// which samples it to tell the page caches from the rest of the heap.
public final class PageCacheGauge: Sendable {
    private let writerBytes = Atomic<Int>(0)
    private let readerBytes = Atomic<Int>(0)

    init() {}

    /// The writers' caches, bytes.
    public var writers: Int { writerBytes.load(ordering: .relaxed) }
    /// The idle readers' caches, bytes (a reader in use counts again once it is back in its pool).
    public var readers: Int { readerBytes.load(ordering: .relaxed) }

    /// One writer's cache went from `old` to `new` bytes.
    func writer(from old: Int, to new: Int) {
        if new != old { writerBytes.add(new - old, ordering: .relaxed) }
    }

    /// An idle reader holding `bytes` joined (positive) or left (negative) its pool.
    func reader(_ bytes: Int) {
        if bytes != 0 { readerBytes.add(bytes, ordering: .relaxed) }
    }
}
