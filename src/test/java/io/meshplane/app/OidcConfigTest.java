package io.meshplane.app;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.meshplane.access.Role;
import io.meshplane.panel.OidcSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code panel.oidc.*}: checked at start, each error naming its key; the client secret never echoed. */
class OidcConfigTest {
  static final String MAPPINGS = "[{\"claim\":\"groups\",\"value\":\"mesh-admins\",\"role\":\"admin\",\"team\":\"*\",\"environment\":\"*\"},"
      + "{\"claim\":\"realm_access.roles\",\"value\":\"viewer\",\"role\":\"viewer\",\"team\":\"web\",\"environment\":\"prod\"}]";

  static Map<String, String> valid() {
    Map<String, String> o = new HashMap<>();
    o.put("panel.oidc.issuer", "https://idp.example.net/realms/mesh/");
    o.put("panel.oidc.client_id", "meshplane-panel");
    o.put("panel.oidc.client_secret", "s3cr3t-value-never-shown");
    o.put("panel.oidc.redirect_uri", "https://panel.example.net/api/v1/session/oidc/callback");
    o.put("panel.oidc.mappings", MAPPINGS);
    return o;
  }

  static String error(Map<String, String> overrides) {
    return assertThrows(ConfigException.class, () -> ConfigLoader.load(null, false, Map.of(), overrides)).getMessage();
  }

  @Test
  void offByDefaultAndParsedWhenSet() {
    assertFalse(ConfigLoader.load(null, false, Map.of(), Map.of()).panel().oidc().enabled());
    OidcSettings s = ConfigLoader.load(null, false, Map.of(), valid()).panel().oidc();
    assertTrue(s.enabled());
    assertEquals("https://idp.example.net/realms/mesh", s.issuer());
    assertEquals(List.of("openid", "profile", "email"), s.scopes());
    assertEquals(2, s.mappings().size());
    assertEquals(Role.VIEWER, s.mappings().get(1).role());
    assertEquals("realm_access.roles", s.mappings().get(1).claim());
    assertFalse(s.toString().contains("s3cr3t"), s.toString());
  }

  @Test
  void theMappingsComeFromTheYamlFileAsAList(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("meshplane.yaml");
    Files.writeString(file, """
        panel:
          oidc:
            issuer: https://idp.example.net/realms/mesh
            client_id: meshplane-panel
            redirect_uri: https://panel.example.net/api/v1/session/oidc/callback
            mappings:
              - {claim: groups, value: mesh-admins, role: admin, team: "*", environment: "*"}
        """);
    OidcSettings s = ConfigLoader.load(file, true, Map.of("MESH_PANEL_OIDC_CLIENT_SECRET", "from-env"), Map.of()).panel().oidc();
    assertEquals("from-env", s.clientSecret());
    assertEquals("mesh-admins", s.mappings().get(0).value());
  }

  @Test
  void theSecretMayComeFromAFileButNotFromBoth(@TempDir Path dir) throws Exception {
    Path secret = dir.resolve("secret");
    Files.writeString(secret, "file-secret\n");
    Map<String, String> o = valid();
    o.remove("panel.oidc.client_secret");
    o.put("panel.oidc.client_secret_file", secret.toString());
    assertEquals("file-secret", ConfigLoader.load(null, false, Map.of(), o).panel().oidc().clientSecret());
    o.put("panel.oidc.client_secret", "s3cr3t-value-never-shown");
    String both = error(o);
    assertTrue(both.contains("set one of them, not both"), both);
    assertFalse(both.contains("s3cr3t"), both);
  }

  @Test
  void everyBadValueIsNamed() {
    Map<String, String> o = valid();
    o.remove("panel.oidc.client_secret");
    assertTrue(error(o).startsWith("panel.oidc.client_secret (env MESH_PANEL_OIDC_CLIENT_SECRET) or panel.oidc.client_secret_file"));
    o = valid();
    o.put("panel.oidc.mappings", MAPPINGS.replace("\"viewer\",\"team\"", "\"boss\",\"team\""));
    assertEquals("panel.oidc.mappings[1].role: must be admin, operator or viewer", error(o));
    o = valid();
    o.put("panel.oidc.mappings", "[{\"claim\":\"groups\",\"value\":\"x\",\"role\":\"admin\",\"team\":\"Web Team\",\"environment\":\"*\"}]");
    assertTrue(error(o).startsWith("panel.oidc.mappings[0].team:"));
    o = valid();
    o.put("panel.oidc.mappings", "[{\"claim\":\"groups\",\"value\":\"x\",\"role\":\"admin\",\"team\":\"*\",\"environment\":\"*\",\"rol\":1}]");
    assertTrue(error(o).startsWith("panel.oidc.mappings[0].rol: unknown key"));
    o = valid();
    o.put("panel.oidc.mappings", "[]");
    assertTrue(error(o).contains("needs at least one mapping"));
    o = valid();
    o.put("panel.oidc.issuer", "http://idp.example.net/realms/mesh");
    assertTrue(error(o).startsWith("panel.oidc.issuer (env MESH_PANEL_OIDC_ISSUER): 'http://idp.example.net/realms/mesh' must be an https:// URL"));
    o = valid();
    o.put("panel.oidc.redirect_uri", "https://panel.example.net/callback");
    assertTrue(error(o).contains("must end with /api/v1/session/oidc/callback"));
    o = valid();
    o.remove("panel.oidc.issuer");
    assertTrue(error(o).contains("is set but panel.oidc.issuer is not"));
  }
}
