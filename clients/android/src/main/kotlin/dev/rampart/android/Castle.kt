package dev.rampart.android

/**
 * Castle's names, so that a Kotlin app written for Castle's Android SDK changes its imports
 * (`io.castle.android.Castle` → `dev.rampart.android.Castle`), its key and Rampart's base URL,
 * and nothing else. Java callers use [Rampart] and [RampartConfiguration].
 */
typealias Castle = Rampart

typealias CastleInterceptor = RampartInterceptor

/** Castle's `CastleConfiguration.Builder()`: builds a [RampartConfiguration]. */
object CastleConfiguration {
    @Suppress("FunctionName")
    @JvmStatic
    fun Builder(): RampartConfiguration.Builder = RampartConfiguration.Builder()
}
