import XCTest
@testable import RampartCore

private func bytes(hex: String) -> [UInt8] {
    var out = [UInt8]()
    var i = hex.startIndex
    while i < hex.endIndex {
        let j = hex.index(i, offsetBy: 2)
        out.append(UInt8(hex[i..<j], radix: 16)!)
        i = j
    }
    return out
}

final class CryptoTests: XCTestCase {
    func testSHA256MatchesFIPS180Vectors() {
        XCTAssertEqual(RampartCrypto.hex(PortableSHA256.hash([])), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(RampartCrypto.hex(PortableSHA256.hash(Array("abc".utf8))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(
            RampartCrypto.hex(PortableSHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // A million 'a's: many blocks.
        XCTAssertEqual(
            RampartCrypto.hex(PortableSHA256.hash([UInt8](repeating: 0x61, count: 1_000_000))),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // Lengths around the padding boundary (55, 56, 64 bytes) agree with the platform's own when it has one.
        for n in [55, 56, 63, 64, 65, 119, 120] {
            let input = [UInt8](repeating: 0x5a, count: n)
            XCTAssertEqual(PortableSHA256.hash(input), RampartCrypto.sha256(input), "length \(n)")
        }
    }

    /// RFC 4231 §4: test cases 1-4, 6 and 7 (5 truncates the output, which the protocol never does).
    func testHMACSHA256MatchesRFC4231() {
        let cases: [(key: [UInt8], data: [UInt8], mac: String)] = [
            ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            ([UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
             "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
            (bytes(hex: "0102030405060708090a0b0c0d0e0f10111213141516171819"), [UInt8](repeating: 0xcd, count: 50),
             "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
            ([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
            ([UInt8](repeating: 0xaa, count: 131),
             Array("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".utf8),
             "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
        ]
        for (i, c) in cases.enumerated() {
            XCTAssertEqual(RampartCrypto.hex(PortableSHA256.hmac(key: c.key, message: c.data)), c.mac, "RFC 4231 case \(i + 1)")
            XCTAssertEqual(RampartCrypto.hex(RampartCrypto.hmacSHA256(key: c.key, message: c.data)), c.mac, "RFC 4231 case \(i + 1), platform")
        }
    }

    func testBase64URLHasNoPaddingAndTheURLAlphabet() {
        XCTAssertEqual(RampartCrypto.base64URL([0xfb, 0xff]), "-_8")
        XCTAssertEqual(RampartCrypto.base64URL([0xfb, 0xff, 0xbf]), "-_-_")
        XCTAssertEqual(RampartCrypto.base64URL([]), "")
        XCTAssertEqual(RampartCrypto.base64URL(Array("f".utf8)), "Zg")
    }
}
