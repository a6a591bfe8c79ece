import CProcess
import Glibc
import Testing

/// `couchlite_deny_network`, which every worker (JavaScript and media decoding) applies to itself before reading a
/// request: after it, the process can open no socket of any family, while pipes and files work as before. Run in a
/// forked child, since the filter cannot be taken off again; the child reports by its exit status.
@Suite struct NetworkDenialTests {
    /// Forks, runs `body` in the child after denying the network, and returns the child's exit status.
    private func inDeniedChild(_ body: @escaping () -> Int32) -> Int32 {
        let pid = fork()
        if pid == 0 {
            guard couchlite_deny_network() == 0 else { _exit(100) }
            _exit(body())
        }
        var status: Int32 = 0
        guard pid > 0, waitpid(pid, &status, 0) == pid else { return -1 }
        // WIFEXITED / WEXITSTATUS, which Swift does not import (macros).
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 200 + (status & 0x7f)
    }

    @Test func aHijackedWorkerCannotOpenAnInternetSocket() {
        let status = inDeniedChild {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            return fd < 0 && errno == EACCES ? 0 : 1
        }
        #expect(status == 0, "a worker opened a TCP socket (status \(status))")
    }

    @Test func aHijackedWorkerCannotOpenAUnixOrIPv6SocketOrASocketPair() {
        let status = inDeniedChild {
            if socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0) >= 0 { return 1 }
            if socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0) >= 0 { return 2 }
            var pair: [Int32] = [0, 0]
            if socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 { return 3 }
            return 0
        }
        #expect(status == 0, "a worker got a socket (status \(status))")
    }

    @Test func pipesStillWorkAfterTheNetworkIsDenied() {
        let status = inDeniedChild {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { return 1 }
            var byte: UInt8 = 42
            guard write(fds[1], &byte, 1) == 1 else { return 2 }
            byte = 0
            guard read(fds[0], &byte, 1) == 1, byte == 42 else { return 3 }
            return 0
        }
        #expect(status == 0, "a pipe failed after the filter (status \(status))")
    }

    @Test func withoutTheFilterASocketOpens() {
        // The control: the same probe, unfiltered, succeeds, so the tests above measure the filter.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        if fd >= 0 { close(fd) }
    }
}
