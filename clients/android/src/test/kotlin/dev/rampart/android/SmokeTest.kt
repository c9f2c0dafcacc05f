package dev.rampart.android

import android.app.Application
import org.robolectric.RuntimeEnvironment
import org.junit.Assert.assertEquals
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.RobolectricTestRunner
import org.robolectric.annotation.Config

@RunWith(RobolectricTestRunner::class)
@Config(sdk = [34])
class SmokeTest {
    @Test
    fun runsOnAndroid() {
        val app: Application = RuntimeEnvironment.getApplication()
        assertEquals("rampart-android/0.1.0", Version.SDK)
        assertEquals(34, android.os.Build.VERSION.SDK_INT)
        println(app.packageName)
    }
}
