import CouchServer
import Foundation
import MediaSandbox
import Synchronization
import Thumbnails

/// What the gallery keeps for the server's life: the media sandbox that reads every photo and video, the
/// thumbnail and preview caches under `<data-dir>/thumbnails` and `<data-dir>/previews`, what each file said
/// about itself under `<data-dir>/media`, each database's timeline, the unfinished resumable uploads under
/// `<data-dir>/uploads` and the albums' summaries.
final class GalleryState: Sendable {
    let sandbox: MediaSandbox
    let thumbnails: ThumbnailCache
    let previews: ThumbnailCache
    let catalog: MediaCatalog
    let uploads: ResumableUploads
    let albums = AlbumSummaries()
    private let timelines = Mutex<[String: PhotoTimeline]>([:])

    init(dataDir: String, sandbox: MediaSandbox = MediaSandbox()) {
        self.sandbox = sandbox
        let render: ThumbnailCache.Render = { path, size in
            sandbox.render(path: path, maxSide: size).mapError { Thumbnailer.Failure(description: $0.description) }
        }
        thumbnails = ThumbnailCache(directory: dataDir + "/thumbnails", render: render)
        previews = ThumbnailCache(directory: dataDir + "/previews", render: render)
        catalog = MediaCatalog(directory: dataDir + "/media", sandbox: sandbox)
        uploads = ResumableUploads(directory: dataDir + "/uploads")
        // What expired while the server was down goes now, not at the next upload.
        uploads.sweep()
    }

    /// The timeline of the database `name` (one per database for the server's life; a few bytes a photo).
    func timeline(_ name: String) -> PhotoTimeline {
        timelines.withLock { timelines in
            if let timeline = timelines[name] { return timeline }
            let timeline = PhotoTimeline()
            timelines[name] = timeline
            return timeline
        }
    }

    /// Thumbnail sizes served (longer side, pixels); a request is rounded up to one of them, so the
    /// cache holds a few files per photo whatever clients ask for.
    static let sizes = [160, 320, 640, 1280]

    /// The viewer's preview is the photo at its own size, up to this many pixels on its longer side (a 50 Mpx
    /// panorama is shown at 8192).
    static let previewSide = 8192

    static func thumbnailSize(_ asked: Int?) -> Int {
        guard let asked else { return 320 }
        return sizes.first { $0 >= asked } ?? sizes[sizes.count - 1]
    }
}
