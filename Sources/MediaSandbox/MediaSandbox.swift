import Foundation
import MediaDecoding
import QueryServer

/// The server's way to read photos and videos: every decoder (JPEG, PNG, HEIF, AVIF, video, EXIF) runs in a
/// `couchlite media-worker` process from a small pool, started with posix_spawn and no inherited descriptors,
/// capped in address space and CPU seconds, and killed and replaced when a call passes its deadline. A hostile
/// file costs one worker, never the server: a crash, a hang or an allocation past the cap is a refused file.
public final class MediaSandbox: Sendable {
    /// Why a file could not be read: it was refused (not a format read here, corrupt, beyond the limits), or the
    /// worker reading it died or ran out of time (a hostile file, as far as the server can tell).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
        /// The worker was killed (timeout) or died (crash, memory cap) on this file.
        public var workerLost: Bool
    }

    public struct Configuration: Sendable {
        /// The executable with the hidden `media-worker` subcommand (this process's own by default, or in a test
        /// bundle the `couchlite` beside it).
        public var executable = QueryServerConfiguration.currentExecutable
        /// Workers at once: one per core, as decodes are CPU-bound.
        public var maxWorkers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        /// Longest one file may take (a 50 Mpx HEIC decodes in ~2 s on a slow core).
        public var timeout: Duration = .seconds(20)
        /// A worker's address space: a 50 Mpx photo's frame (150 MB RGB, its YUV planes and libheif's tiles)
        /// with room to spare, far below what would hurt the server.
        public var addressSpaceBytes = 1536 << 20
        public var cpuSeconds = 60
        public var limits = MediaDecoder.Limits()

        public init() {}
    }

    private let pool: QueryServerPool
    private let configuration: Configuration

    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
        var limits = WorkerLimits()
        limits.addressSpaceBytes = configuration.addressSpaceBytes
        limits.cpuSeconds = configuration.cpuSeconds
        var pool = QueryServerConfiguration(
            executable: configuration.executable, maxWorkers: configuration.maxWorkers, timeout: configuration.timeout,
            limits: limits, maxPayload: 64 << 20, maxCallsPerWorker: 500)
        pool.subcommand = "media-worker"
        pool.passesDescriptors = true
        self.pool = QueryServerPool(pool)
    }

    /// Workers started so far (a killed worker's replacement counts).
    public var workersStarted: Int { pool.workersStarted }

    /// What the file at `path` says about itself.
    public func probe(path: String) -> Result<MediaInfo, Failure> {
        call(MediaRequest(op: .probe, limits: configuration.limits), file: path).flatMap { payload in
            guard let info = try? JSONDecoder().decode(MediaInfo.self, from: Data(payload)) else {
                return .failure(Failure(description: "bad answer from the media worker", workerLost: false))
            }
            return .success(info)
        }
    }

    /// A JPEG of the file at `path` at most `maxSide` pixels on its longer side, oriented as displayed.
    public func render(path: String, maxSide: Int, quality: Int = 82) -> Result<[UInt8], Failure> {
        call(
            MediaRequest(op: .render, maxSide: maxSide, quality: quality, limits: configuration.limits), file: path)
    }

    /// Opens `path` here and hands the worker the open file with `request`: the worker has no file system.
    private func call(_ request: MediaRequest, file path: String) -> Result<[UInt8], Failure> {
        guard let body = try? JSONEncoder().encode(request) else {
            return .failure(Failure(description: "cannot encode the request", workerLost: false))
        }
        // Non-blocking, so a FIFO in a watched folder cannot hang the open; only a regular file is handed over.
        let file = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard file >= 0 else {
            return .failure(Failure(description: "cannot open the file", workerLost: false))
        }
        defer { close(file) }
        var status = stat()
        guard fstat(file, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            return .failure(Failure(description: "not a regular file", workerLost: false))
        }
        let timeout = configuration.timeout
        do {
            let answer = try pool.withWorker { worker, deadline throws(QueryServerError) in
                try worker.call([UInt8](body), passing: file, deadline: deadline, timeout: timeout)
            }
            guard let status = answer.first else {
                return .failure(Failure(description: "empty answer from the media worker", workerLost: false))
            }
            let payload = Array(answer.dropFirst())
            guard status == 0 else {
                return .failure(Failure(description: String(decoding: payload, as: UTF8.self), workerLost: false))
            }
            return .success(payload)
        } catch {
            return .failure(Failure(description: error.reason, workerLost: true))
        }
    }
}
