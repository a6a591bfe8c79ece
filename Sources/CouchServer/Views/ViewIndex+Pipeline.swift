import CouchQuery
import CouchStore
import CouchWire
import Dispatch
import Foundation
import Synchronization

/// The updater's two stages: a thread reads and maps page N+1 (the JavaScript runs in the workers) while the
/// caller writes page N into the index, so the writes and the mapping overlap instead of taking turns.
extension ViewIndex {
    typealias PageUpdate = (docID: String, emits: [ViewEmit], fresh: Bool)

    /// Maps every change after the index's seq and writes them page by page (`chunks`: kept up to date as they go).
    func mapAndWrite(_ database: Database, engine: any ViewEngine, fresh: Int, chunks: ViewChunkReductions?) throws {
        let pipe = PagePipe()
        let start = file.updateSeq
        let group = group
        Thread.detachNewThread {
            defer { pipe.done.signal() }
            var since = start
            do {
                while !pipe.cancelled {
                    let page = try database.winnerChanges(since: since, limit: ViewIndex.batchSize)
                    guard let last = page.last else { break }
                    let updates = try ViewIndex.map(page, group, fresh: fresh, engine: engine)
                    guard pipe.put(.page(updates, seq: last.change.seq)) else { return }
                    since = last.change.seq
                    if page.count < ViewIndex.batchSize { break }
                }
                _ = pipe.put(.end)
            } catch {
                _ = pipe.put(.failed(error))
            }
        }
        // The reader is waited for whatever happens here, so no mapping outlives this update.
        defer {
            pipe.cancel()
            pipe.done.wait()
        }
        while true {
            switch pipe.take() {
            case .page(let updates, let seq): try file.apply(updates, seq: seq, chunks: chunks)
            case .end: return
            case .failed(let error): throw error
            }
        }
    }

    /// One page's rows: each changed document's emits (none for a deleted or unmapped one), keys with their
    /// collation bytes and JSON text.
    static func map(_ page: [Database.WinnerChange], _ group: ViewGroup, fresh: Int, engine: any ViewEngine) throws
        -> [PageUpdate]
    {
        var mapped: [Int] = []
        var documents: [JSON] = []
        for (position, change) in page.enumerated() {
            guard let body = try ViewIndex.mapDocument(change, group) else { continue }
            mapped.append(position)
            documents.append(body)
        }
        let emits = documents.isEmpty ? [] : try engine.map(group, documents)
        var updates = page.map { (docID: $0.change.id, emits: [ViewEmit](), fresh: $0.change.seq <= fresh) }
        for (slot, position) in mapped.enumerated() where slot < emits.count {
            for (view, rows) in emits[slot].enumerated() where view < group.views.count {
                for row in rows {
                    updates[position].emits.append(
                        ViewEmit(
                            view: view, sortKey: ViewCollation.sortKey(row.key), key: row.key.serialized(),
                            value: row.value.serialized()))
                }
            }
        }
        return updates
    }
}

/// A one-page queue between the updater's reader thread and its writer.
private final class PagePipe: Sendable {
    enum Item: Sendable {
        case page([ViewIndex.PageUpdate], seq: Int)
        case end
        case failed(any Error)
    }

    private let state = Mutex<(items: [Item], cancelled: Bool)>(([], false))
    /// Pages the reader may map ahead of the writer.
    private let free = DispatchSemaphore(value: 1)
    private let ready = DispatchSemaphore(value: 0)
    /// Signalled when the reader thread has ended.
    let done = DispatchSemaphore(value: 0)

    var cancelled: Bool { state.withLock { $0.cancelled } }

    /// Hands over an item once there is room; false when the writer has given up.
    func put(_ item: Item) -> Bool {
        free.wait()
        let taken = state.withLock { state in
            guard !state.cancelled else { return false }
            state.items.append(item)
            return true
        }
        if taken { ready.signal() }
        return taken
    }

    func take() -> Item {
        ready.wait()
        let item = state.withLock { $0.items.removeFirst() }
        free.signal()
        return item
    }

    /// The writer is done (or failed): a reader waiting for room wakes and stops.
    func cancel() {
        state.withLock { $0.cancelled = true }
        free.signal()
    }
}
