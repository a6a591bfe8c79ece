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
    /// - Returns: The value.
    /// - Throws: ``JSONError`` with the kind of violation and its byte offset.
    public static func parse(
        _ bytes: UnsafeRawBufferPointer, maxDepth: Int = JSON.defaultMaxDepth
    ) throws(JSONError) -> JSON {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    /// Parses one JSON text; see ``parse(_:maxDepth:)-(UnsafeRawBufferPointer,_)``.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = JSON.defaultMaxDepth) throws(JSONError) -> JSON {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONError) -> JSON in try parse(buffer, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// Parses one JSON text; see ``parse(_:maxDepth:)-(UnsafeRawBufferPointer,_)``.
    public static func parse(_ bytes: ArraySlice<UInt8>, maxDepth: Int = JSON.defaultMaxDepth) throws(JSONError) -> JSON
    {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(JSONError) -> JSON in try parse(buffer, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// Parses one JSON text from a string's UTF-8; see ``parse(_:maxDepth:)-(UnsafeRawBufferPointer,_)``.
    public static func parse(_ string: String, maxDepth: Int = JSON.defaultMaxDepth) throws(JSONError) -> JSON {
        var string = string
        let result = string.withUTF8 { buffer in
            Result { () throws(JSONError) -> JSON in try parse(UnsafeRawBufferPointer(buffer), maxDepth: maxDepth) }
        }
        return try result.get()
    }
}
