extension JSON {
    /// Parses one JSON text under strict RFC 8259 rules.
    ///
    /// Rejects invalid UTF-8 (also inside strings), a byte order mark, unescaped control characters, lone
    /// surrogate escapes, non-JSON numbers (`01`, `+1`, `.5`, `1.`, `NaN`, `Infinity`) and anything but
    /// whitespace after the value. A repeated object key keeps its first position and takes the last value,
    /// as JavaScript's `JSON.parse` does.
    ///
    /// - Parameters:
    ///   - bytes: The complete JSON text.
    ///   - maxDepth: The deepest nesting of arrays and objects accepted (`[]` is depth 1). Parsing itself
    ///     uses no stack per level, but comparing, serialising and freeing a value recurse once per level,
    ///     so keep this near the default on threads with small stacks.
    ///   - memoryBudget: Most heap bytes the parsed value may hold, as the parser estimates them while it
    ///     goes (each non-empty array 48 + 16 bytes per element, each non-empty object 48 + 32 bytes per
    ///     member, each string or number over 15 UTF-8 bytes 48 + its length). Request bodies pass a
    ///     multiple of their length (see ``JSON/memoryBudget(forInput:)``), so that a body of tiny
    ///     containers cannot turn into a value many times its size.
    /// - Returns: The value.
    /// - Throws: ``JSONError`` with the kind of violation and its byte offset.
    public static func parse(
        _ bytes: UnsafeRawBufferPointer, maxDepth: Int = JSON.defaultMaxDepth, memoryBudget: Int = .max
    ) throws(JSONError) -> JSON {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth, memoryBudget: memoryBudget)
        return try parser.parseDocument()
    }

    /// Parses one JSON text; see ``parse(_:maxDepth:memoryBudget:)-(UnsafeRawBufferPointer,_,_)``.
    public static func parse(
        _ bytes: [UInt8], maxDepth: Int = JSON.defaultMaxDepth, memoryBudget: Int = .max
    ) throws(JSONError) -> JSON {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONError) -> JSON in
                try parse(buffer, maxDepth: maxDepth, memoryBudget: memoryBudget)
            }
        }
        return try result.get()
    }

    /// The memory budget for parsing an untrusted body of `count` bytes: 32 bytes per byte of the first
    /// 8 MiB, 6 per byte beyond, plus 1 MiB. A value of small containers holds 15–30 times its text
    /// (`[1.5,2.5]` pairs about 15×, `[0]` 27×: a Swift array costs about 100 bytes), which a document may
    /// do; a big body must be mostly what big bodies are (base64 attachment data holds about 1×, documents
    /// of short fields 2–4×), so a 512 MiB flood of tiny arrays is refused instead of taking 14 GB.
    public static func memoryBudget(forInput count: Int) -> Int {
        let head = min(count, 8 * 1024 * 1024)
        return head &* 32 &+ (count &- head) &* 6 &+ 1024 * 1024
    }

    /// Parses one JSON text; see ``parse(_:maxDepth:memoryBudget:)-(UnsafeRawBufferPointer,_,_)``.
    public static func parse(_ bytes: ArraySlice<UInt8>, maxDepth: Int = JSON.defaultMaxDepth) throws(JSONError) -> JSON
    {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONError) -> JSON in try parse(buffer, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// Parses one JSON text from a string's UTF-8; see ``parse(_:maxDepth:memoryBudget:)-(UnsafeRawBufferPointer,_,_)``.
    public static func parse(_ string: String, maxDepth: Int = JSON.defaultMaxDepth) throws(JSONError) -> JSON {
        var string = string
        let result = string.withUTF8 { buffer in
            Result { () throws(JSONError) -> JSON in try parse(UnsafeRawBufferPointer(buffer), maxDepth: maxDepth) }
        }
        return try result.get()
    }
}
