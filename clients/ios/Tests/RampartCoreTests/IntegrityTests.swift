import XCTest
@testable import RampartCore

final class IntegrityTests: XCTestCase {
    func testJailbreakEvidence() {
        XCTAssertFalse(IntegrityRules.jailbroken(fileExists: { _ in false }, canWriteOutsideSandbox: { false }))
        XCTAssertTrue(IntegrityRules.jailbroken(fileExists: { $0 == "/Applications/Sileo.app" }, canWriteOutsideSandbox: { false }))
        XCTAssertTrue(IntegrityRules.jailbroken(fileExists: { _ in false }, canWriteOutsideSandbox: { true }))
    }

    func testHookingFrameworksAmongTheLoadedImages() {
        XCTAssertFalse(IntegrityRules.hooked(imageNames: ["/usr/lib/libSystem.B.dylib", "/System/Library/Frameworks/UIKit.framework/UIKit"]))
        XCTAssertTrue(IntegrityRules.hooked(imageNames: ["/usr/lib/libSystem.B.dylib", "/private/var/containers/Bundle/FridaGadget.dylib"]))
        XCTAssertTrue(IntegrityRules.hooked(imageNames: ["/Library/MobileSubstrate/MobileSubstrate.dylib"]))
    }

    func testFindingsUseTheProtocolsNamesAndReachTheRegistration() {
        let found = IntegrityRules.findings(simulator: true, jailbroken: true, debugger: false, hooked: true, tampered: false)
        XCTAssertEqual(found.map(\.rawValue), ["emulator", "jailbroken", "hooking_framework"])
        var phone = testPhone
        phone.integrity = found + [.jailbroken]
        let m = buildComponents(phone, ComponentOptions(installId: "AAAAAAAAAAAAAAAAAAAAAA", sdk: "rampart-ios/0", userAgent: "x", forwardDeviceId: false, attestation: nil))
        XCTAssertEqual(m.integrity, [.emulator, .jailbroken, .hookingFramework])
    }

    func testOversizedValuesAreCutOrLeftOutRatherThanRefused() {
        var phone = testPhone
        phone.model = String(repeating: "M", count: 100)
        phone.timezoneOffset = 5000
        phone.screen = ScreenSize(width: 1, height: 1, scale: 50)
        let m = buildComponents(phone, ComponentOptions(installId: "AAAAAAAAAAAAAAAAAAAAAA", sdk: "rampart-ios/0", userAgent: "x", forwardDeviceId: false, attestation: Attestation(kind: .appAttest, token: "")))
        XCTAssertEqual(m.model.count, 64)
        XCTAssertNil(m.timezoneOffset)
        XCTAssertNil(m.screen)
        XCTAssertNil(m.attestation)
    }

    func testTimestampsAreISO8601InUTCWithMilliseconds() {
        XCTAssertEqual(isoTimestamp(ms: 0), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(isoTimestamp(ms: 1_764_100_800_050), "2025-11-25T20:00:00.050Z")
        XCTAssertEqual(isoTimestamp(ms: 951_782_400_000), "2000-02-29T00:00:00.000Z")
        XCTAssertEqual(isoTimestamp(ms: -1), "1969-12-31T23:59:59.999Z")
    }
}
