import CouchWire

/// CouchDB's built-in reduce functions (`couch_query_servers:builtin_reduce`), run natively: a view whose
/// `reduce` starts with `_sum`, `_count`, `_stats` or `_approx_count_distinct` never reaches the JavaScript engine.
///
/// Rows are folded one at a time into a ``ReduceAccumulator`` (a reduce over a million rows holds one
/// accumulator, not the rows); ``ReduceAccumulator/merge(_:)`` is CouchDB's rereduce of two partial results.
public enum BuiltinReducer: String, Sendable, CaseIterable {
    case sum = "_sum"
    case count = "_count"
    case stats = "_stats"
    case approxCountDistinct = "_approx_count_distinct"

    /// The built-in a reduce source names: CouchDB matches by prefix (`<<"_sum", _/binary>>`), so `_sum\n` and
    /// `_sum_of_all` are `_sum`; nil for JavaScript and for an unknown `_name`.
    public init?(source: String) {
        let trimmed = source.drop { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }
        guard trimmed.hasPrefix("_") else { return nil }
        // The longest name first, so `_stats…` is never taken for a shorter one.
        for reducer in [BuiltinReducer.approxCountDistinct, .stats, .count, .sum]
        where trimmed.hasPrefix(reducer.rawValue) {
            self = reducer
            return
        }
        return nil
    }

    /// A fresh accumulator.
    public func accumulator() -> ReduceAccumulator { ReduceAccumulator(self) }
}

/// A reduce input CouchDB refuses with an HTTP error (`invalid_value`), as `_stats` does for a non-number.
/// `_sum` does not throw: its errors are a value (`{"error":"builtin_reduce_error",…}`), as in CouchDB.
public struct ReduceError: Error, Equatable, Sendable {
    public let reason: String
}

/// A number as Erlang adds it: integers exactly while they fit 64 bits (then as doubles, where Erlang would use
/// a bignum), anything with a fraction or exponent as a double.
enum ReduceNumber: Equatable {
    case int(Int)
    case double(Double)

    init(_ number: JSONNumber) {
        if let value = number.intValue {
            self = .int(value)
        } else {
            self = .double(Double(number.text) ?? (number.text.hasPrefix("-") ? -.infinity : .infinity))
        }
    }

    var double: Double {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        }
    }

    static func + (lhs: ReduceNumber, rhs: ReduceNumber) -> ReduceNumber {
        if case .int(let a) = lhs, case .int(let b) = rhs {
            let (sum, overflow) = a.addingReportingOverflow(b)
            return overflow ? .double(Double(a) + Double(b)) : .int(sum)
        }
        return .double(lhs.double + rhs.double)
    }

    static func * (lhs: ReduceNumber, rhs: ReduceNumber) -> ReduceNumber {
        if case .int(let a) = lhs, case .int(let b) = rhs {
            let (product, overflow) = a.multipliedReportingOverflow(by: b)
            return overflow ? .double(Double(a) * Double(b)) : .int(product)
        }
        return .double(lhs.double * rhs.double)
    }

    static func < (lhs: ReduceNumber, rhs: ReduceNumber) -> Bool {
        if case .int(let a) = lhs, case .int(let b) = rhs { return a < b }
        return lhs.double < rhs.double
    }

    /// Non-finite doubles (an overflowed sum) have no JSON form; CouchDB's jiffy cannot encode them either.
    var json: JSON {
        switch self {
        case .int(let value): .int(value)
        case .double(let value): .double(value)
        }
    }

    var isFinite: Bool {
        if case .double(let value) = self { return value.isFinite }
        return true
    }
}

/// One built-in reduction in progress.
public struct ReduceAccumulator: Sendable {
    public let reducer: BuiltinReducer
    private var count = 0
    /// `_sum`: the running sum, nil before the first value (CouchDB's accumulator starts at `0`).
    private var sum: SumValue = .number(.int(0))
    /// `_sum`: the error object that ended the sum; later rows are not looked at.
    private var sumError: JSON?
    private var stats: StatsValue?
    private var distinct = HyperLogLog()

    init(_ reducer: BuiltinReducer) {
        self.reducer = reducer
    }

    /// Folds in one map row.
    /// - Throws: ``ReduceError`` for `_stats` of a value that is not a number, an array of numbers or a
    ///   pre-aggregated stats object.
    public mutating func add(key: JSON, value: JSON) throws(ReduceError) {
        switch reducer {
        case .count:
            count += 1
        case .sum:
            guard sumError == nil else { return }
            do {
                sum = try SumValue.add(value, to: sum)
            } catch {
                sumError = error.json
            }
        case .stats:
            let next = try StatsValue(value)
            if let stats { self.stats = try stats.merged(next) } else { stats = next }
        case .approxCountDistinct:
            distinct.insert(key.serialized())
        }
    }

    /// Rereduce: folds in another accumulator's rows.
    public mutating func merge(_ other: ReduceAccumulator) throws(ReduceError) {
        switch reducer {
        case .count:
            count += other.count
        case .sum:
            guard sumError == nil else { return }
            if let error = other.sumError {
                sumError = error
                return
            }
            do {
                sum = try SumValue.add(other.sum.json, to: sum)
            } catch {
                sumError = error.json
            }
        case .stats:
            guard let next = other.stats else { return }
            if let stats { self.stats = try stats.merged(next) } else { stats = next }
        case .approxCountDistinct:
            distinct.union(other.distinct)
        }
    }

    /// The state as JSON, for a stored partial reduction (``init(_:partial:)`` reads it back); nil when it has none
    /// that reads back exactly: a `_sum` that ended in an error, or a sum that overflowed to a non-finite double.
    public var partial: JSON? {
        switch reducer {
        case .count: return .int(count)
        case .sum:
            guard sumError == nil, sum.isFinite else { return nil }
            return sum.json
        case .stats:
            guard let stats else { return .null }
            return stats.isFinite ? stats.json : nil
        case .approxCountDistinct: return distinct.sparse
        }
    }

    /// An accumulator from its ``partial``; nil when `partial` is not one.
    public init?(_ reducer: BuiltinReducer, partial: JSON) {
        self.reducer = reducer
        switch reducer {
        case .count:
            guard let value = partial.numberValue?.intValue else { return nil }
            count = value
        case .sum:
            // Added to the starting 0 as a rereduce adds it: numbers, arrays and objects come back as they were.
            guard let value = try? SumValue.add(partial, to: sum) else { return nil }
            sum = value
        case .stats:
            if partial == .null { return }
            guard let value = try? StatsValue(partial) else { return nil }
            stats = value
        case .approxCountDistinct:
            guard let value = HyperLogLog(sparse: partial) else { return nil }
            distinct = value
        }
    }

    /// Rereduce of a stored partial that refuses instead of failing: false (nothing changed) when merging `other`
    /// would end in an error, whose exact text only folding its rows one by one gives.
    public mutating func mergeExactly(_ other: ReduceAccumulator) -> Bool {
        switch reducer {
        case .count:
            count += other.count
        case .sum:
            guard sumError == nil else { return true }  // later rows are not looked at
            guard other.sumError == nil, let value = try? SumValue.add(other.sum.json, to: sum) else { return false }
            sum = value
        case .stats:
            guard let next = other.stats else { return true }
            guard let stats else {
                stats = next
                return true
            }
            guard let merged = try? stats.merged(next) else { return false }
            self.stats = merged
        case .approxCountDistinct:
            distinct.union(other.distinct)
        }
        return true
    }

    /// The reduction as CouchDB answers it.
    public var result: JSON {
        switch reducer {
        case .count: return .int(count)
        case .sum: return sumError ?? sum.json
        case .stats: return stats?.json ?? StatsValue.empty
        case .approxCountDistinct: return .int(distinct.estimate)
        }
    }
}

/// `_sum`'s accumulator: a number, an array of numbers (summed element by element, the shorter padded) or an
/// object (summed member by member, recursively; members only one side has are kept).
enum SumValue: Sendable {
    case number(ReduceNumber)
    case array([ReduceNumber])
    case object([(key: String, value: SumValue)])
    /// A member value taken into an object sum without a counterpart: CouchDB keeps it unchecked until
    /// something is added to it.
    case raw(JSON)

    struct Failure: Error {
        var cause: JSON
        var errorObject: JSON?
        var json: JSON {
            if let errorObject { return errorObject }
            return .object(
                JSONObject([
                    ("error", "builtin_reduce_error"), ("reason", .string(SumValue.errorReason)), ("caused_by", cause),
                ]))
        }
    }

    static let errorReason =
        "The _sum function requires that map values be numbers, arrays of numbers, or objects. Objects cannot be "
        + "mixed with other data structures. Objects can be arbitrarily nested, provided that the values for all "
        + "fields are themselves numbers, arrays of numbers, or objects."

    var isFinite: Bool {
        switch self {
        case .number(let n): n.isFinite
        case .array(let items): items.allSatisfy(\.isFinite)
        case .object(let members): members.allSatisfy { $0.value.isFinite }
        case .raw: true
        }
    }

    var json: JSON {
        switch self {
        case .number(let n): n.json
        case .array(let items): .array(items.map(\.json))
        case .object(let members): .object(JSONObject(members.map { ($0.key, $0.value.json) }))
        case .raw(let value): value
        }
    }

    /// `sum_values(Value, Acc)`.
    static func add(_ value: JSON, to acc: SumValue) throws(Failure) -> SumValue {
        switch (value, acc) {
        case (.number(let n), .number(let a)):
            return .number(a + ReduceNumber(n))
        case (.array(let items), .array(let a)):
            return .array(try sumArrays(a, numbers(items)))
        case (.number(let n), .array(let a)):
            return .array(try sumArrays(a, [ReduceNumber(n)]))
        case (.array(let items), .number(let a)):
            return .array(try sumArrays([a], numbers(items)))
        case (.object(let members), _):
            if members["error"]?.stringValue == "builtin_reduce_error" {
                throw Failure(cause: value, errorObject: value)
            }
            switch acc {
            case .number(.int(0)):
                return .object(members.sortedByKey().map { ($0.key, plain($0.value)) })
            case .object(let accMembers):
                return .object(try sumObjects(members.sortedByKey(), accMembers))
            default:
                throw Failure(cause: value)
            }
        default:
            throw Failure(cause: value)
        }
    }

    /// A member value with nothing to be added to, kept as CouchDB keeps it (unchecked).
    private static func plain(_ value: JSON) -> SumValue {
        switch value {
        case .number(let n): return .number(ReduceNumber(n))
        case .array(let items): return (try? numbers(items)).map { .array($0) } ?? .raw(value)
        case .object(let members): return .object(members.sortedByKey().map { ($0.key, plain($0.value)) })
        default: return .raw(value)
        }
    }

    private static func numbers(_ items: [JSON]) throws(Failure) -> [ReduceNumber] {
        var out: [ReduceNumber] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .number(let n) = item else { throw Failure(cause: .array(items)) }
            out.append(ReduceNumber(n))
        }
        return out
    }

    private static func sumArrays(_ xs: [ReduceNumber], _ ys: [ReduceNumber]) throws(Failure) -> [ReduceNumber] {
        var out: [ReduceNumber] = []
        out.reserveCapacity(max(xs.count, ys.count))
        for i in 0..<max(xs.count, ys.count) {
            switch (i < xs.count ? xs[i] : nil, i < ys.count ? ys[i] : nil) {
            case (let x?, let y?): out.append(x + y)
            case (let x?, nil): out.append(x)
            case (nil, let y?): out.append(y)
            case (nil, nil): break
            }
        }
        return out
    }

    /// `sum_objects`: both sides sorted by key; equal keys summed, the others kept.
    private static func sumObjects(_ left: [(key: String, value: JSON)], _ right: [(key: String, value: SumValue)])
        throws(Failure) -> [(key: String, value: SumValue)]
    {
        var out: [(key: String, value: SumValue)] = []
        var (i, j) = (0, 0)
        while i < left.count || j < right.count {
            if i < left.count, j < right.count, left[i].key.utf8Equals(right[j].key) {
                out.append((left[i].key, try add(left[i].value, to: right[j].value)))
                i += 1
                j += 1
            } else if j >= right.count
                || (i < left.count && left[i].key.utf8.lexicographicallyPrecedes(right[j].key.utf8))
            {
                out.append((left[i].key, plain(left[i].value)))
                i += 1
            } else {
                out.append(right[j])
                j += 1
            }
        }
        return out
    }
}

extension JSONObject {
    /// Members in byte order of their keys (Erlang's `lists:sort` of a proplist).
    fileprivate func sortedByKey() -> [(key: String, value: JSON)] {
        map { (key: $0.key, value: $0.value) }.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }
}

/// `_stats`: `{sum, count, min, max, sumsqr}` of numbers, or an array of them for arrays of numbers.
enum StatsValue: Sendable {
    case one(sum: ReduceNumber, count: ReduceNumber, min: ReduceNumber, max: ReduceNumber, sumsqr: ReduceNumber)
    case many([StatsValue])

    static let empty: JSON = .object(
        JSONObject([("sum", .int(0)), ("count", .int(0)), ("min", .int(0)), ("max", .int(0)), ("sumsqr", .int(0))]))

    init(_ value: JSON) throws(ReduceError) {
        switch value {
        case .number(let n):
            let x = ReduceNumber(n)
            self = .one(sum: x, count: .int(1), min: x, max: x, sumsqr: x * x)
        case .array(let items):
            var parts: [StatsValue] = []
            for item in items { parts.append(try StatsValue(item)) }
            self = .many(parts)
        case .object(let members):
            func number(_ key: String) throws(ReduceError) -> ReduceNumber {
                guard let field = members[key] else {
                    throw ReduceError(
                        reason: "user _stats input missing required field \(key) (\(value.serializedString))")
                }
                guard case .number(let n) = field else {
                    throw ReduceError(
                        reason: "non-numeric _stats input received for \(key): \(field.serializedString)")
                }
                return ReduceNumber(n)
            }
            self = .one(
                sum: try number("sum"), count: try number("count"), min: try number("min"), max: try number("max"),
                sumsqr: try number("sumsqr"))
        default:
            throw ReduceError(
                reason: "The _stats function requires that map values be numbers or arrays of numbers, not '"
                    + value.serializedString + "'")
        }
    }

    /// `stat_values`: arrays element by element (zipped: the shorter one decides the length), numbers combined.
    func merged(_ other: StatsValue) throws(ReduceError) -> StatsValue {
        switch (self, other) {
        case (.one(let s0, let c0, let min0, let max0, let q0), .one(let s1, let c1, let min1, let max1, let q1)):
            return .one(
                sum: s0 + s1, count: c0 + c1, min: min1 < min0 ? min1 : min0, max: max0 < max1 ? max1 : max0,
                sumsqr: q0 + q1)
        case (.many(let a), .many(let b)):
            var out: [StatsValue] = []
            for (x, y) in zip(a, b) { out.append(try x.merged(y)) }
            return .many(out)
        default:
            throw ReduceError(
                reason: "The _stats function requires that map values be numbers or arrays of numbers, not '"
                    + other.json.serializedString + "'")
        }
    }

    var isFinite: Bool {
        switch self {
        case .one(let sum, let count, let min, let max, let sumsqr):
            [sum, count, min, max, sumsqr].allSatisfy(\.isFinite)
        case .many(let parts): parts.allSatisfy(\.isFinite)
        }
    }

    var json: JSON {
        switch self {
        case .one(let sum, let count, let min, let max, let sumsqr):
            return .object(
                JSONObject([
                    ("sum", sum.json), ("count", count.json), ("min", min.json), ("max", max.json),
                    ("sumsqr", sumsqr.json),
                ]))
        case .many(let parts):
            return .array(parts.map(\.json))
        }
    }
}
