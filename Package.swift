// swift-tools-version:6.0
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "couchlite",
    products: [
        .executable(name: "couchlite", targets: ["couchlite"])
    ],
    targets: [
        // C libraries from Debian, reached through system-library targets.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"])]),
        // QR codes for `couchlite receive`.
        .systemLibrary(name: "CQRencode", path: "Sources/CQRencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CJPEG", path: "Sources/CJPEG", providers: [.apt(["libjpeg62-turbo-dev"])]),
        .systemLibrary(name: "CPNG", path: "Sources/CPNG", providers: [.apt(["libpng-dev"])]),
        // HEIF/AVIF (libheif and its libde265/dav1d/aom plugins), video (FFmpeg) and EXIF (libexif): linked only
        // through MediaDecoding, which only the sandboxed media worker runs on a file.
        .systemLibrary(name: "CHeif", path: "Sources/CHeif", providers: [.apt(["libheif-dev"])]),
        // WebP, still and animated (libwebp's decoder and demuxer): its reference library.
        .systemLibrary(name: "CWebP", path: "Sources/CWebP", providers: [.apt(["libwebp-dev"])]),
        .systemLibrary(
            name: "CFFmpeg", path: "Sources/CFFmpeg",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswscale-dev", "libavutil-dev"])]),
        .systemLibrary(name: "CExif", path: "Sources/CExif", providers: [.apt(["libexif-dev"])]),
        // Duktape, the embedded JavaScript engine of the query-server workers.
        .systemLibrary(name: "CDuktape", path: "Sources/CDuktape", providers: [.apt(["duktape-dev"])]),
        // Perl-compatible regular expressions for Mango's `$regex` (CouchDB uses Erlang's `re`, which is PCRE).
        .systemLibrary(name: "CPCRE2", path: "Sources/CPCRE2", providers: [.apt(["libpcre2-dev"])]),
        // posix_spawn with closefrom, prctl and setrlimit for the query-server workers.
        .systemLibrary(name: "CProcess", path: "Sources/CProcess"),
        // glibc's <malloc.h>, for arena tuning in the server.
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),

        // A callback that threads set and call (CallbackSlot): the one shape in which a closure is kept behind a lock.
        .target(name: "Callbacks", swiftSettings: swiftSettings),
        // Digests, HMAC, key derivation and secure random bytes over libcrypto.
        .target(name: "CouchCrypto", dependencies: ["COpenSSL"], swiftSettings: swiftSettings),
        // HTTP/1.1 (plain or over TLS with libssl), JSON, multipart and CouchDB wire formats. Knows nothing of storage
        // or of queries.
        .target(name: "CouchWire", dependencies: ["CouchCrypto", "COpenSSL", "CZlib"], swiftSettings: swiftSettings),
        // BLIP 3, the message protocol Couchbase Lite 3 replicates over (inside WebSocket binary messages): frames,
        // properties, the per-direction CRC and deflate stream, flow control by ACKs. Pure: no sockets, no HTTP.
        .target(name: "Blip", dependencies: ["CZlib"], swiftSettings: swiftSettings),
        // The query language over JSON: Mango selectors (matching, normalization, `$regex` over PCRE2, Erlang-style
        // error text), CouchDB's view collation and the built-in reducers (`_sum`, `_count`, `_stats`,
        // `_approx_count_distinct`). Pure: no storage, no HTTP.
        .target(name: "CouchQuery", dependencies: ["CouchWire", "CPCRE2"], swiftSettings: swiftSettings),
        // Revision trees, pure: CouchDB's key-tree merge, stemming and purge, winners and conflicts, rev ids and
        // the revision hash (over the Erlang term of the body, as CouchDB computes it). No storage, no HTTP.
        .target(name: "RevTree", dependencies: ["CouchCrypto"], swiftSettings: swiftSettings),
        // The storage engine: databases in SQLite (one writer queue, a pool of readers, the changes feed and its
        // waiters, purge), the open-database cache, attachment blobs on disk with their trash, and the view index
        // files. Stores revision trees; knows nothing of HTTP.
        .target(
            name: "CouchStore", dependencies: ["RevTree", "CSQLite", "CouchCrypto", "Callbacks"],
            swiftSettings: swiftSettings),
        // DNS-SD over mDNS (RFC 6762/6763): the DNS message codec, our own responder that announces a drop or a
        // server on the LAN, and the browser behind `couchlite peers`. Knows nothing of HTTP or storage.
        .target(name: "Discovery", swiftSettings: swiftSettings),
        // CouchDB's replication protocol between two endpoints, over our own HTTP client.
        .target(name: "Replicator", dependencies: ["CouchWire", "CouchCrypto"], swiftSettings: swiftSettings),
        // JavaScript design functions (filters, validate_doc_update, map/reduce) in pooled worker processes.
        .target(
            name: "QueryServer", dependencies: ["CDuktape", "CProcess", "CouchWire"], swiftSettings: swiftSettings),
        // Decoding, downscaling and orienting photos in C (libjpeg and libpng report errors by longjmp).
        .target(name: "CThumbnail", dependencies: ["CJPEG", "CPNG"]),
        // Thumbnails of photos and their cache on disk. Knows nothing of HTTP.
        .target(name: "Thumbnails", dependencies: ["CThumbnail", "CJPEG", "CPNG"], swiftSettings: swiftSettings),
        // Probing (dates, camera, size, duration) and rendering (HEIF/AVIF images, video posters) in C over
        // libheif, FFmpeg and libexif; JPEG encoding and box downscaling are CThumbnail's.
        .target(name: "CMediaDecode", dependencies: ["CThumbnail", "CHeif", "CFFmpeg", "CExif", "CWebP"]),
        // Every decoder behind one Swift API (MediaDecoder, MediaInfo): runs in the media worker process only.
        .target(
            name: "MediaDecoding", dependencies: ["CMediaDecode", "CHeif", "CFFmpeg", "CExif", "CWebP", "Thumbnails"],
            swiftSettings: swiftSettings),
        // The sandbox around MediaDecoding: the worker's request loop (`couchlite media-worker`) and the server's
        // pool of such workers (posix_spawn with no inherited descriptors, memory and CPU rlimits, a deadline that
        // kills and replaces a worker), so a hostile file costs one worker, never the server.
        .target(
            name: "MediaSandbox", dependencies: ["MediaDecoding", "QueryServer"],
            swiftSettings: swiftSettings),
        // The CouchDB API: the route table and its handlers over the store, authentication, views, replication
        // jobs, metrics, and the server process that serves them.
        .target(
            name: "CouchServer",
            dependencies: [
                "Callbacks", "CouchWire", "CouchQuery", "RevTree", "CouchStore", "CouchCrypto", "CMalloc", "CZlib",
                "Replicator", "QueryServer", "Blip",
            ],
            // The database console under `/_utils` (Console/): its page, style and script, embedded in the binary.
            resources: [
                .embedInCode("Console/Assets/console.html"), .embedInCode("Console/Assets/console.css"),
                .embedInCode("Console/Assets/console.js"),
            ],
            swiftSettings: swiftSettings),
        // The photo product over the CouchDB API: `receive` (drop credentials, QR code, the folder exporter), `push`
        // (the outbox) and the gallery (its routes, thumbnails and page, whose assets are files embedded in the binary).
        .target(
            name: "PhotoDrop",
            dependencies: [
                "Callbacks", "CouchServer", "CouchWire", "RevTree", "CouchStore", "CouchCrypto", "CQRencode", "CZlib",
                "Thumbnails", "Replicator", "MediaDecoding", "MediaSandbox", "Discovery",
            ],
            resources: [
                .embedInCode("Gallery/Assets/index.html"), .embedInCode("Gallery/Assets/welcome.html"),
                .embedInCode("Gallery/Assets/app.css"), .embedInCode("Gallery/Assets/app.js"),
                .embedInCode("Gallery/Assets/icon.svg"), .embedInCode("Gallery/Assets/placeholder.svg"),
            ],
            swiftSettings: swiftSettings),
        // The `couchlite` executable: the command line (subcommands, option tables, stop signals) over the two.
        .executableTarget(
            name: "couchlite",
            dependencies: [
                "CouchServer", "PhotoDrop", "CouchWire", "CouchStore", "Replicator", "QueryServer", "MediaSandbox",
                "Discovery",
            ],
            swiftSettings: swiftSettings),
        // In-process micro-benchmarks (JSON, store); see BENCHMARKS.md.
        .executableTarget(
            name: "couchlite-microbench", dependencies: ["CouchWire", "RevTree", "CouchStore", "CouchCrypto", "Blip"],
            swiftSettings: swiftSettings),

        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery"], swiftSettings: swiftSettings),
        .testTarget(name: "CallbacksTests", dependencies: ["Callbacks"], swiftSettings: swiftSettings),
        .testTarget(
            name: "CouchWireTests", dependencies: ["CouchWire", "CouchCrypto", "CMalloc"], swiftSettings: swiftSettings),
        .testTarget(name: "BlipTests", dependencies: ["Blip", "CZlib", "CMalloc"], swiftSettings: swiftSettings),
        .testTarget(name: "CouchQueryTests", dependencies: ["CouchQuery", "CouchWire"], swiftSettings: swiftSettings),
        .testTarget(
            name: "ReplicatorTests", dependencies: ["Replicator", "CouchWire"], swiftSettings: swiftSettings),
        .testTarget(name: "ThumbnailTests", dependencies: ["Thumbnails", "CThumbnail"], swiftSettings: swiftSettings),
        .testTarget(
            name: "MediaTests", dependencies: ["MediaDecoding", "MediaSandbox", "Thumbnails", "CThumbnail"],
            exclude: ["Samples"], swiftSettings: swiftSettings),
        .testTarget(
            name: "QueryServerTests", dependencies: ["QueryServer", "CouchWire"], swiftSettings: swiftSettings),
        // What RevTreeTests and CouchStoreTests both build cases from (rev ids from text, a seeded generator, the
        // reference model of a history): a library, since one test target cannot import another.
        .target(
            name: "RevTreeTestSupport", dependencies: ["RevTree"], path: "Tests/RevTreeTestSupport",
            swiftSettings: swiftSettings),
        .testTarget(
            name: "RevTreeTests", dependencies: ["RevTree", "RevTreeTestSupport"], swiftSettings: swiftSettings),
        // A test-only SQLite VFS that holds, counts or fails the syncs of a test's files (CouchStoreTests).
        .target(name: "CSQLiteSyncProbe", dependencies: ["CSQLite"], path: "Tests/CSQLiteSyncProbe"),
        .testTarget(
            name: "CouchStoreTests",
            dependencies: [
                "CouchStore", "RevTree", "RevTreeTestSupport", "CSQLite", "CSQLiteSyncProbe", "Callbacks", "CMalloc",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "CouchServerTests",
            dependencies: ["Callbacks", "CouchServer", "PhotoDrop", "CouchWire", "CouchStore", "CZlib", "Blip"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "PhotoDropTests", dependencies: ["PhotoDrop", "CouchServer", "CouchWire", "Callbacks"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "CommandLineTests",
            dependencies: ["couchlite", "CouchServer", "PhotoDrop", "CouchWire", "CouchStore"],
            swiftSettings: swiftSettings),
    ]
)
