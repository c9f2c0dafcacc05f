package dev.rampart.android

/** The mobile wire protocol's names and bounds (Rampart's docs/mobile.md). */
internal object Wire {
    const val SESSION_PREFIX = "rps1."
    const val MOBILE_TOKEN_PREFIX = "rpm1."
    const val TOKEN_PATH = "/v1/client/token"
    const val EVENTS_PATH = "/v1/client/events"
    const val CHALLENGE_PATH = "/v1/client/challenge"

    const val EVENTS_PER_REQUEST = 100
    const val PROPERTIES_PER_EVENT = 20
    const val PROPERTY_STRING_LENGTH = 256
    const val NAME_LENGTH = 128
    const val USER_ID_LENGTH = 128
    const val USER_JWT_LENGTH = 4096
    const val OS_VERSION_LENGTH = 32
    const val MODEL_LENGTH = 64
    const val MANUFACTURER_LENGTH = 64
    const val APP_VERSION_LENGTH = 32
    const val SDK_LENGTH = 64
    const val LOCALE_LENGTH = 35
    const val TIMEZONE_LENGTH = 64
    const val DEVICE_ID_LENGTH = 64
    const val USER_AGENT_LENGTH = 512
    const val ATTESTATION_TOKEN_LENGTH = 16_384
    const val INTEGRITY_CHECKS_MAX = 16

    val INTEGRITY_CHECKS = listOf("emulator", "rooted", "jailbroken", "debugger", "hooking_framework", "app_tampered", "mock_location")
}

/** An answer from Rampart that is not a success: its status and error type, never a secret. */
class RampartHttpException(val status: Int, val type: String?, message: String) : Exception(message)
