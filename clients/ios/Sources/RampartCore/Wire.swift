// The mobile wire protocol (docs/mobile.md): the session registration at `POST /v1/client/token`,
// the request token minted on the device, and the app events at `POST /v1/client/events`.
import Foundation

public enum RampartSDKInfo {
    public static let name = "rampart-ios"
    public static let version = "0.1.0"
    /// `rampart-ios/<version>`, the registration's `sdk`.
    public static var sdk: String { "\(name)/\(version)" }
}

public enum MobilePlatform: String, Codable, Sendable {
    case android, ios
}

/// What the device's own checks can report (docs/mobile.md, `integrity`).
public enum IntegrityCheck: String, Codable, CaseIterable, Sendable {
    case emulator, rooted, jailbroken, debugger
    case hookingFramework = "hooking_framework"
    case appTampered = "app_tampered"
    case mockLocation = "mock_location"
}

public struct Attestation: Codable, Equatable, Sendable {
    public enum Kind: String, Codable, Sendable {
        case playIntegrity = "play_integrity"
        case appAttest = "app_attest"
    }
    public var kind: Kind
    /// At most 16,384 characters; carried as evidence, not verified by Rampart.
    public var token: String
    public init(kind: Kind, token: String) {
        self.kind = kind
        self.token = token
    }
}

public struct ScreenSize: Codable, Equatable, Sendable {
    public var width: Double
    public var height: Double
    public var scale: Double
    public init(width: Double, height: Double, scale: Double) {
        self.width = width
        self.height = height
        self.scale = scale
    }
}

/// The registration's `mobile` object. Optional members that are nil are left out.
public struct MobileComponents: Codable, Equatable {
    public struct App: Codable, Equatable {
        public var id: String
        public var version: String
        public var build: String?
    }
    public var platform: MobilePlatform
    public var osVersion: String
    public var model: String
    public var manufacturer: String?
    public var app: App
    public var sdk: String?
    public var locale: String?
    public var timezone: String?
    public var timezoneOffset: Int?
    public var screen: ScreenSize?
    public var installId: String
    public var vendorId: String?
    public var deviceId: String?
    public var userAgent: String?
    public var integrity: [IntegrityCheck]?
    public var attestation: Attestation?
}

struct RegisterRequest: Encodable {
    let publishable_key: String
    let mobile: MobileComponents
}

/// An event property: a string (at most 256 characters), a number or a boolean.
public enum PropertyValue: Codable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let b = try? c.decode(Bool.self) { self = .bool(b); return }
        if let n = try? c.decode(Double.self) { self = .number(n); return }
        self = .string(try c.decode(String.self))
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let s): try c.encode(s)
        case .bool(let b): try c.encode(b)
        case .number(let n):
            if n == n.rounded(), abs(n) < 9_007_199_254_740_992 { try c.encode(Int64(n)) } else { try c.encode(n) }
        }
    }

    /// A trait as a property: strings cut to 256 characters, finite numbers, booleans; anything else nil.
    public static func from(_ value: Any) -> PropertyValue? {
        switch value {
        case let b as Bool: return .bool(b)
        case let s as String: return .string(String(s.prefix(Limits.propertyStringLength)))
        case let i as Int: return .number(Double(i))
        case let d as Double: return d.isFinite ? .number(d) : nil
        case let f as Float: return f.isFinite ? .number(Double(f)) : nil
        case let n as NSNumber: return n.doubleValue.isFinite ? .number(n.doubleValue) : nil
        default: return nil
        }
    }
}

public typealias EventProperties = [String: PropertyValue]

public enum AppEventType: String, Codable {
    case appInstalled = "app_installed"
    case appUpdated = "app_updated"
    case appOpened = "app_opened"
    case appClosed = "app_closed"
    case screen
    case identify
    /// A named event of the app's own (Castle's `custom`).
    case custom
}

/// One event as it goes on the wire, stamped in Rampart's clock.
public struct AppEvent: Codable, Equatable {
    public var type: AppEventType
    public var timestamp: String
    public var name: String?
    public var user_id: String?
    public var user_signature: String?
    public var user_jwt: String?
    public var properties: EventProperties?
}

struct EventsRequest: Encodable {
    let publishable_key: String
    let session: String
    let events: [AppEvent]
}

public enum WirePrefix {
    public static let session = "rps1."
    public static let mobileToken = "rpm1."
}

/// The protocol's bounds, which the client keeps to so that nothing is refused for its shape.
public enum Limits {
    public static let eventsPerRequest = 100
    public static let propertiesPerEvent = 20
    public static let propertyStringLength = 256
    public static let nameLength = 128
    public static let userIdLength = 128
    public static let osVersionLength = 32
    public static let modelLength = 64
    public static let manufacturerLength = 64
    public static let appVersionLength = 32
    public static let sdkLength = 64
    public static let localeLength = 35
    public static let timezoneLength = 64
    public static let deviceIdLength = 64
    public static let userAgentLength = 512
    public static let attestationTokenLength = 16_384
    public static let integrityChecks = 16
    public static let userJwtLength = 4096
}

/// ISO 8601 in UTC with milliseconds (`2026-11-25T20:00:00.000Z`), from milliseconds since the epoch.
public func isoTimestamp(ms: Int64) -> String {
    let days = Int64((Double(ms) / 86_400_000).rounded(.down))
    let msOfDay = ms - days * 86_400_000
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let d = doy - (153 * mp + 2) / 5 + 1
    let m = mp < 10 ? mp + 3 : mp - 9
    let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
    let h = msOfDay / 3_600_000, mi = (msOfDay / 60_000) % 60, s = (msOfDay / 1000) % 60, milli = msOfDay % 1000
    func pad(_ v: Int64, _ n: Int) -> String {
        let t = String(v)
        return String(repeating: "0", count: max(0, n - t.count)) + t
    }
    return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(h, 2)):\(pad(mi, 2)):\(pad(s, 2)).\(pad(milli, 3))Z"
}

/// Rampart's error body (`{"type": "invalid_request_token", "message": …, "fields": […]}`).
struct ErrorBody: Decodable {
    struct Field: Decodable {
        let field: String?
        let message: String?
    }
    let type: String?
    let message: String?
    let fields: [Field]?
}
