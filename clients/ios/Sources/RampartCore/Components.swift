// The registration's `mobile` object, built from what the platform reports (docs/mobile.md §1),
// and the user agent the library describes the app with. Every value is cut to the protocol's
// bounds here, and anything out of range is left out, because the collector refuses the whole
// registration (422) for one oversized member.
//
// Privacy: the raw vendor id (identifierForVendor) is hashed with the app's id before it is
// sent; it is sent as it is only with device-ID forwarding on.
import Foundation

private func cut(_ s: String?, _ max: Int) -> String? {
    guard let s, !s.isEmpty else { return nil }
    return String(s.prefix(max))
}

public struct ComponentOptions {
    public var installId: String
    public var sdk: String
    public var userAgent: String
    public var forwardDeviceId: Bool
    public var attestation: Attestation?
}

public func buildComponents(_ info: DeviceInfo, _ o: ComponentOptions) -> MobileComponents {
    var integrity: [IntegrityCheck] = []
    for c in info.integrity where !integrity.contains(c) { integrity.append(c) }
    var screen: ScreenSize?
    if let s = info.screen, (0...100_000).contains(s.width), (0...100_000).contains(s.height), (0...10).contains(s.scale) { screen = s }
    var vendorId: String?
    var deviceId: String?
    if let v = info.vendorId, !v.isEmpty {
        vendorId = RampartCrypto.sha256Hex("\(info.app.id):\(v)")
        if o.forwardDeviceId { deviceId = String(v.prefix(Limits.deviceIdLength)) }
    }
    var attestation: Attestation?
    if let a = o.attestation, !a.token.isEmpty, a.token.count <= Limits.attestationTokenLength { attestation = a }
    return MobileComponents(
        platform: info.platform,
        osVersion: cut(info.osVersion, Limits.osVersionLength) ?? "unknown",
        model: cut(info.model, Limits.modelLength) ?? "unknown",
        manufacturer: cut(info.manufacturer, Limits.manufacturerLength),
        app: .init(id: info.app.id, version: cut(info.app.version, Limits.appVersionLength) ?? "0", build: cut(info.app.build, Limits.appVersionLength)),
        sdk: String(o.sdk.prefix(Limits.sdkLength)),
        locale: cut(info.locale, Limits.localeLength),
        timezone: cut(info.timezone, Limits.timezoneLength),
        timezoneOffset: info.timezoneOffset.flatMap { (-900...900).contains($0) ? $0 : nil },
        screen: screen,
        installId: o.installId,
        vendorId: vendorId,
        deviceId: deviceId,
        userAgent: String(o.userAgent.prefix(Limits.userAgentLength)),
        integrity: integrity.isEmpty ? nil : Array(integrity.prefix(Limits.integrityChecks)),
        attestation: attestation)
}

/// Printable ASCII only, without the characters that would split a product token.
private func productToken(_ s: String) -> String {
    String(String.UnicodeScalarView(s.unicodeScalars.filter { $0.value >= 0x21 && $0.value <= 0x7e && !"/()\";".unicodeScalars.contains($0) }))
}

private func comment(_ s: String) -> String {
    String(String.UnicodeScalarView(s.unicodeScalars.filter { $0.value >= 0x20 && $0.value <= 0x7e && !"()\";".unicodeScalars.contains($0) }))
        .trimmingCharacters(in: .whitespaces)
}

/// `<AppName>/<version> (<build>; <model>; <OS> <osVersion>) <sdk>`, the same for every request of
/// the app, safe as an HTTP header value (ASCII, no parentheses inside the comment).
public func buildUserAgent(_ info: DeviceInfo, sdk: String) -> String {
    let nameToken = productToken(info.app.name)
    let idToken = productToken(info.app.id)
    let name = String((nameToken.isEmpty ? (idToken.isEmpty ? "App" : idToken) : nameToken).prefix(150))
    let versionToken = productToken(info.app.version)
    let version = String((versionToken.isEmpty ? "0" : versionToken).prefix(Limits.appVersionLength))
    let buildComment = comment(info.app.build ?? "")
    let build = String((buildComment.isEmpty ? version : buildComment).prefix(Limits.appVersionLength))
    let modelComment = comment(info.model)
    let model = String((modelComment.isEmpty ? "unknown" : modelComment).prefix(Limits.modelLength))
    let os = info.platform == .ios ? "iOS" : "Android"
    let osVersion = String(comment(info.osVersion).prefix(Limits.osVersionLength))
    return String("\(name)/\(version) (\(build); \(model); \(os) \(osVersion)) \(sdk)".prefix(Limits.userAgentLength))
}
