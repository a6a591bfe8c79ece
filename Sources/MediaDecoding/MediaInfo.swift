import Foundation

/// What a photo or video says about itself (its headers and metadata; no pixel decoded): kind, displayed size,
/// duration, when and with what it was taken, where. Crosses the media worker's pipe as JSON.
public struct MediaInfo: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable { case photo, video }

    public var kind: Kind
    /// "jpeg", "png", "heic", "avif", "mp4", "webm"…
    public var format: String
    /// Size as displayed (orientation or rotation applied), in pixels.
    public var width: Int?
    public var height: Int?
    /// Seconds, for videos.
    public var duration: Double?
    /// When it was taken as the camera wrote it, "YYYY-MM-DDTHH:MM:SS" in its local time.
    public var takenLocal: String?
    /// That time's UTC offset ("+02:00"), "Z" for UTC, nil when the camera did not say.
    public var offset: String?
    public var make: String?
    public var model: String?
    public var latitude: Double?
    public var longitude: Double?
    /// Apple's content identifier, the same in both halves of a Live Photo.
    public var contentID: String?

    public init(kind: Kind, format: String) {
        self.kind = kind
        self.format = format
    }

    /// `taken` as ISO 8601: with its offset when the camera gave one ("2026-05-12T14:03:11+02:00"), else without
    /// (a local time of unknown zone).
    public var takenISO: String? {
        guard let takenLocal else { return nil }
        return takenLocal + (offset ?? "")
    }

    /// The instant taken, seconds since 1970; a local time of unknown zone is read as UTC (as the exporter
    /// and `PhotoTimestamp` read EXIF's).
    public var takenSeconds: Double? {
        guard let takenLocal else { return nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        guard let local = formatter.date(from: takenLocal) else { return nil }
        return (local.timeIntervalSince1970 - Double(Self.offsetSeconds(offset ?? "Z"))).rounded()
    }

    /// "+02:00" as 7200, "Z" or anything malformed as 0.
    static func offsetSeconds(_ offset: String) -> Int {
        let bytes = Array(offset.utf8)
        guard bytes.count == 6, bytes[0] == UInt8(ascii: "+") || bytes[0] == UInt8(ascii: "-"),
            let hours = Int(String(decoding: bytes[1...2], as: UTF8.self)),
            let minutes = Int(String(decoding: bytes[4...5], as: UTF8.self))
        else { return 0 }
        let seconds = hours * 3600 + minutes * 60
        return bytes[0] == UInt8(ascii: "-") ? -seconds : seconds
    }
}
