package dev.rampart.android

import java.security.MessageDigest
import javax.crypto.Mac
import javax.crypto.spec.SecretKeySpec

/** The hashing the protocol needs, from the platform's JCA (no dependency). */
internal object Crypto {
    private val ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".toCharArray()

    /** base64url without padding (RFC 4648 §5): the token's MAC and the ids. */
    fun base64url(bytes: ByteArray): String {
        val sb = StringBuilder((bytes.size * 4 + 2) / 3)
        var i = 0
        while (i + 2 < bytes.size) {
            val n = (bytes[i].toInt() and 0xff shl 16) or (bytes[i + 1].toInt() and 0xff shl 8) or (bytes[i + 2].toInt() and 0xff)
            sb.append(ALPHABET[n shr 18]).append(ALPHABET[n shr 12 and 63]).append(ALPHABET[n shr 6 and 63]).append(ALPHABET[n and 63])
            i += 3
        }
        when (bytes.size - i) {
            1 -> {
                val n = bytes[i].toInt() and 0xff shl 16
                sb.append(ALPHABET[n shr 18]).append(ALPHABET[n shr 12 and 63])
            }
            2 -> {
                val n = (bytes[i].toInt() and 0xff shl 16) or (bytes[i + 1].toInt() and 0xff shl 8)
                sb.append(ALPHABET[n shr 18]).append(ALPHABET[n shr 12 and 63]).append(ALPHABET[n shr 6 and 63])
            }
        }
        return sb.toString()
    }

    fun hex(bytes: ByteArray): String {
        val sb = StringBuilder(bytes.size * 2)
        for (b in bytes) sb.append(Character.forDigit(b.toInt() shr 4 and 15, 16)).append(Character.forDigit(b.toInt() and 15, 16))
        return sb.toString()
    }

    fun hmacSha256(key: ByteArray, message: ByteArray): ByteArray {
        val mac = Mac.getInstance("HmacSHA256")
        mac.init(SecretKeySpec(key, "HmacSHA256"))
        return mac.doFinal(message)
    }

    /** HMAC-SHA256 keyed by the UTF-8 bytes of [key], base64url without padding. */
    fun hmacSha256Base64url(key: String, message: String): String = base64url(hmacSha256(key.toByteArray(Charsets.UTF_8), message.toByteArray(Charsets.UTF_8)))

    /** SHA-256 of the UTF-8 bytes of [text], lower-case hex. */
    fun sha256Hex(text: String): String = hex(MessageDigest.getInstance("SHA-256").digest(text.toByteArray(Charsets.UTF_8)))
}
