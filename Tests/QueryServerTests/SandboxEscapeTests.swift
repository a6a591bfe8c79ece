import CProcess
import Foundation
import Glibc
import Testing

@testable import QueryServer

/// The attacks of issue 35 (item 1), each tried from inside a real worker's sandbox: `couchlite sandbox-probe` is
/// started by the same pool, with the same arguments and through the same `QueryWorker.serve` as the JavaScript
/// and media workers, then asked to try one escape as code that took over a decoder would. Every one must be
/// refused, under Landlock and under the chroot fallback alike. This test process plays the server: its pid is
/// the target of the attacks on "the server", and a secret file of its own the target of the reads.
@Suite("A hijacked worker reaches nothing but its pipes", .serialized)
struct SandboxEscapeTests {
    static let landlock = couchlite_landlock_abi() > 0

    /// What the worker answers to `request`, or nil when it never answered (it ended or was replaced).
    private func attempt(_ request: SandboxProbe.Request, confinement: WorkerLimits.Confinement) -> String? {
        var limits = WorkerLimits()
        limits.confinement = confinement
        var configuration = QueryServerConfiguration(
            executable: couchliteExecutable(), maxWorkers: 1, timeout: .seconds(10), limits: limits)
        configuration.subcommand = "sandbox-probe"
        let pool = QueryServerPool(configuration)
        guard let body = try? JSONEncoder().encode(request) else { return nil }
        let answer = try? pool.withWorker { worker, deadline throws(QueryServerError) in
            try worker.call([UInt8](body), deadline: deadline, timeout: .seconds(10))
        }
        return answer.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Tries `request` under every confinement this kernel has and expects it refused each time.
    private func expectRefused(_ request: SandboxProbe.Request, _ comment: Comment) {
        let confinements: [WorkerLimits.Confinement] = Self.landlock ? [.landlock, .chroot] : [.chroot]
        for confinement in confinements {
            let answer = attempt(request, confinement: confinement)
            #expect(answer == "refused", "\(comment) (\(confinement.rawValue)): \(answer ?? "no answer")")
        }
    }

    private static let server = String(getpid())

    @Test func aHijackedWorkerCannotOpenASocketThroughIoUring() {
        expectRefused(.init(escape: .ioUring), "io_uring_setup worked: IORING_OP_SOCKET and CONNECT reach the LAN")
    }

    @Test func aHijackedWorkerCannotPtraceAnotherProcess() throws {
        // Another process of the server's user (not this test process itself, which a successful attach would stop).
        let other = Process()
        other.executableURL = URL(fileURLWithPath: "/bin/sleep")
        other.arguments = ["30"]
        try other.run()
        defer {
            // SIGKILL: it ends a process even while it is traced, and whatever signals it inherited blocked.
            kill(other.processIdentifier, SIGKILL)
            other.waitUntilExit()
        }
        expectRefused(
            .init(escape: .ptrace, target: String(other.processIdentifier)), "PTRACE_ATTACH to another process worked")
    }

    @Test func aHijackedWorkerCannotReadTheServersMemory() {
        let secret = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        defer { secret.deallocate() }
        secret.pointee = 42
        let address = UInt64(UInt(bitPattern: secret))
        expectRefused(
            .init(escape: .processVMReadv, target: Self.server, address: address), "process_vm_readv of the server")
    }

    @Test func aHijackedWorkerCannotRunAProgram() {
        expectRefused(.init(escape: .execve), "execve worked")
    }

    @Test func aHijackedWorkerCannotStartAProcess() {
        expectRefused(.init(escape: .fork), "a fork (clone without CLONE_THREAD) worked")
    }

    @Test func aHijackedWorkerCannotLoadBPF() {
        expectRefused(.init(escape: .bpf), "bpf(BPF_MAP_CREATE) worked")
    }

    @Test func aHijackedWorkerCannotUseUserfaultfd() {
        expectRefused(.init(escape: .userfaultfd), "userfaultfd worked")
    }

    @Test func aHijackedWorkerCannotReachTheKeyring() {
        expectRefused(.init(escape: .keyctl), "keyctl worked")
    }

    @Test func aHijackedWorkerCannotOpenASocket() {
        expectRefused(.init(escape: .socket), "socket(AF_INET) or socket(AF_UNIX) worked")
    }

    @Test func aHijackedWorkerCannotReadTheAuthSecret() throws {
        // A data dir's session key, readable by everyone so that only the sandbox stands in the way.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let secret = directory.appendingPathComponent("auth-secret")
        try Data("0123456789abcdef".utf8).write(to: secret)
        chmod(directory.path, 0o755)
        chmod(secret.path, 0o644)
        expectRefused(.init(escape: .open, target: secret.path), "the data dir's auth-secret was opened")
        expectRefused(.init(escape: .open, target: "/etc/passwd"), "/etc/passwd was opened")
        expectRefused(.init(escape: .open, target: "/proc/self/environ"), "/proc/self/environ was opened")
    }

    @Test func aHijackedWorkerCannotCreateAFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        chmod(directory.path, 0o777)
        let planted = directory.appendingPathComponent("planted").path
        expectRefused(.init(escape: .create, target: planted), "a file was created")
        #expect(!FileManager.default.fileExists(atPath: planted))
    }

    @Test func aHijackedWorkerCannotSignalTheServer() {
        expectRefused(.init(escape: .kill, target: Self.server), "kill(server, 0) worked")
    }

    @Test func aHijackedWorkerCannotBecomeRootAgain() {
        expectRefused(.init(escape: .setuidRoot), "setresuid(0) worked")
    }

    @Test func theProbeSeesWhatAnUnconfinedProcessWould() {
        // The control: outside the sandbox the same escapes work here, so the tests above measure the sandbox.
        #expect(couchlite_escape_open("/etc/passwd") == 1)
        #expect(couchlite_escape_socket() == 1)
        #expect(couchlite_escape_kill(getpid()) == 1)
    }
}
