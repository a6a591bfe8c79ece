import Foundation

/// A fresh directory under the system's temporary directory.
func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "couchserver-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
