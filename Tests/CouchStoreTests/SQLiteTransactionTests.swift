import Testing

@testable import CouchStore

/// `SQLiteConnection.inTransaction` and `setPragma`.
@Suite struct SQLiteTransactionTests {
    struct Boom: Error, Equatable {}

    func connection() throws -> SQLiteConnection {
        let connection = try SQLiteConnection(
            path: temporaryDirectory() + "/transaction.sqlite", readOnly: false, create: true)
        try connection.execute("CREATE TABLE t (x INTEGER)")
        return connection
    }

    func rows(_ connection: SQLiteConnection) throws -> Int { try connection.scalarInt("SELECT count(*) FROM t") ?? -1 }

    /// True when no transaction is open on the connection.
    func idle(_ connection: SQLiteConnection) throws -> Bool {
        // BEGIN fails inside a transaction; one that succeeds is ended at once.
        do { try connection.execute("BEGIN") } catch { return false }
        try connection.execute("COMMIT")
        return true
    }

    /// A read ends its transaction whatever its body did, and runs its body only when `BEGIN` succeeded (a pool
    /// takes the connection back only then).
    @Test func aReadEndsItsTransactionWhetherItsBodyReturnsOrThrows() throws {
        let connection = try connection()
        try connection.run("INSERT INTO t VALUES (1)")
        #expect(try connection.reading { try rows($0) } == 1)
        #expect(try idle(connection))
        #expect(throws: Boom.self) { try connection.reading { _ in throw Boom() } }
        #expect(try idle(connection))
        // Inside a transaction already, `BEGIN` fails: the body never runs.
        try connection.execute("BEGIN")
        var ran = false
        #expect(throws: (any Error).self) { try connection.reading { _ in ran = true } }
        #expect(!ran)
        try connection.execute("COMMIT")
    }

    @Test(arguments: [SQLiteConnection.TransactionKind.deferred, .immediate])
    func commitsOnSuccessAndReturnsTheBodysValue(kind: SQLiteConnection.TransactionKind) throws {
        let connection = try connection()
        let value = try connection.inTransaction(kind) {
            try connection.run("INSERT INTO t VALUES (1), (2)")
            return 42
        }
        #expect(value == 42)
        #expect(try rows(connection) == 2)
        #expect(try idle(connection))
    }

    @Test(arguments: [SQLiteConnection.TransactionKind.deferred, .immediate])
    func rollsBackAndRethrowsWhenTheBodyThrows(kind: SQLiteConnection.TransactionKind) throws {
        let connection = try connection()
        try connection.run("INSERT INTO t VALUES (0)")
        #expect(throws: Boom()) {
            try connection.inTransaction(kind) {
                try connection.run("INSERT INTO t VALUES (1), (2)")
                #expect(try rows(connection) == 3)
                throw Boom()
            }
        }
        #expect(try rows(connection) == 1)
        #expect(try idle(connection))
    }

    @Test func rollsBackWhenCommitFails() throws {
        let connection = try connection()
        try connection.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        try connection.execute(
            "CREATE TABLE child (p INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED); PRAGMA foreign_keys = 1"
        )
        // A deferred foreign-key violation fails the COMMIT, not the INSERT.
        #expect(throws: SQLiteError.self) {
            try connection.inTransaction {
                try connection.run("INSERT INTO t VALUES (1)")
                try connection.run("INSERT INTO child VALUES (7)")
            }
        }
        #expect(try rows(connection) == 0)
        #expect(try idle(connection))
    }

    /// Not nestable: the inner call throws from its BEGIN without running its body, and the outer transaction is
    /// left as it was, to commit or roll back.
    @Test func nestedCallThrowsAndLeavesTheOuterTransactionAlone() throws {
        let connection = try connection()
        var innerRan = false
        try connection.inTransaction {
            try connection.run("INSERT INTO t VALUES (1)")
            let error = #expect(throws: SQLiteError.self) {
                try connection.inTransaction { innerRan = true }
            }
            #expect(error?.message.contains("within a transaction") == true)
            try connection.run("INSERT INTO t VALUES (2)")
        }
        #expect(!innerRan)
        #expect(try rows(connection) == 2)

        // Let through the outer call, the inner error rolls back everything the outer one wrote.
        #expect(throws: SQLiteError.self) {
            try connection.inTransaction {
                try connection.run("INSERT INTO t VALUES (3)")
                try connection.inTransaction {}
            }
        }
        #expect(try rows(connection) == 2)
        #expect(try idle(connection))
    }

    @Test func setPragmaChecksTheValueSQLiteHolds() throws {
        let connection = try connection()
        try connection.setPragma("journal_mode", "WAL")
        #expect(try connection.scalarInt("SELECT 1 FROM pragma_journal_mode WHERE journal_mode = 'wal'") == 1)
        try connection.setPragma("synchronous", "NORMAL", expected: "1")
        #expect(try connection.scalarInt("PRAGMA synchronous") == 1)
        try connection.setPragma("cache_size", "-1234")
        #expect(try connection.scalarInt("PRAGMA cache_size") == -1234)
        try connection.setPragma("user_version", "7")
        #expect(try connection.scalarInt("PRAGMA user_version") == 7)
    }

    @Test func setPragmaThrowsWhenSQLiteHoldsAnotherValue() throws {
        let connection = try connection()
        // Taken, but read back as its number: expecting the name fails.
        let error = #expect(throws: SQLiteError.self) {
            try connection.setPragma("synchronous", "FULL")
        }
        #expect(error?.message.contains("is 2") == true)
        // A pragma SQLite does not know answers nothing.
        #expect(throws: SQLiteError.self) { try connection.setPragma("no_such_pragma", "1") }
    }

    /// An in-memory database cannot use a WAL: `journal_mode = WAL` answers `memory`.
    @Test func walOnAnInMemoryDatabaseIsRefused() throws {
        let connection = try SQLiteConnection(path: ":memory:", readOnly: false, create: true)
        let error = #expect(throws: SQLiteError.self) { try connection.setPragma("journal_mode", "WAL") }
        #expect(error?.message.contains("memory") == true)
        // No memory mapping to turn off: `mmap_size` answers nothing, accepted only when asked to.
        #expect(throws: SQLiteError.self) { try connection.setPragma("mmap_size", "0") }
        try connection.setPragma("mmap_size", "0", noAnswerAccepted: true)
    }
}
