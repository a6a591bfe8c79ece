import CouchServer
import CouchWire
import Foundation

/// When a photo was taken, from its document (`taken` or `taken_at`, else `mtime`, else `date`), for the exported file's
/// modification time.
///
/// A number is seconds since 1970, or milliseconds when it is too large to be seconds (JavaScript's
/// `Date.now()`); a string is ISO 8601 (`2024-05-01T12:34:56Z`, with fractions or an offset), or EXIF's
/// `2024:05:01 12:34:56` taken as UTC. Anything else, or a time before 1970 or after 9999, is ignored.
public enum PhotoTimestamp {
    public static let fields = ["taken", "taken_at", "mtime", "date"]
    /// Above this a number is taken as milliseconds (1e11 seconds is the year 5138).
    static let millisecondThreshold = 1e11
    static let latest = 253_402_300_799.0  // 9999-12-31T23:59:59Z

    /// Seconds since 1970 from the first of `fields` that holds a usable time.
    public static func seconds(in document: JSONObject) -> Double? {
        for field in fields {
            if let value = document[field], let seconds = seconds(value) { return seconds }
        }
        return nil
    }

    static func seconds(_ value: JSON) -> Double? {
        var seconds: Double?
        switch value {
        case .number(let number):
            if let double = number.doubleValue {
                seconds = abs(double) >= millisecondThreshold ? double / 1000 : double
            }
        case .string(let text): seconds = parse(text)
        default: break
        }
        guard let seconds, seconds.isFinite, seconds >= 0, seconds <= latest else { return nil }
        return seconds
    }

    static func parse(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.utf8.count <= 40 else { return nil }
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = iso.date(from: trimmed) { return date.timeIntervalSince1970 }
        iso.formatOptions = [.withInternetDateTime]
        if let date = iso.date(from: trimmed) { return date.timeIntervalSince1970 }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        for format in ["yyyy:MM:dd HH:mm:ss", "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return date.timeIntervalSince1970 }
        }
        return nil
    }
}
