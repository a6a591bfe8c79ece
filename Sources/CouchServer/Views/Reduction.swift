import CouchQuery
import CouchWire

/// The reduction of one group: built-ins fold natively; JavaScript reduces run on chunks of rows, then rereduce
/// the chunks' results (CouchDB's reduce/rereduce contract, so a group of any size holds one chunk).
struct Reduction {
    let definition: ViewDefinition
    let group: ViewGroup
    let view: Int
    let engine: any ViewEngine
    private var accumulator: ReduceAccumulator?
    private var keys: [JSON] = []
    private var values: [JSON] = []
    private var partials: [JSON] = []

    /// Rows per JavaScript reduce call.
    static let chunkSize = 200

    init(definition: ViewDefinition, group: ViewGroup, view: Int, engine: any ViewEngine) {
        self.definition = definition
        self.group = group
        self.view = view
        self.engine = engine
        accumulator = definition.builtin?.accumulator()
    }

    package mutating func add(key: JSON, docID: String, value: [UInt8]) throws {
        if var accumulator {
            let parsed =
                accumulator.reducer == .count || accumulator.reducer == .approxCountDistinct
                ? JSON.null : try JSON.parse(value)
            do {
                try accumulator.add(key: key, value: parsed)
            } catch {
                throw CouchError.invalidValue(error.reason)
            }
            self.accumulator = accumulator
            return
        }
        keys.append(.array([key, .string(docID)]))
        values.append(try JSON.parse(value))
        if keys.count >= Reduction.chunkSize { try flush() }
    }

    private mutating func flush() throws {
        guard !keys.isEmpty else { return }
        partials.append(try engine.reduce(group, view: view, keys: keys, values: values))
        keys.removeAll(keepingCapacity: true)
        values.removeAll(keepingCapacity: true)
    }

    /// What a chunk stores of the rows added so far (nil: nothing that reads back exactly, so none).
    mutating func partial() throws -> JSON? {
        if let accumulator { return accumulator.partial }
        return try finish()
    }

    /// Folds in a chunk's stored partial, in row order with the rows added around it; false (nothing folded) when
    /// its rows must be added one by one instead, for the exact error or because the partial does not read.
    mutating func merge(partial bytes: [UInt8]) throws -> Bool {
        guard let partial = try? JSON.parse(bytes) else { return false }
        if var accumulator {
            guard let other = ReduceAccumulator(accumulator.reducer, partial: partial),
                accumulator.mergeExactly(other)
            else { return false }
            self.accumulator = accumulator
            return true
        }
        try flush()
        partials.append(partial)
        return true
    }

    package mutating func finish() throws -> JSON {
        if let accumulator { return accumulator.result }
        try flush()
        if partials.count == 1 { return partials[0] }
        if partials.isEmpty { return try engine.reduce(group, view: view, keys: [], values: []) }
        return try engine.rereduce(group, view: view, values: partials)
    }
}
