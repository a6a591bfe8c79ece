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
    ///   - memoryBudget: Most heap bytes the parsed value (and the parser's own stacks) may hold, as the parser
    ///     estimates them while it goes (each value 24 bytes as it is pushed, each key 16, each non-empty array or
    ///     object 80 more, each string or number over 15 UTF-8 bytes 48 + its length, the stacks' buffers as they
    ///     grow). Request bodies pass ``JSONMemoryBudget/requestBody``, so that a body of tiny values stops being
    ///     parsed as soon as it holds more than a few times the bytes read so far.
    /// - Returns: The value.
    /// - Throws: ``JSONError`` with the kind of violation and its byte offset.
    public static func parse(
        _ bytes: UnsafeRawBufferPointer, maxDepth: Int = JSON.defaultMaxDepth, memoryBudget: JSONMemoryBudget
    ) throws(JSONError) -> JSON {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth, memoryBudget: memoryBudget)
        return try parser.parseDocument()
    }

    /// Parses one JSON text; see ``parse(_:maxDepth:memoryBudget:)-(UnsafeRawBufferPointer,_,_)``.
    public static func parse(
        _ bytes: UnsafeRawBufferPointer, maxDepth: Int = JSON.defaultMaxDepth, memoryBudget: Int = .max
    ) throws(JSONError) -> JSON {
        try parse(bytes, maxDepth: maxDepth, memoryBudget: .total(memoryBudget))
    }

    /// Parses one JSON text; see ``parse(_:maxDepth:memoryBudget:)-(UnsafeRawBufferPointer,_,_)``.
    public static func parse(
        _ bytes: [UInt8], maxDepth: Int = JSON.defaultMaxDepth, memoryBudget: JSONMemoryBudget
    ) throws(JSONError) -> JSON {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONError) -> JSON in
                try parse(buffer, maxDepth: maxDepth, memoryBudget: memoryBudget)
            }
        }
        return try result.get()
    }

    /// Parses one JSON text; see ``parse(_:maxDepth:memoryBudget:)-(UnsafeRawBufferPointer,_,_)``.
    public static func parse(
        _ bytes: [UInt8], maxDepth: Int = JSON.defaultMaxDepth, memoryBudget: Int = .max
    ) throws(JSONError) -> JSON {
        try parse(bytes, maxDepth: maxDepth, memoryBudget: .total(memoryBudget))
    }

    /// The memory budget for parsing an untrusted body of `count` bytes: 256 KiB, plus 6 bytes per byte of the
    /// first 16 MiB, plus 2 per byte beyond. Documents hold 4–6 times their text while parsed (a replicated
    /// document with `_revisions` about 5.5×), so any document CouchDB accepts (8 MB) parses; values of tiny
    /// containers and scalars hold 8–36× (`[0]` 36×, `{}` in an array 16×, a one-digit number 12×, the parser's
    /// stack included) and are refused a few hundred kilobytes in. A big body must be mostly what big bodies are
    /// (base64 attachment data holds about 2×, long revision lists about 3.6×), so a body held with its parsed
    /// value costs at most 4 times its size (4.0× at 64 MiB, 3.5× at 512 MiB) instead of 17×.
    /// ``JSONMemoryBudget/requestBody`` applies it to the bytes parsed so far.
    public static func memoryBudget(forInput count: Int) -> Int {
        // Saturating: a limit of 2^63-1 (a `_config` setting) must cost "more than there is", not wrap negative.
        let head = min(max(count, 0), 16 * 1024 * 1024)
        let tail = max(count &- head, 0)
        guard tail <= Int.max / 4 else { return Int.max }
        return 256 * 1024 + head * 6 + tail * 2
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

/// How much memory a parse may make the value (and the parser) hold; see ``JSON/parse(_:maxDepth:memoryBudget:)-(UnsafeRawBufferPointer,_,_)``.
public enum JSONMemoryBudget: Sendable, Equatable {
    /// At most this many bytes in all.
    case total(Int)
    /// For untrusted bodies: at every point of the parse, at most ``JSON/memoryBudget(forInput:)`` of the bytes
    /// parsed so far, so a flood of tiny values is refused after a few hundred kilobytes, not after the whole body.
    case requestBody
}
