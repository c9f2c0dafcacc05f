import XCTest
@testable import RampartSDK
