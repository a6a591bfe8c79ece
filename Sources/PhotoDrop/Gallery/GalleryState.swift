import CouchServer
import Thumbnails

/// What the gallery keeps for the server's life: the thumbnail cache under `<data-dir>/thumbnails`, the
/// unfinished resumable uploads under `<data-dir>/uploads` and the albums' summaries.
final class GalleryState: Sendable {
    let thumbnails: ThumbnailCache
    let uploads: ResumableUploads
    let albums = AlbumSummaries()

    init(dataDir: String) {
        thumbnails = ThumbnailCache(directory: dataDir + "/thumbnails")
        uploads = ResumableUploads(directory: dataDir + "/uploads")
        // What expired while the server was down goes now, not at the next upload.
        uploads.sweep()
    }

    /// Thumbnail sizes served (longer side, pixels); a request is rounded up to one of them, so the
    /// cache holds a few files per photo whatever clients ask for.
    static let sizes = [160, 320, 640, 1280]

    static func thumbnailSize(_ asked: Int?) -> Int {
        guard let asked else { return 320 }
        return sizes.first { $0 >= asked } ?? sizes[sizes.count - 1]
    }
}
