import CouchQuery
import CouchStore
import CouchWire

/// The partial reductions an index stores per chunk of rows (`ViewIndexFile+Chunks`): each reduce view's rows are
/// folded with the same ``Reduction`` a query uses, built-ins natively and JavaScript in the engine (reduce, then
/// rereduce for a chunk of more than ``Reduction/chunkSize`` rows), and the state is stored as JSON.
///
/// A chunk whose fold fails (a value `_stats` refuses, a `_sum` error, a JavaScript reduce that throws or times
/// out) stores no partial: its rows are folded at query time, where the error is answered exactly as before. After
/// one JavaScript failure the view stores no partials for the rest of this pass, so a hostile reduce costs one
/// timeout per update, not one per chunk.
final class ViewChunkReductions: ViewChunkReducer {
    let group: ViewGroup
    let engine: any ViewEngine
    let views: [Int]
    private var failed = Set<Int>()

    init(group: ViewGroup, engine: any ViewEngine) {
        self.group = group
        self.engine = engine
        views = group.views.indices.filter { group.views[$0].reduce != nil }
    }

    func fold(view: Int) -> any ViewChunkFold {
        ChunkFold(owner: self, view: view, definition: group.views[view])
    }

    private final class ChunkFold: ViewChunkFold {
        let owner: ViewChunkReductions
        let view: Int
        let needsKey: Bool
        var reduction: Reduction?

        init(owner: ViewChunkReductions, view: Int, definition: ViewDefinition) {
            self.owner = owner
            self.view = view
            let builtin = definition.builtin
            needsKey = builtin == nil || builtin == .approxCountDistinct
            // An unknown `_name` reduce is refused at query time: nothing to store.
            let usable = builtin != nil || !(definition.reduce ?? "").hasPrefix("_")
            reduction =
                usable && !owner.failed.contains(view)
                ? Reduction(definition: definition, group: owner.group, view: view, engine: owner.engine) : nil
        }

        package func add(_ row: ViewRow) {
            guard var current = reduction else { return }
            reduction = nil
            do {
                let key = needsKey ? try JSON.parse(row.key) : .null
                try current.add(key: key, docID: row.docID, value: row.value)
                reduction = current
            } catch {
                fail()
            }
        }

        func finish() -> [UInt8]? {
            guard var current = reduction else { return nil }
            do {
                return try current.partial()?.serialized()
            } catch {
                fail()
                return nil
            }
        }

        private func fail() {
            if owner.group.views[view].builtin == nil { owner.failed.insert(view) }
            reduction = nil
        }
    }
}
