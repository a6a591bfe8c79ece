import CProcess
import Foundation
import MediaDecoding
import QueryServer

/// The worker side of the media sandbox: `couchlite media-worker` answers framed requests (`MediaRequest`) with
/// `MediaDecoder`, under the limits it was started with, until its input ends. The server starts workers with
/// `MediaSandbox`; nothing else should.
public enum MediaWorker {
    /// The worker's end of its descriptor channel: the server hands it each file here, open, before the request
    /// that reads it (the worker has no file system to open a path in).
    static let channel: Int32 = 3

    public static func run(_ arguments: [String]) -> Int32 {
        QueryWorker.serve(arguments, name: "media-worker") { _ throws(QueryServerError) in
            guard MediaDecoder.prepare() else { throw .workerFailed("libheif cannot start") }
            return handle
        }
    }

    static func handle(_ frame: [UInt8]) -> [UInt8] {
        // Every request comes with its file: a frame that is not a request leaves the channel out of step, so the
        // worker ends (the pool starts another) rather than read the next request's file for this one.
        guard let request = try? JSONDecoder().decode(MediaRequest.self, from: Data(frame)) else { exit(65) }
        let file = couchlite_receive_descriptor(channel)
        guard file >= 0 else { exit(65) }
        defer { close(file) }
        switch request.op {
        case .probe:
            switch MediaDecoder.probe(descriptor: file, limits: request.limits) {
            case .success(let info):
                guard let json = try? JSONEncoder().encode(info) else { return MediaResponse.failure("cannot encode") }
                return MediaResponse.success([UInt8](json))
            case .failure(let failure): return MediaResponse.failure(failure.description)
            }
        case .render:
            let result = MediaDecoder.render(
                descriptor: file, maxSide: request.maxSide ?? 320, quality: request.quality ?? 82,
                limits: request.limits)
            switch result {
            case .success(let jpeg): return MediaResponse.success(jpeg)
            case .failure(let failure): return MediaResponse.failure(failure.description)
            }
        }
    }
}

/// One request to a media worker (JSON): read what a file says about itself, or render it as a JPEG. The file
/// itself comes open on the worker's descriptor channel, never as a path.
struct MediaRequest: Codable {
    enum Operation: String, Codable { case probe, render }
    var op: Operation
    var maxSide: Int?
    var quality: Int?
    var limits: MediaDecoder.Limits
}

/// A media worker's answer: one status byte (0 done, 1 the file was refused), then the payload: the JSON of a
/// `MediaInfo`, a JPEG's bytes, or why it was refused (UTF-8). Binary, so a JPEG crosses the pipe as it is.
enum MediaResponse {
    static func success(_ payload: [UInt8]) -> [UInt8] { [0] + payload }
    static func failure(_ reason: String) -> [UInt8] { [1] + Array(reason.utf8.prefix(500)) }
}
