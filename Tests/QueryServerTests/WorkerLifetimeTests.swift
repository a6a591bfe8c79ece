import CProcess
import Foundation
import QueryServer
import Testing

/// A worker ends by itself within a moment of its server, whatever it is doing: the test plays the server,
/// starting a real `couchlite query-server` on pipes of its own, and "dies" by closing its end of the worker's
/// input (what the kernel does to a server killed with `kill -9`). A worker busy in a script's endless loop never
/// reads its input again, so only its watchdog can notice.
@Suite("A worker never outlives its server", .serialized)
struct WorkerLifetimeTests {
    struct Started {
        let pid: pid_t
        var toWorker: Int32
        let fromWorker: Int32
    }

    /// A filter that never returns, as the server would send it (header line, then the body).
    static let loopingRequest = Frame.encode(
        Array(#"{"op":"filter","keys":["k"]}"#.utf8) + [0x0A]
            + Array(
                #"{"op":"filter","key":"k","ddoc":{"filters":{"l":"function(){ while (true) {} }"}},"name":"l","req":{},"docs":[{}]}"#
                    .utf8))

    /// Starts `couchlite query-server` with `arguments`, its input and output pipes to this process.
    private func start(_ arguments: [String]) throws -> Started {
        var input: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        try #require(couchlite_pipe(&input) == 0 && couchlite_pipe(&output) == 0)
        var argv = ([couchliteExecutable(), "query-server"] + arguments).map { strdup($0) }
        argv.append(nil)
        let pid = couchlite_spawn(couchliteExecutable(), &argv, input[0], output[1], -1)
        for pointer in argv { free(pointer) }
        close(input[0])
        close(output[1])
        try #require(pid > 0)
        return Started(pid: pid, toWorker: input[1], fromWorker: output[0])
    }

    private func send(_ bytes: [UInt8], to worker: Started) -> Bool {
        bytes.withUnsafeBytes { write(worker.toWorker, $0.baseAddress, $0.count) } == bytes.count
    }

    /// CPU time the process has used, in clock ticks (utime + stime of /proc/PID/stat).
    private func cpuTicks(_ pid: pid_t) -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.range(of: ")", options: .backwards)
        else { return 0 }
        let fields = stat[end.upperBound...].split(separator: " ")
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
        return user + system
    }

    /// Waits until the script has run for a while (so the worker is past reading its request).
    private func waitUntilBusy(_ worker: Started) -> Bool {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if cpuTicks(worker.pid) >= 20 { return true }
            usleep(20_000)
        }
        return false
    }

    /// The exit status once the process has ended, or nil if it still runs after `limit` (it is then killed).
    private func exitStatus(_ pid: pid_t, within limit: Duration) -> Int32? {
        let deadline = ContinuousClock.now + limit
        var status: Int32 = 0
        while true {
            if waitpid(pid, &status, WNOHANG) == pid { return status }
            if ContinuousClock.now >= deadline { break }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return nil
    }

    @Test func aWorkerLoopingInAScriptEndsWhenItsServerIsGone() throws {
        var worker = try start(["--parent", String(getpid())])
        defer { close(worker.fromWorker) }
        #expect(send(Self.loopingRequest, to: worker))
        #expect(waitUntilBusy(worker), "the script never ran")
        let orphaned = ContinuousClock.now
        close(worker.toWorker)
        worker.toWorker = -1
        let status = exitStatus(worker.pid, within: .seconds(2))
        #expect(status == 0, "the worker went on looping without its server")
        #expect(ContinuousClock.now - orphaned < .seconds(2))
    }

    @Test func aWorkerWhoseServerDiedBeforeItStartedEnds() throws {
        // The server sent the request and died before the worker got as far as looking at it: the request is in
        // the pipe, and no one is left to read an answer.
        let worker = try start(["--parent", String(getpid())])
        defer { close(worker.fromWorker) }
        #expect(send(Self.loopingRequest, to: worker))
        close(worker.toWorker)
        #expect(exitStatus(worker.pid, within: .seconds(10)) == 0, "the worker ran the orphaned request forever")
    }

    @Test func aWorkerWhoseParentIsNotTheServerItWasGivenEnds() throws {
        // Its input still open: the pid is the only sign (the server's pid was reused, or the worker was
        // reparented while something else kept the pipe open).
        let worker = try start(["--parent", "1"])
        defer {
            close(worker.toWorker)
            close(worker.fromWorker)
        }
        #expect(exitStatus(worker.pid, within: .seconds(10)) == 0, "the worker did not notice its parent is gone")
    }

    @Test func anIdleWorkerWithItsServerAliveKeepsRunning() throws {
        let worker = try start(["--parent", String(getpid())])
        defer { close(worker.fromWorker) }
        usleep(500_000)
        var status: Int32 = 0
        #expect(waitpid(worker.pid, &status, WNOHANG) == 0, "the watchdog ended a worker whose server is alive")
        close(worker.toWorker)
        #expect(exitStatus(worker.pid, within: .seconds(10)) == 0)
    }
}
