import Synchronization

/// The page cache the writers of a store's open databases share, split by the size of each database.
///
/// A writer is a database's one long-lived connection and nothing resets its cache (readers drop theirs whenever
/// another connection committed), so it keeps every page it wrote up to its `cache_size`. With a cap per writer
/// alone the writers' caches grew with every database's size, up to the open-database bound times that cap. Here
/// they share one budget: each writer's part is the budget times its database's share of the open databases'
/// pages, at least ``minimumKiB``. A database alone gets all of it; twenty alike get a twentieth each; a large
/// database beside small ones (`_users`, `_replicator`) keeps most of it. A writer reports its file's pages after
/// each commit and reads its part before the next, when lowering `cache_size` frees the pages over it.
///
/// Why the budget is small and the floor not tiny (bench/HISTORY.md, "Soak, eighth session"): in the store benchmark
/// (100,000 documents) writes were as fast with 512 KiB per writer as with 16 MiB, and reads as fast with 2 MiB,
/// but `_changes` and `_all_docs` ran at 0.75-0.85x after writes through a 512 KiB writer cache.
public final class WriterCacheBudget: Sendable {
    /// The default budget, KiB.
    public static let defaultKiB = 8 * 1024
    /// The least a writer gets however many databases are open, KiB.
    public static let minimumKiB = 256

    /// The whole budget, KiB.
    public let kib: Int
    /// Pages of the open databases' files, as their writers last reported them.
    private let pages = Atomic<Int>(0)

    init(kib: Int = WriterCacheBudget.defaultKiB) {
        self.kib = max(WriterCacheBudget.minimumKiB, kib)
    }

    /// The part, in KiB, of a writer whose database has `pages` pages (as it last reported).
    func share(ofPages pages: Int) -> Int {
        let total = max(pages, self.pages.load(ordering: .relaxed))
        guard total > 0 else { return kib }
        let part = Int((Double(kib) * Double(pages) / Double(total)).rounded(.down))
        return max(WriterCacheBudget.minimumKiB, part)
    }

    /// A writer's database went from `old` to `new` pages (0 when it closes).
    func resized(from old: Int, to new: Int) {
        if new != old { pages.add(new - old, ordering: .relaxed) }
    }

    /// Pages of the open databases' files.
    var totalPages: Int { pages.load(ordering: .relaxed) }
}
