import CPCRE2
import CouchWire
import Glibc
import Synchronization

/// A compiled `$regex` pattern. CouchDB runs them with Erlang's `re` (PCRE, bytes, no options); this is PCRE2 the
/// same way, with limits so that a hostile pattern cannot hold a thread: at most ``matchLimit`` backtracking steps,
/// ``depthLimit`` nested backtracking points and ``heapLimitKiB`` of backtracking frames per match, and a bounded
/// pattern and compiled program. A match that runs into a limit is a non-match, as in CouchDB (whose `re:run`
/// answers `nomatch` past its own limit).
///
/// Those limits bound one match; a request's matches together are bounded by a ``RegexBudget`` (CPU time across all
/// of them), and the compiled programs by a ``RegexMemory`` (server-wide bytes, reserved here and given back in
/// `deinit`).
///
/// Compiled once per selector; the program and its match context are read-only after `init`, which PCRE2
/// documents as safe to share between threads, hence `@unchecked Sendable`.
public final class MangoRegex: @unchecked Sendable {
    /// The longest pattern accepted; longer ones are refused like a pattern that does not compile.
    public static let maxPatternBytes = 16 * 1024
    /// The largest compiled program accepted.
    public static let maxCompiledBytes = 1 << 20
    /// Backtracking steps per match (PCRE2's default is ten million: seconds of CPU for one document).
    public static let matchLimit: UInt32 = 1_000_000
    /// Nested backtracking frames per match.
    public static let depthLimit: UInt32 = 10_000
    /// Memory for one match's backtracking frames, in KiB (PCRE2's default is 20 GB: a pattern with thousands of
    /// groups makes each of the ``depthLimit`` frames tens of kilobytes).
    public static let heapLimitKiB: UInt32 = 8 * 1024

    /// Why a pattern was not compiled.
    public enum Refusal: Error, Equatable {
        /// PCRE2 refuses it, or it is over ``maxPatternBytes`` or ``maxCompiledBytes``.
        case invalid
        /// The server's ``RegexMemory`` has no room for its program now.
        case serverFull
    }

    private let code: OpaquePointer
    private let context: OpaquePointer
    /// The compiled program's size (`PCRE2_INFO_SIZE`), reserved in `memory`.
    public let compiledBytes: Int
    private let memory: RegexMemory

    /// Compiles `pattern`, reserving its program's size in `memory`.
    public init(_ pattern: String, memory: RegexMemory) throws(Refusal) {
        let bytes = Array(pattern.utf8)
        guard bytes.count <= MangoRegex.maxPatternBytes else { throw .invalid }
        var errorCode: Int32 = 0
        var errorOffset = 0
        guard let code = pcre2_compile_8(bytes, bytes.count, 0, &errorCode, &errorOffset, nil) else { throw .invalid }
        var size = 0
        guard pcre2_pattern_info_8(code, UInt32(PCRE2_INFO_SIZE), &size) == 0, size <= MangoRegex.maxCompiledBytes
        else {
            pcre2_code_free_8(code)
            throw .invalid
        }
        guard memory.reserve(size) else {
            pcre2_code_free_8(code)
            throw .serverFull
        }
        guard let context = pcre2_match_context_create_8(nil) else {
            memory.release(size)
            pcre2_code_free_8(code)
            throw .invalid
        }
        pcre2_set_match_limit_8(context, MangoRegex.matchLimit)
        pcre2_set_depth_limit_8(context, MangoRegex.depthLimit)
        pcre2_set_heap_limit_8(context, MangoRegex.heapLimitKiB)
        self.code = code
        self.context = context
        self.compiledBytes = size
        self.memory = memory
    }

    /// Compiles `pattern` against the server-wide ``RegexMemory/server``; nil when it is refused.
    public convenience init?(_ pattern: String) {
        do {
            try self.init(pattern, memory: .server)
        } catch {
            return nil
        }
    }

    deinit {
        pcre2_match_context_free_8(context)
        pcre2_code_free_8(code)
        memory.release(compiledBytes)
    }

    /// Whether the pattern matches somewhere in `subject`; false past a limit or on any matching error, and false
    /// without running once `budget` is spent (the match that spends it is charged in full).
    public func matches(_ subject: String, budget: RegexBudget? = nil) -> Bool {
        if let budget, budget.isSpent { return false }
        // One pair is enough to tell a match (0 is "matched, ovector too small"); a pattern with thousands of
        // groups would otherwise allocate their ovector per match.
        guard let data = pcre2_match_data_create_8(1, nil) else { return false }
        defer { pcre2_match_data_free_8(data) }
        let started = budget == nil ? 0 : RegexBudget.threadCPUNanoseconds()
        var subject = subject
        let result = subject.withUTF8 { bytes in
            pcre2_match_8(code, bytes.baseAddress, bytes.count, 0, 0, data, context)
        }
        budget?.charge(RegexBudget.threadCPUNanoseconds() &- started)
        return result >= 0
    }
}

/// What the `$regex` matches of one request may spend together: CPU time of this thread inside PCRE2, summed over
/// every match of every clause and document (each match alone is bounded by ``MangoRegex/matchLimit``, so a request
/// overshoots by one match's worth at most). Once spent, matches answer false without running and ``isSpent``
/// tells the caller to fail the request. One request, one thread: not shared.
public final class RegexBudget {
    /// Two seconds of CPU: a few hundred thousand ordinary matches, ~140 that run into the step limit.
    public static let defaultNanoseconds: UInt64 = 2_000_000_000

    /// What the budget allowed.
    public let nanoseconds: UInt64
    /// CPU time the matches took so far.
    public private(set) var spentNanoseconds: UInt64 = 0

    public init(nanoseconds: UInt64 = RegexBudget.defaultNanoseconds) {
        self.nanoseconds = nanoseconds
    }

    /// Whether the matches took the whole budget.
    public var isSpent: Bool { spentNanoseconds >= nanoseconds }

    func charge(_ elapsed: UInt64) {
        let (sum, overflow) = spentNanoseconds.addingReportingOverflow(elapsed)
        spentNanoseconds = overflow ? .max : sum
    }

    /// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): time the thread waited for a core is not charged.
    static func threadCPUNanoseconds() -> UInt64 {
        var now = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) == 0 else { return 0 }
        return UInt64(clamping: now.tv_sec) &* 1_000_000_000 &+ UInt64(clamping: now.tv_nsec)
    }
}

/// The bytes of compiled `$regex` programs alive at once, across every request of a server (a compiled program
/// costs far more than its pattern's text: up to ~900× for a short pattern with large repeat counts). A pattern
/// reserves its size when it is compiled and gives it back when its selector goes; one that does not fit is refused
/// (the server answers 503, to be retried).
public final class RegexMemory: Sendable {
    /// The server's: 64 MiB.
    public static let server = RegexMemory(limit: 64 << 20)

    /// The most bytes that may be reserved at once.
    public let limit: Int
    private let used = Mutex(0)

    public init(limit: Int) {
        self.limit = limit
    }

    /// Bytes reserved now.
    public var inUse: Int { used.withLock { $0 } }

    func reserve(_ bytes: Int) -> Bool {
        used.withLock { used in
            guard bytes <= limit - used else { return false }
            used += bytes
            return true
        }
    }

    func release(_ bytes: Int) {
        used.withLock { $0 = max(0, $0 - bytes) }
    }
}
