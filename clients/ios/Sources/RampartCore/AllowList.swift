// The base-URL allow list: which requests get a request token. A token is the app's proof of
// device to its own API, so it must never reach another host. A URL is allowed when its scheme,
// host and port equal an entry's and its path is the entry's path or below it at a `/` boundary
// (`/v1` allows `/v1` and `/v1/…`, never `/v10`).
//
// The URL is parsed here, conservatively, with the same rules as the React Native library's:
// whatever two parsers might read differently (user info, a backslash, spaces or control
// characters, percent-encoding or non-ASCII in the host, dot segments) is refused, so an odd URL
// goes without a token rather than to the wrong host.
import Foundation

public struct HTTPURLParts: Equatable {
    public let scheme: String
    /// Lower-case host name, IPv4 address or bracketed IPv6 address.
    public let host: String
    public let port: Int
    /// The path, `/` when empty; without query or fragment.
    public let path: String
}

private func isHostChar(_ c: UInt8) -> Bool {
    (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c == 0x2d
}

private func validHost(_ host: String) -> Bool {
    let b = Array(host.utf8)
    if b.first == 0x5b {
        guard b.count > 2, b.last == 0x5d else { return false }
        return b[1..<(b.count - 1)].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || $0 == 0x3a || $0 == 0x2e }
    }
    guard !b.isEmpty else { return false }
    let labels = host.split(separator: ".", omittingEmptySubsequences: false)
    return labels.allSatisfy { label in
        let l = Array(label.utf8)
        guard let first = l.first, let last = l.last else { return false }
        return l.allSatisfy(isHostChar) && first != 0x2d && last != 0x2d
    }
}

/// An absolute http(s) URL, or nil when it is anything else or could be read two ways.
public func parseHTTPURL(_ url: String) -> HTTPURLParts? {
    for c in url.unicodeScalars where c.value <= 0x20 || c.value == 0x7f || c.value == 0x5c { return nil }
    guard let sep = url.range(of: "://") else { return nil }
    let scheme = url[url.startIndex..<sep.lowerBound]
    guard let f = scheme.unicodeScalars.first, CharacterSet.letters.contains(f), f.isASCII,
          scheme.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "+.-".unicodeScalars.contains($0)) })
    else { return nil }
    let lowerScheme = scheme.lowercased()
    guard lowerScheme == "http" || lowerScheme == "https" else { return nil }
    let rest = url[sep.upperBound...]
    let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
    let authority = String(rest[rest.startIndex..<authorityEnd])
    let afterAuthority = rest[authorityEnd...]
    let pathEnd = afterAuthority.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? afterAuthority.endIndex
    let rawPath = String(afterAuthority[afterAuthority.startIndex..<pathEnd])
    // User info (`https://api.example.com@evil.com`) is refused outright: no app needs it.
    if authority.contains("@") { return nil }
    var hostPart = authority
    var portPart: String?
    if authority.hasPrefix("[") {
        guard let close = authority.firstIndex(of: "]") else { return nil }
        hostPart = String(authority[authority.startIndex...close])
        let tail = authority[authority.index(after: close)...]
        if !tail.isEmpty {
            guard tail.hasPrefix(":") else { return nil }
            portPart = String(tail.dropFirst())
        }
    } else if let colon = authority.firstIndex(of: ":") {
        hostPart = String(authority[authority.startIndex..<colon])
        portPart = String(authority[authority.index(after: colon)...])
    }
    let host = hostPart.lowercased()
    guard validHost(host) else { return nil }
    var port = lowerScheme == "https" ? 443 : 80
    if let p = portPart {
        guard (1...5).contains(p.count), p.unicodeScalars.allSatisfy({ $0.value >= 0x30 && $0.value <= 0x39 }), let n = Int(p), (1...65535).contains(n) else { return nil }
        port = n
    }
    let path = rawPath.isEmpty ? "/" : rawPath
    // Dot segments, plain or percent-encoded, could climb out of an allowed prefix.
    for seg in path.split(separator: "/", omittingEmptySubsequences: false) {
        let s = seg.lowercased().replacingOccurrences(of: "%2e", with: ".")
        if s == "." || s == ".." { return nil }
    }
    return HTTPURLParts(scheme: lowerScheme, host: host, port: port, path: path)
}

public enum AllowListError: Error, CustomStringConvertible {
    case notAnHTTPURL(String)
    public var description: String {
        switch self {
        case .notAnHTTPURL(let u): return "Rampart: baseURLAllowList entry is not an absolute http(s) URL: \(u)"
        }
    }
}

public struct AllowList {
    private let entries: [HTTPURLParts]

    /// Throws on an entry that is not an absolute http(s) URL: a typo must not silently disable the header.
    public init(_ urls: [String]) throws {
        entries = try urls.map { u in
            guard let p = parseHTTPURL(u) else { throw AllowListError.notAnHTTPURL(u) }
            return p
        }
    }

    public var count: Int { entries.count }

    public func allows(_ url: String) -> Bool {
        guard let u = parseHTTPURL(url) else { return false }
        return entries.contains { e in
            guard e.scheme == u.scheme, e.host == u.host, e.port == u.port else { return false }
            let base = e.path.hasSuffix("/") ? e.path : e.path + "/"
            return u.path == e.path || u.path.hasPrefix(base)
        }
    }

    public func allows(_ url: URL) -> Bool { allows(url.absoluteString) }
}
