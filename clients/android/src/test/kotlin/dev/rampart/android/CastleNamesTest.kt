package dev.rampart.android

import android.app.Application
import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment

/** An app written for Castle's Android SDK, with only its import, key and Rampart's URL changed. */
@RunWith(RobolectricTestRunner::class)
class CastleNamesTest {
    @After
    fun tearDown() = Rampart.shutdown()

    @Test
    fun castlesNamesConfigureAndAnswer() {
        val application: Application = RuntimeEnvironment.getApplication()
        val configuration = CastleConfiguration.Builder()
            .publishableKey("pk_castle_app")
            .baseUrl("https://rampart.test")
            .baseURLWhiteList(listOf("https://api.shop.example/v1"))
            .requestTokenHeaderName(RampartConfiguration.CASTLE_HEADER)
            .screenTrackingEnabled(true)
            .debugLoggingEnabled(false)
            .flushLimit(20)
            .maxQueueLimit(1000)
            .build()
        Castle.configure(application, configuration)
        assertEquals(listOf("https://api.shop.example/v1"), configuration.baseURLAllowList)
        assertEquals("X-Castle-Request-Token", Castle.requestTokenHeaderName())
        val interceptor: CastleInterceptor = Castle.castleInterceptor()
        assertTrue(interceptor is RampartInterceptor)
        Castle.screen("Checkout")
        Castle.custom("Added to cart", mapOf("sku" to "A-1"))
        Castle.client()!!.idle()
        assertTrue(Castle.queueSize() >= 2)
        assertTrue(Castle.headers("https://elsewhere.example/").isEmpty())
    }
}
