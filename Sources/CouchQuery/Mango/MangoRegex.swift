import CPCRE2
import CouchWire

/// A compiled `$regex` pattern. CouchDB runs them with Erlang's `re` (PCRE, bytes, no options); this is PCRE2 the
/// same way, with limits so that a hostile pattern cannot hold a thread: at most ``matchLimit`` backtracking steps
/// and ``depthLimit`` nested backtracking points per match, and a bounded pattern and compiled program. A match
/// that runs into a limit is a non-match, as in CouchDB (whose `re:run` answers `nomatch` past its own limit).
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

    private let code: OpaquePointer
    private let context: OpaquePointer

    /// Compiles `pattern`; nil when PCRE2 refuses it or it is over a bound.
    public init?(_ pattern: String) {
        let bytes = Array(pattern.utf8)
        guard bytes.count <= MangoRegex.maxPatternBytes else { return nil }
        var errorCode: Int32 = 0
        var errorOffset = 0
        guard let code = pcre2_compile_8(bytes, bytes.count, 0, &errorCode, &errorOffset, nil) else { return nil }
        var size = 0
        guard pcre2_pattern_info_8(code, UInt32(PCRE2_INFO_SIZE), &size) == 0, size <= MangoRegex.maxCompiledBytes,
            let context = pcre2_match_context_create_8(nil)
        else {
            pcre2_code_free_8(code)
            return nil
        }
        pcre2_set_match_limit_8(context, MangoRegex.matchLimit)
        pcre2_set_depth_limit_8(context, MangoRegex.depthLimit)
        self.code = code
        self.context = context
    }

    deinit {
        pcre2_match_context_free_8(context)
        pcre2_code_free_8(code)
    }

    /// Whether the pattern matches somewhere in `subject`; false past a limit or on any matching error.
    public func matches(_ subject: String) -> Bool {
        guard let data = pcre2_match_data_create_from_pattern_8(code, nil) else { return false }
        defer { pcre2_match_data_free_8(data) }
        var subject = subject
        let result = subject.withUTF8 { bytes in
            pcre2_match_8(code, bytes.baseAddress, bytes.count, 0, 0, data, context)
        }
        return result >= 0
    }
}
