#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reason phrases and the `Date` header value for response heads.
enum HTTPStatus {
    /// The reason phrase sent after a status code (RFC 9110 §15); unknown codes get an empty phrase.
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Object Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Request Entity Too Large"
        case 414: "Request-URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Requested Range Not Satisfiable"
        case 417: "Expectation Failed"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: ""
        }
    }

    /// The current time as an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110 §5.6.7).
    static func currentDate() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let day = days[Int(parts.tm_wday) % 7]
        let month = months[Int(parts.tm_mon) % 12]
        return "\(day), \(two(parts.tm_mday)) \(month) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// Serialises a status line and header fields, ending with the empty line.
    static func serializeHead(status: Int, headers: HTTPHeaders) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// A complete error response with a CouchDB-style JSON body and `Connection: close`.
    static func errorResponse(_ error: HTTPError, serverHeader: String) -> [UInt8] {
        let body = error.jsonBody
        let headers = HTTPHeaders([
            ("Server", serverHeader), ("Date", currentDate()), ("Content-Type", "application/json"),
            ("Content-Length", String(body.count)), ("Connection", "close"),
        ])
        return serializeHead(status: error.status, headers: headers) + body
    }
}
