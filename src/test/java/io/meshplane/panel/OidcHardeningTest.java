package io.meshplane.panel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** What single sign-on takes from the IdP's documents and messages before showing or logging it. */
class OidcHardeningTest {
  @Test
  void theEndSessionEndpointIsALinkOnlyWhenHttpsOrPlainHttpOnLoopback() {
    for (String ok : new String[] {"https://idp.example/logout", "https://idp.example/realms/x/protocol/openid-connect/logout?x=1",
        "http://127.0.0.2:8080/realms/r/logout", "http://localhost/logout", "http://[::1]:9/logout"}) {
      assertEquals(ok, OidcProvider.endSessionEndpoint(ok));
    }
    for (String bad : new String[] {"javascript:alert(1)", "JAVASCRIPT:alert(document.cookie)", "data:text/html,<script>x</script>",
        "http://idp.example/logout", "http://127.evil.example/logout", "/logout", "//idp.example/logout", "https://user:pw@idp.example/",
        "https://idp.example/logout#x", "ftp://idp.example/", "https:///nohost", "https://idp.example/ x", ""}) {
      assertNull(OidcProvider.endSessionEndpoint(bad), bad);
    }
    assertNull(OidcProvider.endSessionEndpoint(null));
  }

  @Test
  void anExchangeFailureIsLoggedByItsStatusOrErrorCodeNeverTheBody() {
    assertEquals("NoStackTraceThrowable: Bad Request", OidcService.summary(
        new io.vertx.core.impl.NoStackTraceThrowable("Bad Request: {\"error\":\"invalid_grant\",\"id_token\":\"eyJsecret\"}")));
    assertEquals("NoStackTraceThrowable: invalid_grant",
        OidcService.summary(new io.vertx.core.impl.NoStackTraceThrowable("invalid_grant: Code not valid for user alice@example")));
    String odd = OidcService.summary(new IllegalStateException("{\"access_token\":\"eyJ...\"}"));
    assertEquals("IllegalStateException: (message withheld)", odd);
    assertFalse(OidcService.summary(new RuntimeException("<html>" + "x".repeat(500))).contains("xx"));
  }
}
