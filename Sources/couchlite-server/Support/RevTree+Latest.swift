import RevTree

extension RevTree {
    /// The leaves that descend from `rev` (`rev` itself when it is a leaf), winner first: what
    /// `latest=true` turns a requested revision into. Empty when `rev` is not in the tree.
    func leaves(descendingFrom rev: RevID) -> [RevID] {
        guard contains(rev) else { return [] }
        return leaves.filter { history(of: $0.rev).contains(rev) }.map(\.rev)
    }
}
