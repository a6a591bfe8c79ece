/// One step of a multipart body, as ``MultipartParser`` reports it.
///
/// A body yields `partBegin`, any number of `bodyChunk`s, `partEnd` per part, then `end` once
/// the closing boundary has been read. Chunks arrive as the bytes do; a part is never collected.
public enum MultipartEvent: Sendable {
    /// A part starts; its headers in the order sent, names as sent, values trimmed.
    case partBegin(headers: [(String, String)])
    /// The next bytes of the current part's body (never empty).
    case bodyChunk([UInt8])
    /// The current part's body is complete.
    case partEnd
    /// The closing boundary was read; anything after it is an ignored epilogue.
    case end
}
