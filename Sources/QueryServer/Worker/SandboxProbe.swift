import CProcess
import Foundation

/// `couchlite sandbox-probe`, for tests only: a worker like any other (`QueryWorker.serve`, the same sandbox as
/// `query-server` and `media-worker`) whose requests name an escape to try from inside it, as code that took over
/// a decoder or a script would (Sources/CProcess/sandbox.h). Each answer is `refused` or `escaped`; an escape that
/// replaces or ends the process (execve) shows as a worker that never answers.
public enum SandboxProbe {
    /// One attempt: `escape` (an `Escape`), `target` (the server's pid, or a path), `address` (in the target's
    /// memory).
    package struct Request: Codable, Sendable {
        package var escape: Escape
        package var target: String = ""
        package var address: UInt64 = 0

        package init(escape: Escape, target: String = "", address: UInt64 = 0) {
            self.escape = escape
            self.target = target
            self.address = address
        }
    }

    package enum Escape: String, Codable, Sendable, CaseIterable {
        case ioUring, ptrace, processVMReadv, execve, fork, bpf, userfaultfd, keyctl, socket, open, create, kill
        case setuidRoot
    }

    public static func run(_ arguments: [String]) -> Int32 {
        QueryWorker.serve(arguments, name: "sandbox-probe") { _ in attempt }
    }

    static func attempt(_ frame: [UInt8]) -> [UInt8] {
        guard let request = try? JSONDecoder().decode(Request.self, from: Data(frame)) else {
            return Array("bad request".utf8)
        }
        let pid = pid_t(request.target) ?? 0
        let escaped: Int32
        switch request.escape {
        case .ioUring: escaped = couchlite_escape_io_uring()
        case .ptrace: escaped = couchlite_escape_ptrace(pid)
        case .processVMReadv:
            escaped = couchlite_escape_process_vm_readv(pid, UnsafeRawPointer(bitPattern: UInt(request.address)))
        case .execve: escaped = couchlite_escape_execve()
        case .fork: escaped = couchlite_escape_fork()
        case .bpf: escaped = couchlite_escape_bpf()
        case .userfaultfd: escaped = couchlite_escape_userfaultfd()
        case .keyctl: escaped = couchlite_escape_keyctl()
        case .socket: escaped = couchlite_escape_socket()
        case .open: escaped = couchlite_escape_open(request.target)
        case .create: escaped = couchlite_escape_create(request.target)
        case .kill: escaped = couchlite_escape_kill(pid)
        case .setuidRoot: escaped = couchlite_escape_setuid_root()
        }
        return Array((escaped != 0 ? "escaped" : "refused").utf8)
    }
}
