// The configuration object, in Castle iOS's shape (`CastleConfiguration(publishableKey:)` and its
// properties), plus the base URL of the Rampart that answers. Defaults are the spec's and
// Castle's mobile SDKs': flush at 20 queued events, keep at most 1,000, automatic screen tracking
// on, lifecycle tracking on, debug logging and device-ID forwarding off.
import Foundation

public final class RampartConfiguration {
    /// The environment's publishable key (`pk_…`, `npx rampart env list`): not a secret.
    public let publishableKey: String
    /// Where Rampart answers, e.g. `https://rampart.example.com`.
    public var baseURL: URL
    /// A `screen` event for each view controller that appears (on by default).
    public var screenTrackingEnabled = true
    /// `app_installed`, `app_updated`, `app_opened` and `app_closed` events (on by default).
    public var lifecycleTrackingEnabled = true
    /// Logs through the platform's logger; never the session key, the session or a whole token.
    public var debugLoggingEnabled = false
    /// Sends the raw identifierForVendor as `deviceId` (shown to analysts); off by default.
    public var deviceIDAutoForwardingEnabled = false
    /// At most this many events are queued; the oldest go first.
    public var maxQueueLimit = 1000
    /// Flush when this many events are queued.
    public var flushLimit = 20
    /// Base URLs of the app's own API: only requests under them get the request-token header.
    public var baseURLAllowList: [URL] = []
    /// The request-token header (default `X-Service-Client-Id`; Castle's is `X-Castle-Request-Token`).
    public var clientIdHeaderName = RampartConfiguration.defaultClientIdHeaderName

    public static let defaultClientIdHeaderName = "X-Service-Client-Id"
    /// Castle's header; `clientIdHeaderName = RampartConfiguration.castleRequestTokenHeaderName` keeps a Castle backend's.
    public static let castleRequestTokenHeaderName = "X-Castle-Request-Token"

    // Castle's spellings: aliases where the setting means the same here, a compile-time error with
    // the reason where it means nothing (a migrated app must not believe a setting works).

    /// Castle's name for `clientIdHeaderName`.
    public var requestTokenHeaderName: String {
        get { clientIdHeaderName }
        set { clientIdHeaderName = newValue }
    }

    /// Castle's older name for `baseURLAllowList`.
    @available(*, deprecated, renamed: "baseURLAllowList")
    public var baseURLWhiteList: [URL] {
        get { baseURLAllowList }
        set { baseURLAllowList = newValue }
    }

    @available(*, unavailable, message: "Rampart is self-hosted: put its address (or a proxy's) in baseURL")
    public var useCloudflareApp: Bool { get { false } set {} }

    @available(*, unavailable, message: "Rampart is self-hosted: put its address in baseURL")
    public var apiDomain: String { get { "" } set {} }

    @available(*, unavailable, message: "Rampart is self-hosted: put its address, with any path, in baseURL")
    public var apiPath: String { get { "" } set {} }

    public init(publishableKey: String, baseURL: URL) {
        self.publishableKey = publishableKey
        self.baseURL = baseURL
    }

    /// A copy, so that changing the object after `configure` has no effect (as Castle's).
    func copy() -> RampartConfiguration {
        let c = RampartConfiguration(publishableKey: publishableKey, baseURL: baseURL)
        c.screenTrackingEnabled = screenTrackingEnabled
        c.lifecycleTrackingEnabled = lifecycleTrackingEnabled
        c.debugLoggingEnabled = debugLoggingEnabled
        c.deviceIDAutoForwardingEnabled = deviceIDAutoForwardingEnabled
        c.maxQueueLimit = maxQueueLimit
        c.flushLimit = flushLimit
        c.baseURLAllowList = baseURLAllowList
        c.clientIdHeaderName = clientIdHeaderName
        return c
    }
}

public enum RampartConfigurationError: Error, CustomStringConvertible, Equatable {
    case invalidPublishableKey
    case invalidBaseURL
    case invalidLimit(String)
    case invalidHeaderName
    case invalidAllowListEntry(String)
    case alreadyConfigured

    public var description: String {
        switch self {
        case .invalidPublishableKey: return "Rampart: the configuration needs the publishable key (pk_…)"
        case .invalidBaseURL: return "Rampart: baseURL must be an absolute http(s) URL"
        case .invalidLimit(let name): return "Rampart: \(name) must be a positive integer"
        case .invalidHeaderName: return "Rampart: clientIdHeaderName must be an HTTP header name"
        case .invalidAllowListEntry(let u): return "Rampart: baseURLAllowList entry is not an absolute http(s) URL: \(u)"
        case .alreadyConfigured: return "Rampart: configure was already called; the first configuration stays"
        }
    }
}

private let tokenChars = CharacterSet(charactersIn: "!#$%&'*+.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-")

func validate(_ c: RampartConfiguration) throws -> AllowList {
    guard c.publishableKey.hasPrefix("pk_") else { throw RampartConfigurationError.invalidPublishableKey }
    guard parseHTTPURL(c.baseURL.absoluteString) != nil else { throw RampartConfigurationError.invalidBaseURL }
    guard c.maxQueueLimit >= 1 else { throw RampartConfigurationError.invalidLimit("maxQueueLimit") }
    guard c.flushLimit >= 1 else { throw RampartConfigurationError.invalidLimit("flushLimit") }
    guard !c.clientIdHeaderName.isEmpty, c.clientIdHeaderName.unicodeScalars.allSatisfy(tokenChars.contains) else { throw RampartConfigurationError.invalidHeaderName }
    do {
        return try AllowList(c.baseURLAllowList.map(\.absoluteString))
    } catch AllowListError.notAnHTTPURL(let u) {
        throw RampartConfigurationError.invalidAllowListEntry(u)
    }
}
