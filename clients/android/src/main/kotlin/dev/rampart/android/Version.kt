package dev.rampart.android

/** The library's name and version, as sent in the registration's `sdk` and the user agent. */
internal object Version {
    const val NAME = "rampart-android"
    const val VERSION = "0.1.0"
    const val SDK = "$NAME/$VERSION"
}
