import CZlib

/// One-shot gzip (RFC 1952) decoding over zlib. For streams use ``GzipDecoder``.
public enum Gzip {
    /// Decompresses a whole gzip body.
    /// - Parameters:
    ///   - bytes: One or more concatenated gzip members.
    ///   - limit: Most decoded bytes to accept, in bytes.
    /// - Returns: The decoded bytes.
    /// - Throws: ``GzipError``: `.corrupt`, `.truncated`, or `.limitExceeded`.
    public static func decompress(_ bytes: [UInt8], limit: Int) throws(GzipError) -> [UInt8] {
        let decoder = try GzipDecoder(limit: limit)
        let output = try decoder.decode(bytes)
        try decoder.finish()
        return output
    }
}
