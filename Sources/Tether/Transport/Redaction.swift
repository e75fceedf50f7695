public import Foundation

/// What Tether hides wherever it prints or records a request: credentials in headers, in the
/// URL's user and password, and in query parameters.
///
/// Every description Tether writes goes through it: ``TransportRequest``, ``HTTPHeaders``,
/// ``HTTPError``, ``TransportError`` and ``RequestError`` messages, and the files of
/// `RecordingTransport`. Use it in your own logging too:
/// ```swift
/// logger.info("\(request.method) \(Redaction.url(request.url))")
/// ```
public enum Redaction {
    /// What a hidden value is replaced with.
    public static let placeholder = "<redacted>"

    /// Header names whose values are credentials: `Authorization`, `Proxy-Authorization`,
    /// `Cookie`, `Set-Cookie`, and any name containing `token`, `secret`, `api-key`, `apikey`,
    /// `password` or `session` (`X-Auth-Token`, `X-Api-Key`), compared case-insensitively.
    public static func isSecretHeader(_ name: String) -> Bool {
        let name = name.lowercased()
        if ["authorization", "proxy-authorization", "cookie", "set-cookie"].contains(name) { return true }
        return ["token", "secret", "api-key", "apikey", "api_key", "password", "session"].contains { name.contains($0) }
    }

    /// Query parameter names whose values are credentials: `key`, `sig`, `signature`, `auth`,
    /// `code`, and any name containing `token`, `secret`, `password`, `apikey`, `api_key`,
    /// `access_key`, `credential` or `session` (`access_token`, `client_secret`).
    public static func isSecretQueryItem(_ name: String) -> Bool {
        let name = name.lowercased()
        if ["key", "sig", "signature", "auth", "code", "passwd", "pwd"].contains(name) { return true }
        return ["token", "secret", "password", "apikey", "api_key", "api-key", "access_key", "credential", "session"]
            .contains { name.contains($0) }
    }

    /// `url` without user and password, and with the value of every secret query parameter
    /// replaced by ``placeholder``. A URL with nothing to hide is returned unchanged.
    public static func url(_ url: URL) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url }
        var changed = false
        if components.user != nil || components.password != nil {
            components.user = nil
            components.password = nil
            changed = true
        }
        if let items = components.percentEncodedQueryItems, items.contains(where: { isSecretQueryItem($0.name) && $0.value != nil }) {
            components.percentEncodedQueryItems = items.map { item in
                guard isSecretQueryItem(item.name), item.value != nil else { return item }
                return URLQueryItem(name: item.name, value: "%3Credacted%3E")
            }
            changed = true
        }
        guard changed else { return url }
        return components.url ?? url
    }

    /// The headers with every secret value replaced by ``placeholder``.
    public static func headers(_ headers: HTTPHeaders) -> HTTPHeaders {
        HTTPHeaders(headers.fields.map { ($0.name, isSecretHeader($0.name) ? placeholder : $0.value) })
    }

    /// `text` with every secret the request carries (secret header values, the credential part of
    /// an `Authorization` value, the URL's password and secret query values) replaced by
    /// ``placeholder``: for messages of other code that may have copied the request.
    public static func scrub(_ text: String, of request: TransportRequest) -> String {
        scrub(text, secrets: secrets(of: request))
    }

    /// `text` with each of `secrets` (of four characters or more) replaced by ``placeholder``.
    public static func scrub(_ text: String, secrets: [String]) -> String {
        var text = text
        // Longest first, so that a credential inside a longer secret is not left half-replaced.
        for secret in Set(secrets).sorted(by: { $0.count > $1.count }) where secret.count >= 4 {
            text = text.replacingOccurrences(of: secret, with: placeholder)
        }
        return text
    }

    /// The secrets a request carries: secret header values (and the credential part of an
    /// `Authorization` value), the URL's password and secret query values.
    public static func secrets(of request: TransportRequest) -> [String] {
        var secrets: [String] = []
        for field in request.headers.fields where isSecretHeader(field.name) {
            secrets.append(field.value)
            // "Bearer abc": the credential alone may be printed without the scheme
            if let space = field.value.firstIndex(of: " ") { secrets.append(String(field.value[field.value.index(after: space)...])) }
        }
        if let components = URLComponents(url: request.url, resolvingAgainstBaseURL: true) {
            if let password = components.password { secrets.append(password) }
            if let password = components.percentEncodedPassword { secrets.append(password) }
            for item in components.percentEncodedQueryItems ?? [] where isSecretQueryItem(item.name) {
                if let value = item.value {
                    secrets.append(value)
                    if let decoded = value.removingPercentEncoding { secrets.append(decoded) }
                }
            }
        }
        return secrets
    }

    /// Whether two URLs have the same scheme, host and port (the default port of the scheme when
    /// none is written): credentials sent to one may go to the other.
    public static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int?) {
            let scheme = url.scheme?.lowercased() ?? ""
            return (scheme, url.host?.lowercased() ?? "", url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil))
        }
        return origin(a) == origin(b)
    }
}
