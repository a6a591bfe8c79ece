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

/// One step of a multipart body whose part bytes are lent, not copied (``MultipartParser/parse(borrowing:_:)``).
///
/// The same sequence as ``MultipartEvent``, except that a part's bytes may come in more, smaller pieces: a
/// delimiter prefix held back from the previous input, then the new input's bytes.
public enum MultipartBorrowedEvent {
    /// A part starts; its headers in the order sent, names as sent, values trimmed.
    case partBegin(headers: [(String, String)])
    /// The next bytes of the current part's body (never empty); valid only during the call that receives them.
    case bodyBytes(UnsafeRawBufferPointer)
    /// The current part's body is complete.
    case partEnd
    /// The closing boundary was read; anything after it is an ignored epilogue.
    case end
}
