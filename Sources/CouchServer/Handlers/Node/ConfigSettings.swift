import CouchWire
import Foundation

/// The settings `/_node/{node}/_config` shows and changes: the ones couchlite really has, under CouchDB's section
/// and key names, each read from and written to the live value the handlers use, so the next request sees a
/// change. A key not listed here does not exist: reading, writing or deleting it answers as CouchDB answers for
/// an unknown key (404 `unknown_config_value`), never a pretended store.
///
/// Changes last until the server stops and are not written anywhere: couchlite's configuration is its command
/// line and environment, which a restart reads again (a file here would silently outvote them). `DELETE` of a
/// key puts back the value the server started with.
struct ConfigSettings: Sendable {
    /// One setting.
    struct Entry: Sendable {
        let section: String
        let key: String
        /// The value now, as CouchDB shows config values: a string.
        let read: @Sendable () -> String
        /// Applies `value`, or throws (400) leaving the setting as it was.
        let write: @Sendable (String) throws(CouchError) -> Void
        /// Puts back the value the server started with.
        let reset: @Sendable () -> Void
    }

    let entries: [Entry]

    init(log: Logger, access: AccessControl, replicator: ReplicatorSettings) {
        let live = Limits.live
        var entries = [
            Self.integer("couchdb", "max_document_size", live.documentBytes),
            Self.integer("couchdb", "max_attachment_size", live.attachmentRequestBytes),
            Self.integer("chttpd", "max_http_request_size", live.bulkRequestBytes),
            Self.integer("chttpd", "max_db_number_for_dbs_info_req", live.maxDatabasesPerInfoRequest),
            Self.integer("chttpd_auth", "timeout", live.sessionSeconds),
            Self.integer("uuids", "max_count", live.maxUUIDCount),
            Self.integer("purge", "max_document_id_number", live.maxPurgeDocuments),
            Self.integer("purge", "max_revisions_number", live.maxPurgeRevisions),
        ]
        let threshold = log.threshold
        entries.append(
            Entry(
                section: "log", key: "level", read: { threshold.level.rawValue },
                write: { value throws(CouchError) in threshold.level = try Self.logLevel(value) },
                reset: { threshold.level = threshold.initial }))
        entries += Self.cors(access)
        entries += Self.replicator(replicator)
        self.entries = entries
    }

    /// The entry for `section`/`key`.
    /// - Throws: 404 `unknown_config_value` for a key couchlite does not have.
    func entry(_ section: String, _ key: String) throws(CouchError) -> Entry {
        guard let entry = entries.first(where: { $0.section == section && $0.key == key }) else {
            throw .notFound("unknown_config_value")
        }
        return entry
    }

    /// `{section: {key: value}}` of every setting, or `{key: value}` of one section (`{}` for one couchlite does
    /// not have, as CouchDB answers for an empty section).
    func json(section: String? = nil) -> JSON {
        var sections = JSONObject()
        for entry in entries where section == nil || entry.section == section {
            var keys = sections[entry.section]?.objectValue ?? JSONObject()
            keys[entry.key] = .string(entry.read())
            sections[entry.section] = .object(keys)
        }
        guard let section else { return .object(sections) }
        return sections[section] ?? .object(JSONObject())
    }

    /// A positive integer limit: any up to Int.max is taken, as CouchDB takes any integer; where a huge one is used
    /// it is held to what the machine can do (`AuthLimits.longestSessionSeconds`, `Limits.heldBodyCeiling`,
    /// `Limits.uuidCountCeiling`), never used in arithmetic that traps.
    static func integer(_ section: String, _ key: String, _ setting: LiveInt) -> Entry {
        Entry(
            section: section, key: key, read: { String(setting.value) },
            write: { value throws(CouchError) in
                guard let number = Int(value), number > 0 else {
                    throw .badRequest("[\(section)] \(key) must be a positive integer")
                }
                setting.set(number)
            },
            reset: { setting.set(setting.initial) })
    }

    /// CouchDB's level names that couchlite has (it logs at four levels; `warn` and `err` are CouchDB's aliases).
    static func logLevel(_ value: String) throws(CouchError) -> LogLevel {
        let aliases = ["warn": LogLevel.warning, "err": .error]
        guard let level = LogLevel(rawValue: value) ?? aliases[value] else {
            throw .badRequest("[log] level must be one of debug, info, warning, error")
        }
        return level
    }

    /// `[chttpd] enable_cors`, `[cors] origins` (comma-separated, `*` for any) and `[cors] credentials`
    /// (`true`, `false`, or couchlite's `any-origin`: see `CORSPolicy`). CORS is on while enabled with origins.
    private static func cors(_ access: AccessControl) -> [Entry] {
        let enabled = LiveValue(!access.initialCORS.origins.isEmpty)
        let origins = LiveValue(access.initialCORS.origins)
        let apply: @Sendable () -> Void = {
            access.cors.origins = enabled.value ? origins.value : []
        }
        return [
            Entry(
                section: "chttpd", key: "enable_cors", read: { String(enabled.value) },
                write: { value throws(CouchError) in
                    guard let flag = Bool(value) else {
                        throw .badRequest("[chttpd] enable_cors must be true or false")
                    }
                    enabled.value = flag
                    apply()
                },
                reset: {
                    enabled.value = !access.initialCORS.origins.isEmpty
                    apply()
                }),
            Entry(
                section: "cors", key: "origins", read: { origins.value.joined(separator: ",") },
                write: { value in
                    origins.value = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                        !$0.isEmpty
                    }
                    apply()
                },
                reset: {
                    origins.value = access.initialCORS.origins
                    apply()
                }),
            Entry(
                section: "cors", key: "credentials", read: { access.cors.credentials.rawValue },
                write: { value throws(CouchError) in
                    guard let credentials = CORSPolicy.Credentials(rawValue: value) else {
                        throw .badRequest("[cors] credentials must be true, false or any-origin")
                    }
                    access.cors.credentials = credentials
                },
                reset: { access.cors.credentials = access.initialCORS.credentials }),
        ]
    }
}
