package io.meshplane.http;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class JsonBodiesTest {
  @Test
  void acceptsJsonMediaTypesOnly() {
    assertTrue(JsonBodies.isJson("application/json"));
    assertTrue(JsonBodies.isJson("application/json; charset=utf-8"));
    assertTrue(JsonBodies.isJson("Application/JSON;charset=UTF-8"));
    assertTrue(JsonBodies.isJson("application/merge-patch+json"));
    assertFalse(JsonBodies.isJson(null));
    assertFalse(JsonBodies.isJson("text/plain"));
    assertFalse(JsonBodies.isJson("application/x-www-form-urlencoded"));
    assertFalse(JsonBodies.isJson("application/json; charset=latin1"));
    assertFalse(JsonBodies.isJson("text/json+json"));
  }
}
