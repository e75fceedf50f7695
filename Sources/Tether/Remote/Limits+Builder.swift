import Foundation

/// The builder's bounds on what a server can make a client hold: the size of an answer, the
/// time of an exchange, and the lists whose validators it remembers (Docs/Reliability.md,
/// "A hostile server").
extension Client.Builder {
    /// The most bytes an answer's body may have, counted after decompression (a gzip body that
    /// inflates past it is stopped there): 64 MiB by default. A larger answer fails with a
    /// ``TransportError`` (`.responseTooLarge`) naming the URL and the limit, before anything is
    /// parsed or imported. A request hook can set another limit for one request
    /// (``TransportRequest/responseLimit``).
    ///
    /// ```swift
    /// builder.responseLimit(256 << 20)   // 256 MiB
    /// ```
    public func responseLimit(_ bytes: Int) -> Self {
        var copy = self
        copy.remote.responseLimit = max(0, bytes)
        return copy
    }

    /// The most time one exchange may take, from sending the request to the last byte of the
    /// answer, redirects included: 5 minutes by default, nil for none. Unlike a transport's
    /// timeout (time without data, which a server trickling a byte now and then resets), it
    /// bounds the whole exchange: when it passes, the exchange is cancelled, the request fails
    /// with a ``TransportError`` (`.deadlineExceeded`) and nothing is imported. Each attempt of a
    /// retried request has its own. A request hook can set another deadline for one request
    /// (``TransportRequest/deadline``).
    ///
    /// ```swift
    /// builder.deadline(.seconds(30))
    /// ```
    public func deadline(_ duration: Duration?) -> Self {
        var copy = self
        copy.remote.deadline = duration
        return copy
    }

    /// How many lists' validators (`ETag`, `Last-Modified`, sent back as `If-None-Match` and
    /// `If-Modified-Since`) the client remembers: 1,000 by default. Past the limit, the list
    /// fetched least recently is forgotten (its next fetch is a full one); 0 remembers none.
    public func listValidatorLimit(_ count: Int) -> Self {
        var copy = self
        copy.remote.listValidatorLimit = max(0, count)
        return copy
    }
}
