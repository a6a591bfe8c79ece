/// Reads the boundary out of a multipart `Content-Type` header.
public struct MultipartBoundary {
    /// Parses `multipart/related; boundary="abc"` and its variants: quoted or bare boundary,
    /// other parameters in any order, parameter names in any case.
    ///
    /// See RFC 2046 §5.1.1 for the boundary grammar.
    /// - Parameter contentType: The request's `Content-Type` value.
    /// - Returns: The media type in lowercase (`multipart/related`) and the boundary bytes
    ///   (without the leading `--`).
    /// - Throws: `.notMultipart` for another media type, `.missingBoundary`, or
    ///   `.invalidBoundary` for an empty, over-long or ill-formed boundary.
    public static func parse(contentType: String) throws(MultipartError) -> (mediaType: String, boundary: [UInt8]) {
        let value = MultipartHeaderValue(parsing: contentType)
        guard value.value.hasPrefix("multipart/"), value.value.count > "multipart/".count else {
            throw .notMultipart(mediaType: value.value)
        }
        guard let boundary = value.parameter("boundary") else { throw .missingBoundary }
        let bytes = Array(boundary.utf8)
        guard isValid(bytes) else { throw .invalidBoundary }
        return (value.value, bytes)
    }

    /// Whether `bytes` is a boundary RFC 2046 allows: 1 to 70 of its `bchars`, not ending in a
    /// space.
    static func isValid(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty, bytes.count <= MultipartLimits.maxBoundaryLength, bytes.last != UInt8(ascii: " ")
        else { return false }
        return bytes.allSatisfy(isBoundaryCharacter)
    }

    private static func isBoundaryCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"):
            true
        default:
            // bchars other than digits and letters: '()+_,-./:=? and space.
            Array("'()+_,-./:=? ".utf8).contains(byte)
        }
    }
}
