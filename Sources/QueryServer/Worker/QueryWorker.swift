import CProcess
import Foundation

/// The worker side of the query server: `couchlite query-server` reads framed requests on standard input,
/// runs each in its Duktape heap and writes the framed response on standard output, until its input ends.
/// The server starts workers with `QueryServerPool`; nothing else should.
public enum QueryWorker {
    /// Runs the worker loop; returns the process's exit status.
    /// - Parameter arguments: `--heap-limit BYTES`, `--address-space BYTES`, `--cpu-seconds N`, `--parent PID` (the
    ///   server's; each optional).
    public static func run(_ arguments: [String]) -> Int32 {
        serve(arguments, name: "query-server") { limits throws(QueryServerError) in
            try DuktapeRuntime(heapLimit: limits.heapBytes).dispatch
        }
    }

    /// The loop of any worker the server starts through `QueryServerPool` (`query-server`, `media-worker`): parses
    /// the limits, lets `start` load what it needs, enters the sandbox (Sources/CProcess/sandbox.h: no file system,
    /// not root, an allow-list of system calls), leaves when the server is gone, and answers each framed request
    /// with `start`'s handler, until its input ends. A worker that cannot enter every part of the sandbox exits
    /// (status 71) instead of running outside it.
    package static func serve(
        _ arguments: [String], name: String,
        start: (WorkerLimits) throws(QueryServerError) -> ([UInt8]) -> [UInt8]
    ) -> Int32 {
        var limits = WorkerLimits()
        // The server says who it is: the pid this process saw as its parent when it got here could already be
        // init's, had the server died since it started this worker.
        var parent = getppid()
        var index = 0
        while index < arguments.count {
            let text = index + 1 < arguments.count ? arguments[index + 1] : nil
            let value = text.flatMap { Int($0) }
            switch (arguments[index], value) {
            case ("--heap-limit", let value?): limits.heapBytes = value
            case ("--address-space", let value?): limits.addressSpaceBytes = value
            case ("--cpu-seconds", let value?): limits.cpuSeconds = value
            case ("--parent", let value?) where value > 0 && value <= Int(Int32.max): parent = pid_t(value)
            case ("--confine", _) where text.flatMap(WorkerLimits.Confinement.init(rawValue:)) != nil:
                limits.confinement = text.flatMap(WorkerLimits.Confinement.init(rawValue:)) ?? .automatic
            default:
                FileHandle.standardError.write(Data("\(name): unknown argument \(arguments[index])\n".utf8))
                return 64
            }
            index += 2
        }
        // What the worker loads from disk (libheif's plugins), before it has no disk.
        let dispatch: ([UInt8]) -> [UInt8]
        do {
            dispatch = try start(limits)
        } catch {
            FileHandle.standardError.write(Data("\(name): \(error.reason)\n".utf8))
            return 70
        }
        // The bytes a worker is given come from strangers (a design function, a photo), so a worker they take over
        // must reach nothing beyond its pipes: no file system and not root first, while this is the only thread.
        var why = [CChar](repeating: 0, count: 200)
        guard couchlite_confine(limits.confinement.c, &why, why.count) == 0 else {
            let reason = String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            FileHandle.standardError.write(Data("\(name): cannot enter the sandbox: \(reason)\n".utf8))
            return 71
        }
        // A worker never outlives its server, however the server ended and whatever this process is busy with
        // (see couchlite_watch_server): an orphaned worker would run a stranger's endless loop until its CPU cap.
        if couchlite_watch_server(parent) != 0 {
            FileHandle.standardError.write(Data("\(name): cannot watch the server\n".utf8))
            return 71
        }
        if couchlite_limit_process(
            UInt64(max(limits.addressSpaceBytes, 0)), UInt64(max(limits.cpuSeconds, 0))) != 0
        {
            FileHandle.standardError.write(Data("\(name): setrlimit failed\n".utf8))
        }
        // Last, on every thread: the system calls decoding and the pipes need, and nothing else.
        guard couchlite_allow_list(getpid()) == 0 else {
            FileHandle.standardError.write(Data("\(name): cannot enter the sandbox: seccomp\n".utf8))
            return 71
        }
        var decoder = FrameDecoder()
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return 0 }
            decoder.feed(chunk[0..<count])
            do {
                while let request = try decoder.next() {
                    let response = dispatch(request)
                    guard WorkerExchange.writeAll(Frame.encode(response)) else { return 0 }
                }
            } catch {
                FileHandle.standardError.write(Data("\(name): bad frame: \(error)\n".utf8))
                return 65
            }
        }
    }
}

/// The bounds a worker puts on itself at start.
public struct WorkerLimits: Sendable, Equatable {
    /// Most bytes the JavaScript heap may hold (Duktape's allocator refuses more: a `RangeError`).
    public var heapBytes = 256 * 1024 * 1024
    /// `RLIMIT_AS`: the process's whole address space, a backstop under the heap limit.
    public var addressSpaceBytes = 2 * 1024 * 1024 * 1024
    /// `RLIMIT_CPU` over the worker's life: a backstop; the pool's per-call timeout is what stops a loop.
    public var cpuSeconds = 3600
    /// How the worker loses its file system (Sources/CProcess/sandbox.h).
    public var confinement = Confinement.automatic

    /// Landlock where the kernel has it, else a chroot into a removed directory (`automatic`); tests force either.
    public enum Confinement: String, Sendable {
        case automatic, landlock, chroot

        var c: Int32 {
            switch self {
            case .automatic: Int32(COUCHLITE_CONFINE_AUTOMATIC.rawValue)
            case .landlock: Int32(COUCHLITE_CONFINE_LANDLOCK.rawValue)
            case .chroot: Int32(COUCHLITE_CONFINE_CHROOT.rawValue)
            }
        }
    }

    public init() {}

    var arguments: [String] {
        [
            "--heap-limit", String(heapBytes), "--address-space", String(addressSpaceBytes), "--cpu-seconds",
            String(cpuSeconds),
        ] + (confinement == .automatic ? [] : ["--confine", confinement.rawValue])
    }
}
