import Foundation

/// The builder's bounds on what a server can make a client hold: the lists whose validators it
/// remembers (Docs/Reliability.md, "A hostile server").
extension Client.Builder {
    /// How many lists' validators (`ETag`, `Last-Modified`, sent back as `If-None-Match` and
    /// `If-Modified-Since`) the client remembers: 1,000 by default. Past the limit, the list
    /// fetched least recently is forgotten (its next fetch is a full one); 0 remembers none.
    public func listValidatorLimit(_ count: Int) -> Self {
        var copy = self
        copy.remote.listValidatorLimit = max(0, count)
        return copy
    }
}
