import CProcess
import CouchWire
import Foundation

/// One running `couchlite query-server` process and the server's ends of its pipes. Used by one thread at a
/// time (the pool hands it out); any failure kills it, and a killed worker is never used again.
///
/// `@unchecked Sendable` for that reason: its mutable state (the frame decoder, `isDead`, the known design
/// documents, `calls`) is touched only by the thread the pool lent it to; the pool's idle list, behind its
/// `Mutex`, orders one borrower's accesses before the next's, and the pool kills idle workers only under that lock.
package final class WorkerProcess: @unchecked Sendable {
    package let pid: pid_t
    private let toWorker: Int32
    private let fromWorker: Int32
    /// The server's end of the worker's descriptor channel (its descriptor 3), or -1.
    private let descriptors: Int32
    private var decoder: FrameDecoder
    private(set) var isDead = false
    /// Design-document keys this worker has been sent (it may have evicted some; it then says so).
    var knownDesignDocuments: Set<String> = []
    /// The database it is checked out for (`QueryServerPool.checkOut`).
    var owner: [UInt8]?
    /// When the worker was started, for recycling.
    let started = ContinuousClock.now
    var calls = 0

    /// Starts a worker: `executable <subcommand> <limits>` (`query-server`, or the media sandbox's `media-worker`),
    /// with a descriptor channel as its descriptor 3 when `passesDescriptors`.
    init(
        executable: String, subcommand: String = "query-server", limits: WorkerLimits, maxPayload: Int,
        passesDescriptors: Bool = false
    ) throws(QueryServerError) {
        var input: [Int32] = [-1, -1]
        var output: [Int32] = [-1, -1]
        var channel: [Int32] = [-1, -1]
        func closeAll() { for fd in input + output + channel where fd >= 0 { close(fd) } }
        guard couchlite_pipe(&input) == 0, couchlite_pipe(&output) == 0,
            !passesDescriptors || couchlite_descriptor_channel(&channel) == 0
        else {
            let reason = String(cString: strerror(errno))
            closeAll()
            throw .workerFailed("pipe: \(reason)")
        }
        let argv = [executable, subcommand] + limits.arguments + ["--parent", String(getpid())]
        var cArgs = argv.map { strdup($0) }
        cArgs.append(nil)
        let pid = couchlite_spawn(executable, &cArgs, input[0], output[1], channel[1])
        let spawnError = errno
        for pointer in cArgs { free(pointer) }
        close(input[0])
        close(output[1])
        if channel[1] >= 0 { close(channel[1]) }
        guard pid > 0 else {
            close(input[1])
            close(output[0])
            if channel[0] >= 0 { close(channel[0]) }
            throw .workerFailed("could not start \(executable): \(String(cString: strerror(spawnError)))")
        }
        self.pid = pid
        toWorker = input[1]
        fromWorker = output[0]
        descriptors = channel[0]
        _ = fcntl(toWorker, F_SETFL, fcntl(toWorker, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fromWorker, F_SETFL, fcntl(fromWorker, F_GETFL) | O_NONBLOCK)
        decoder = FrameDecoder(maxPayload: maxPayload)
    }

    deinit { kill() }

    /// Sends one request and waits for its response until `deadline`; on any failure the worker is killed. With
    /// `descriptor`, the worker is handed that open file first, on its descriptor channel (the pool must have been
    /// configured with `passesDescriptors`); the caller keeps its own descriptor.
    package func call(
        _ request: [UInt8], passing descriptor: Int32? = nil, deadline: ContinuousClock.Instant, timeout: Duration
    ) throws(QueryServerError) -> [UInt8] {
        guard !isDead else { throw .workerFailed("the worker is gone") }
        calls += 1
        do throws(QueryServerError) {
            if let descriptor {
                guard descriptors >= 0, couchlite_send_descriptor(descriptors, descriptor) == 0 else {
                    throw .workerFailed("cannot hand the worker its file")
                }
            }
            try send(Frame.encode(request), deadline: deadline, timeout: timeout)
            return try receive(deadline: deadline, timeout: timeout)
        } catch {
            kill()
            throw error
        }
    }

    /// Sends one message of a conversation (a list's next row) without waiting for an answer; on any failure the
    /// worker is killed.
    func sendMessage(_ payload: [UInt8], deadline: ContinuousClock.Instant, timeout: Duration)
        throws(QueryServerError)
    {
        guard !isDead else { throw .workerFailed("the worker is gone") }
        do {
            try send(Frame.encode(payload), deadline: deadline, timeout: timeout)
        } catch {
            kill()
            throw error
        }
    }

    /// Waits for the worker's next message until `deadline`; on any failure the worker is killed.
    func receiveMessage(deadline: ContinuousClock.Instant, timeout: Duration) throws(QueryServerError) -> [UInt8] {
        guard !isDead else { throw .workerFailed("the worker is gone") }
        do {
            return try receive(deadline: deadline, timeout: timeout)
        } catch {
            kill()
            throw error
        }
    }

    private func send(_ bytes: [UInt8], deadline: ContinuousClock.Instant, timeout: Duration)
        throws(QueryServerError)
    {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(toWorker, $0.baseAddress, $0.count) }
            if written > 0 {
                offset += written
                continue
            }
            if written < 0 && errno == EINTR { continue }
            guard written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) else {
                throw .workerFailed("the worker stopped reading (\(String(cString: strerror(errno))))")
            }
            try wait(for: toWorker, events: Int16(POLLOUT), deadline: deadline, timeout: timeout)
        }
    }

    private func receive(deadline: ContinuousClock.Instant, timeout: Duration) throws(QueryServerError) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            do {
                if let frame = try decoder.next() { return frame }
            } catch {
                throw .workerFailed("bad message from the worker: \(error)")
            }
            let count = chunk.withUnsafeMutableBytes { read(fromWorker, $0.baseAddress, $0.count) }
            if count > 0 {
                decoder.feed(chunk[0..<count])
                continue
            }
            if count == 0 {
                do {
                    try decoder.finish()
                } catch {
                    throw .workerFailed("the worker ended mid-message: \(error)")
                }
                throw .workerFailed("the worker ended (\(exitDescription()))")
            }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK else {
                throw .workerFailed("reading from the worker: \(String(cString: strerror(errno)))")
            }
            try wait(for: fromWorker, events: Int16(POLLIN), deadline: deadline, timeout: timeout)
        }
    }

    private func wait(for fd: Int32, events: Int16, deadline: ContinuousClock.Instant, timeout: Duration)
        throws(QueryServerError)
    {
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw .timeout(seconds: timeout.timeInterval) }
            let ms = Int32(
                clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
                    + 1)
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let rc = poll(&descriptor, 1, ms)
            if rc > 0 { return }
            if rc < 0 && errno != EINTR { throw .workerFailed("poll: \(String(cString: strerror(errno)))") }
        }
    }

    private var exitStatus: Int32?

    /// How the reaped worker ended, for the error message.
    private func exitDescription() -> String {
        kill()
        guard let status = exitStatus else { return "status unknown" }
        if status & 0x7F == 0 { return "exit status \((status >> 8) & 0xFF)" }
        return "signal \(status & 0x7F)"
    }

    /// Whether the process has ended (reaped here if so); a cheap check before an idle worker is reused.
    func hasExited() -> Bool {
        guard !isDead else { return true }
        var status: Int32 = 0
        let reaped = waitpid(pid, &status, WNOHANG)
        guard reaped == pid else { return false }
        exitStatus = status
        isDead = true
        closeDescriptors()
        return true
    }

    /// Kills and reaps the worker and closes its pipes; safe to call more than once.
    func kill() {
        guard !isDead else { return }
        isDead = true
        _ = Foundation.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        exitStatus = status
        closeDescriptors()
    }

    private func closeDescriptors() {
        close(toWorker)
        close(fromWorker)
        if descriptors >= 0 { close(descriptors) }
    }
}
