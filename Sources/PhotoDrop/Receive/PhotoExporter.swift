import CouchServer
import CouchStore
import CouchWire
import Foundation
import MediaDecoding
import MediaSandbox
import Synchronization

/// Writes every attachment of every document committed to the drop database into the `--out` folder, as
/// the commits happen, whoever wrote them (a replicator, PouchDB, curl).
///
/// It follows the database's changes in-process (`waitForChange`), exports each live leaf's attachments,
/// and records its position and every exported file's md5 in `ExportState`, so a restart exports only what
/// is new and the same bytes are never written twice. Runs on a thread of its own.
final class PhotoExporter: Sendable {
    /// Totals for the progress line and the summary.
    struct Totals: Sendable, Equatable {
        var photos = 0
        var bytes = 0
        var duplicates = 0
        var failures = 0
        /// Attachments left in the database, not written to the folder (not a photo or a video by their
        /// bytes, an unknown encoding, past the session's gzip budget).
        var kept = 0
        /// The first `keptNamesShown` of them, `doc/attachment: reason`, for the summary.
        var keptNames: [String] = []
        /// Bytes written from gzip-encoded attachments (bounded by `ReceiveLimits.gzipExportBytes`).
        var inflatedBytes = 0
        var lastFile: String?
    }

    /// How many kept attachments the summary names (the rest are counted).
    static let keptNamesShown = 20

    /// Why an attachment is not written to the folder: not retried, counted in `kept`.
    private struct NotExported: Error {
        let reason: String
    }

    private let database: Database
    private let blobs: BlobStore
    private let folder: PhotoFolder
    private let log: Logger
    private let onExport: @Sendable (Totals, _ file: String, _ bytes: Int) -> Void
    private let onDiskFull: @Sendable (_ full: Bool) -> Void
    /// Reads each file's date taken (EXIF, QuickTime) in a sandboxed worker; nil: the document's `taken` only.
    private let media: MediaSandbox?
    private let shared = Mutex(Shared())
    private let finished = DispatchSemaphore(value: 0)

    private struct Shared {
        var totals = Totals()
        var exportedSeq = 0
        var stopAt: Int?
        var stopping = false
    }

    /// How many times one document's export is tried before it is skipped (and counted as a failure).
    static let attemptsPerDocument = 5

    /// How long the exporter waits before trying a photo again while the disk is full, in seconds.
    static let diskFullRetrySeconds = 1.0

    /// - Parameters:
    ///   - onExport: told of each photo saved.
    ///   - onDiskFull: told when saving stops on a full disk (`true`: the folder, or the data dir where the
    ///     position is kept) and when it carries on (`false`).
    init(
        database: Database, blobs: BlobStore, folder: PhotoFolder, log: Logger, media: MediaSandbox? = nil,
        onDiskFull: @escaping @Sendable (Bool) -> Void = { _ in },
        onExport: @escaping @Sendable (Totals, String, Int) -> Void
    ) {
        self.database = database
        self.blobs = blobs
        self.folder = folder
        self.log = log
        self.onDiskFull = onDiskFull
        self.onExport = onExport
        self.media = media
    }

    var totals: Totals { shared.withLock { $0.totals } }
    /// Every change up to this sequence is exported.
    var exportedSeq: Int { shared.withLock { $0.exportedSeq } }

    /// Loads the position, finishes what a crash interrupted, and starts following the changes.
    func start() throws {
        let state = ExportState(database: database)
        var seq = try state.position()
        // A database deleted and created again starts its sequences over; the recorded files still hold.
        if seq > database.updateSeq { seq = 0 }
        try folder.recover(state)
        let initial = seq
        shared.withLock { $0.exportedSeq = initial }
        // Held while the exporter follows the database: the bound on open databases leaves it open.
        let lease = try database.lease()
        let thread = Thread { [self] in
            run(state, from: initial)
            lease.release()
            finished.signal()
        }
        thread.name = "couchlite.receive.export"
        thread.start()
    }

    /// Exports everything committed so far, then stops.
    func drainAndStop() {
        let target = database.updateSeq
        shared.withLock {
            $0.stopAt = target
            $0.stopping = true
        }
        finished.wait()
    }

    private func run(_ state: ExportState, from initial: Int) {
        var seq = initial
        var backoff = Backoff(initial: .seconds(1), cap: .seconds(30))
        while true {
            let (stopping, stopAt) = shared.withLock { ($0.stopping, $0.stopAt) }
            if stopping, seq >= (stopAt ?? 0) { return }
            if database.isShutDown {
                // Deleted (`DELETE /db`): nothing more comes from it; asking it again would only fail again.
                log.warning(
                    "the drop database was deleted: photos sent from now on are not saved until receive restarts",
                    ["db": database.name])
                return
            }
            if database.updateSeq <= seq {
                if stopping { return }
                _ = database.waitForChange(after: seq, timeout: .milliseconds(250))
                continue
            }
            var rows: [ChangeRow] = []
            do {
                try database.changes(since: seq, limit: 100, descending: false) { row in
                    rows.append(row)
                    return true
                }
            } catch {
                log.warning("could not read changes", ["error": String(describing: error)])
                Thread.sleep(forTimeInterval: backoff.next().timeInterval)
                continue
            }
            backoff.reset()
            for row in rows {
                exportWithRetries(row, state)
                seq = row.seq
                let exported = seq
                shared.withLock { $0.exportedSeq = exported }
            }
            do {
                try state.savePosition(seq)
            } catch {
                log.warning("could not save the receive position", ["error": String(describing: error)])
            }
        }
    }

    private func exportWithRetries(_ row: ChangeRow, _ state: ExportState) {
        guard !row.id.hasPrefix("_design/") else { return }
        var attempt = 0
        var full = false
        defer { if full { onDiskFull(false) } }
        while attempt < PhotoExporter.attemptsPerDocument {
            do {
                try export(row, state)
                return
            } catch let error where PhotoExporter.isDiskFull(error) {
                // Not the photo's fault: wait for space as long as it takes (a stop still ends the wait).
                if !full {
                    full = true
                    log.warning(
                        "disk full, waiting for free space", ["doc": row.id, "error": String(describing: error)])
                    onDiskFull(true)
                }
                if shared.withLock({ $0.stopping }) {
                    shared.withLock { $0.totals.failures += 1 }
                    return
                }
                Thread.sleep(forTimeInterval: PhotoExporter.diskFullRetrySeconds)
            } catch {
                attempt += 1
                log.warning(
                    "export failed", ["doc": row.id, "attempt": String(attempt), "error": String(describing: error)])
                if attempt < PhotoExporter.attemptsPerDocument { Thread.sleep(forTimeInterval: 0.5) }
            }
        }
        shared.withLock { $0.totals.failures += 1 }
    }

    /// A full export folder (`ExportError`) or data dir (the position and md5 records are `_local` documents).
    static func isDiskFull(_ error: any Error) -> Bool {
        if let error = error as? ExportError { return error.isDiskFull }
        return StorageFailure.isDiskFull(error)
    }

    /// Exports the attachments of every live leaf of one document.
    private func export(_ row: ChangeRow, _ state: ExportState) throws {
        for revision in try database.leafRevisions(row.id) where !revision.deleted {
            var fields = JSONObject()
            if let body = revision.body, case .object(let object) = (try? JSON.parse(body)) ?? .null {
                fields = object
            }
            let mtime = PhotoTimestamp.seconds(in: fields)
            for attachment in revision.attachments {
                try export(attachment, docID: row.id, mtime: takenSeconds(attachment) ?? mtime, state)
            }
        }
    }

    /// When the file itself says it was taken (the camera's date beats the sender's word), for its mtime.
    private func takenSeconds(_ attachment: AttachmentInfo) -> Double? {
        guard let media, attachment.encoding == nil, blobs.exists(attachment.blobKey) else { return nil }
        let path = blobs.directory + "/" + attachment.blobKey.prefix(2) + "/" + attachment.blobKey
        return (try? media.probe(path: path).get())?.takenSeconds
    }

    private func export(_ attachment: AttachmentInfo, docID: String, mtime: Double?, _ state: ExportState) throws {
        do {
            try exportChecked(attachment, docID: docID, mtime: mtime, state)
        } catch let refused as NotExported {
            log.info(
                "kept in the database, not saved", ["doc": docID, "attachment": attachment.name, "why": refused.reason])
            shared.withLock { shared in
                shared.totals.kept += 1
                if shared.totals.keptNames.count < Self.keptNamesShown {
                    shared.totals.keptNames.append("\(docID)/\(attachment.name): \(refused.reason)")
                }
            }
        }
    }

    private func exportChecked(_ attachment: AttachmentInfo, docID: String, mtime: Double?, _ state: ExportState)
        throws
    {
        // Stored bytes that are not encoded are the file's bytes, and the blob key is their md5.
        if attachment.encoding == nil, try state.fileName(md5: attachment.blobKey) != nil {
            shared.withLock { $0.totals.duplicates += 1 }
            return
        }
        if let encoding = attachment.encoding, encoding != "gzip" {
            throw NotExported(reason: "unknown encoding \(encoding)")
        }
        let reader = try blobs.openReader(attachment.blobKey)
        defer { reader.close() }
        // Only photos and videos, recognised by their bytes, go to the folder: a name or a content type says
        // nothing (`autorun.inf`, `x.desktop`, an HTML page named `photo.jpg`).
        guard let kind = ContentSniffer.sniff(try Self.decodedPrefix(reader, encoding: attachment.encoding)) else {
            throw NotExported(reason: "not a photo or a video")
        }
        // A gzip attachment decodes to at most its declared length (checked when it was stored). Photos and videos
        // do not compress, so no sender's gzip expands them much: past `gzipExpansion` times its stored size, or the
        // session's `gzipExportBytes`, it is a bomb, not a photo.
        var limit = Int.max
        if attachment.encoding != nil {
            let stored = reader.length
            let budget = ReceiveLimits.gzipExportBytes - shared.withLock { $0.totals.inflatedBytes }
            guard attachment.length >= 0,
                attachment.length <= stored * ReceiveLimits.gzipExpansion + ReceiveLimits.gzipSlackBytes
            else {
                throw NotExported(reason: "gzip-encoded, \(stored) bytes declaring \(attachment.length): a bomb")
            }
            guard attachment.length <= budget else {
                throw NotExported(reason: "gzip-encoded, past the session's \(ReceiveLimits.gzipExportBytes) bytes")
            }
            limit = attachment.length
        }
        let wanted = PhotoFileName.make(attachment: attachment.name, docID: docID, kind: kind)
        let written = try folder.writePart(attachment.blobKey, mtime: mtime) { write in
            try Self.stream(reader, encoding: attachment.encoding, limit: limit, write)
        }
        if attachment.encoding != nil { shared.withLock { $0.totals.inflatedBytes += written.length } }
        if try state.fileName(md5: written.md5) != nil {
            folder.discardPart(written.md5)
            shared.withLock { $0.totals.duplicates += 1 }
            return
        }
        var (name, counter) = folder.freeName(wanted)
        // Journal first: the name is recorded before it appears, so a crash in between is finished on restart.
        try state.recordFile(md5: written.md5, name: name)
        while try !folder.publish(written.md5, as: name) {
            (name, counter) = folder.freeName(wanted, from: counter + 1)
            try state.recordFile(md5: written.md5, name: name)
        }
        let totals = shared.withLock { shared -> Totals in
            shared.totals.photos += 1
            shared.totals.bytes += written.length
            shared.totals.lastFile = name
            return shared.totals
        }
        onExport(totals, name, written.length)
    }

    /// The first bytes of the attachment's content, for the sniffer (decoding stops once they are there).
    private static func decodedPrefix(_ reader: BlobReader, encoding: String?) throws -> [UInt8] {
        let raw = try reader.read(at: 0, upTo: encoding == nil ? ContentSniffer.prefixBytes : 4096)
        guard encoding == "gzip" else { return raw }
        struct Enough: Error {}
        let decoder = try GzipDecoder(limit: 1 << 20)
        var head: [UInt8] = []
        try? raw.withUnsafeBytes { buffer in
            try decoder.decode(buffer) { step in
                head.append(contentsOf: step.prefix(ContentSniffer.prefixBytes - head.count))
                if head.count >= ContentSniffer.prefixBytes { throw Enough() }
            }
        }
        return head
    }

    /// Sends the attachment's content (decoded when it is stored gzipped, at most `limit` bytes) to `write` in
    /// chunks of at most 1 MiB read and 64 KiB decoded: memory stays bounded however far the content expands.
    private static func stream(
        _ reader: BlobReader, encoding: String?, limit: Int, _ write: ([UInt8]) throws -> Void
    ) throws {
        let chunk = 1 << 20
        let decoder = encoding == "gzip" ? try GzipDecoder(limit: limit) : nil
        var offset = 0
        do {
            while offset < reader.length {
                let bytes = try reader.read(at: offset, upTo: chunk)
                guard !bytes.isEmpty else { break }
                offset += bytes.count
                if let decoder {
                    try bytes.withUnsafeBytes { try decoder.decode($0) { try write(Array($0)) } }
                } else {
                    try write(bytes)
                }
            }
            guard offset == reader.length else { throw ExportError.unreadable("attachment shorter than stored") }
            try decoder?.finish()
        } catch GzipError.limitExceeded {
            throw NotExported(reason: "decodes to more than its declared length \(limit)")
        } catch let error as GzipError {
            throw NotExported(reason: "not valid gzip (\(error))")
        }
    }
}
