import Foundation
import MediaDecoding
import MediaSandbox
import Testing

/// Files made to hurt a decoder, each refused by what it declares before any pixel is decoded, or costing one
/// worker process, never the server.
@Suite struct HostileMediaTests {
    /// A HEIC that declares 100,000 x 100,000 pixels (10 Gpx) in a 4 KiB file.
    static func heicBomb() throws -> String {
        let bytes = try MediaFiles.bytes("exif-photo.heic")
        let bomb = try #require(MediaFiles.patch(bytes, box: "ispe", at: [4, 8], values: [100_000, 100_000]))
        return try MediaFiles.write(bomb, "bomb.heic")
    }

    /// An MP4 whose sample entry declares 8K (7680 x 4320) and whose header declares ten hours.
    static func videoBomb() throws -> String {
        var bytes = try MediaFiles.bytes("rotated.mp4")
        // The second `avc1` is the sample entry (the first is a brand in `ftyp`): width and height at 24.
        bytes = try #require(
            MediaFiles.patch(bytes, box: "avc1", at: [24], values: [7680 << 16 | 4320], occurrence: 1))
        // mvhd (version 0): timescale 1000 at 12, duration at 16.
        bytes = try #require(MediaFiles.patch(bytes, box: "mvhd", at: [16], values: [36_000_000]))
        return try MediaFiles.write(bytes, "bomb.mp4")
    }

    @Test func heicDecompressionBombIsRefusedByItsDeclaredSize() throws {
        let path = try Self.heicBomb()
        defer { unlink(path) }
        let started = ContinuousClock.now
        guard case .failure(let probe) = MediaDecoder.probe(path: path) else {
            Issue.record("a 10 Gpx HEIC was accepted")
            return
        }
        #expect(probe.description.contains("limit") || probe.description.contains("security"), "\(probe)")
        guard case .failure = MediaDecoder.render(path: path, maxSide: 320) else {
            Issue.record("a 10 Gpx HEIC was decoded")
            return
        }
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test func videoClaimingHoursAt8KIsRefusedByItsDeclaredSize() throws {
        let path = try Self.videoBomb()
        defer { unlink(path) }
        guard case .failure(let probe) = MediaDecoder.probe(path: path) else {
            Issue.record("10 hours of 8K were accepted")
            return
        }
        #expect(probe.description.contains("beyond the limit"), "\(probe)")
        guard case .failure = MediaDecoder.render(path: path, maxSide: 320) else {
            Issue.record("10 hours of 8K were decoded")
            return
        }
    }

    @Test(arguments: ["exif-photo.heic", "photo.avif", "rotated.mp4", "clip.webm", "live.mov"])
    func truncatedFileIsRefusedNotFatal(name: String) throws {
        let bytes = try MediaFiles.bytes(name)
        for fraction in [0.1, 0.5, 0.9] {
            let path = try MediaFiles.write(Array(bytes.prefix(Int(Double(bytes.count) * fraction))), "cut-" + name)
            defer { unlink(path) }
            _ = MediaDecoder.probe(path: path)
            if case .success(let jpeg) = MediaDecoder.render(path: path, maxSide: 160) {
                #expect(MediaFiles.decode(jpeg) != nil)  // a partial frame is fine; a crash is not
            }
        }
    }

    @Test func garbageBehindAHEICBrandIsRefused() throws {
        var bytes: [UInt8] = [0, 0, 0, 24] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8)
        bytes += (0..<4000).map { _ in UInt8.random(in: 0...255) }
        let path = try MediaFiles.write(bytes, "garbage.heic")
        defer { unlink(path) }
        guard case .failure = MediaDecoder.render(path: path, maxSide: 160) else {
            Issue.record("garbage rendered")
            return
        }
    }

    @Test func fileOfNoKnownKindIsRefused() throws {
        let path = try MediaFiles.write(Array("<html><script>alert(1)</script>".utf8), "page.jpg")
        defer { unlink(path) }
        guard case .failure = MediaDecoder.probe(path: path),
            case .failure = MediaDecoder.render(path: path, maxSide: 9)
        else {
            Issue.record("an HTML page was read as media")
            return
        }
    }
}

/// The sandbox: decoders in `couchlite media-worker` processes, a misbehaving one killed and replaced.
@Suite struct MediaSandboxTests {
    static func sandbox(_ executable: String = MediaFiles.couchlite(), timeout: Duration = .seconds(20))
        -> MediaSandbox
    {
        var configuration = MediaSandbox.Configuration()
        configuration.executable = executable
        configuration.timeout = timeout
        configuration.maxWorkers = 1
        return MediaSandbox(configuration)
    }

    /// A worker played by a shell script, for the ways a decoder can go wrong on a hostile file.
    static func fakeWorker(_ name: String, _ script: String) throws -> String {
        let path = MediaFiles.temp("worker-\(name).sh")
        try Data("#!/bin/sh\n\(script)\n".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o755)
        return path
    }

    @Test func sandboxProbesAndRendersInAWorkerProcess() throws {
        let sandbox = Self.sandbox()
        let info = try sandbox.probe(path: MediaFiles.sample("exif-photo.heic")).get()
        #expect(info.takenISO == "2026-05-12T14:03:11+02:00")
        let jpeg = try sandbox.render(path: MediaFiles.sample("rotated.mp4"), maxSide: 160).get()
        #expect(MediaFiles.decode(jpeg)?.width == 120)
        #expect(sandbox.workersStarted == 1)
    }

    @Test func hostileHEICAndVideoAreRefusedWithoutLosingTheWorker() throws {
        let sandbox = Self.sandbox()
        for path in [try HostileMediaTests.heicBomb(), try HostileMediaTests.videoBomb()] {
            defer { unlink(path) }
            guard case .failure(let failure) = sandbox.render(path: path, maxSide: 320) else {
                Issue.record("\(path) rendered")
                continue
            }
            #expect(!failure.workerLost)
        }
        #expect(sandbox.workersStarted == 1)
    }

    /// A decoder stuck in a loop: the call ends at its deadline, the worker is killed, the next call gets a new one.
    @Test func hungDecoderIsKilledAtItsDeadlineAndReplaced() throws {
        let script = try Self.fakeWorker("hang", "sleep 60")
        defer { unlink(script) }
        let sandbox = Self.sandbox(script, timeout: .seconds(1))
        let started = ContinuousClock.now
        guard case .failure(let failure) = sandbox.probe(path: MediaFiles.sample("clip.webm")) else {
            Issue.record("a hung worker answered")
            return
        }
        #expect(failure.workerLost && ContinuousClock.now - started < .seconds(5))
        _ = sandbox.probe(path: MediaFiles.sample("clip.webm"))
        #expect(sandbox.workersStarted == 2)
    }

    /// A decoder that crashes (a segfault on a crafted file): a refused file, and the next call a new worker.
    @Test func crashingDecoderCostsOneWorker() throws {
        let script = try Self.fakeWorker("crash", "head -c 4 >/dev/null; kill -SEGV $$")
        defer { unlink(script) }
        let sandbox = Self.sandbox(script)
        guard case .failure(let failure) = sandbox.render(path: MediaFiles.sample("clip.webm"), maxSide: 160) else {
            Issue.record("a crashed worker answered")
            return
        }
        #expect(failure.workerLost)
        _ = sandbox.render(path: MediaFiles.sample("clip.webm"), maxSide: 160)
        #expect(sandbox.workersStarted == 2)
    }

    /// A decoder that allocates past the worker's address-space cap dies alone: here the cap is too small for the
    /// worker to even start, which the server sees as one lost worker.
    @Test func decoderPastItsMemoryCapCostsOneWorker() throws {
        var configuration = MediaSandbox.Configuration()
        configuration.executable = MediaFiles.couchlite()
        configuration.addressSpaceBytes = 16 << 20
        configuration.maxWorkers = 1
        let sandbox = MediaSandbox(configuration)
        guard case .failure(let failure) = sandbox.render(path: MediaFiles.sample("exif-photo.heic"), maxSide: 160)
        else {
            Issue.record("a worker capped at 16 MiB decoded a HEIC")
            return
        }
        #expect(failure.workerLost)
    }

    /// A worker sees none of the server's descriptors (its sockets, database files): one this process holds open is
    /// not open in the worker.
    @Test func workerInheritsNoDescriptors() throws {
        let held = try #require(fopen(MediaFiles.sample("clip.webm"), "r"))
        defer { fclose(held) }
        let fd = fileno(held)
        let script = try Self.fakeWorker(
            "fds",
            #"head -c 4 >/dev/null; if [ -e /proc/$$/fd/"# + String(fd)
                + #" ]; then r=open; else r=shut; fi; printf '\000\000\000\005\001'; printf $r; sleep 5"#)
        defer { unlink(script) }
        guard case .failure(let failure) = Self.sandbox(script).probe(path: MediaFiles.sample("clip.webm")) else {
            Issue.record("the fake worker's refusal was taken for an answer")
            return
        }
        #expect(failure.description == "shut", "\(failure)")
    }
}
