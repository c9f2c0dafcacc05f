package dev.rampart.android

import android.security.keystore.KeyGenParameterSpec
import android.security.keystore.KeyProperties
import java.security.KeyStore
import javax.crypto.Cipher
import javax.crypto.KeyGenerator
import javax.crypto.SecretKey
import javax.crypto.spec.GCMParameterSpec

/**
 * Storage whose values are encrypted (AES-256-GCM) under a key that lives in the Android Keystore
 * and never leaves it: the install id and the session (whose key signs tokens). Where the
 * Keystore cannot be had (a JVM test, a broken vendor Keystore), values are kept as they are in
 * the app's private files, which only the app can read; a value written one way is read back
 * either way.
 */
internal class KeystoreStorage(private val inner: KeyValueStorage, private val alias: String = "rampart.storage") : KeyValueStorage {
    private val key: SecretKey? by lazy { loadKey() }

    override fun get(key: String): String? {
        val raw = inner.get(key) ?: return null
        if (!raw.startsWith(SEALED)) return raw
        val k = this.key ?: return null
        val bytes = java.util.Base64.getDecoder().decode(raw.removePrefix(SEALED))
        val cipher = Cipher.getInstance(TRANSFORMATION)
        cipher.init(Cipher.DECRYPT_MODE, k, GCMParameterSpec(128, bytes, 0, IV_LENGTH))
        return String(cipher.doFinal(bytes, IV_LENGTH, bytes.size - IV_LENGTH), Charsets.UTF_8)
    }

    override fun set(key: String, value: String) {
        val k = this.key
        if (k == null) {
            inner.set(key, value)
            return
        }
        val cipher = Cipher.getInstance(TRANSFORMATION)
        cipher.init(Cipher.ENCRYPT_MODE, k)
        val sealed = cipher.iv + cipher.doFinal(value.toByteArray(Charsets.UTF_8))
        inner.set(key, SEALED + java.util.Base64.getEncoder().encodeToString(sealed))
    }

    override fun remove(key: String) = inner.remove(key)

    private fun loadKey(): SecretKey? = try {
        val store = KeyStore.getInstance(PROVIDER).apply { load(null) }
        (store.getKey(alias, null) as? SecretKey) ?: KeyGenerator.getInstance(KeyProperties.KEY_ALGORITHM_AES, PROVIDER).run {
            init(
                KeyGenParameterSpec.Builder(alias, KeyProperties.PURPOSE_ENCRYPT or KeyProperties.PURPOSE_DECRYPT)
                    .setBlockModes(KeyProperties.BLOCK_MODE_GCM)
                    .setEncryptionPaddings(KeyProperties.ENCRYPTION_PADDING_NONE)
                    .setKeySize(256)
                    .build(),
            )
            generateKey()
        }
    } catch (e: Exception) {
        null
    }

    companion object {
        private const val PROVIDER = "AndroidKeyStore"
        private const val TRANSFORMATION = "AES/GCM/NoPadding"
        private const val IV_LENGTH = 12
        private const val SEALED = "k1:"
    }
}
