package io.meshplane.http;

import io.meshplane.common.Page;
import io.meshplane.common.Refusal;
import io.vertx.core.json.JsonArray;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Signs and checks the opaque pagination cursors (API.md §2). A cursor names the list it belongs to
 * and the sort key of the last item returned, and carries an HMAC-SHA256 tag (128 bits) made with the
 * installation's cursor key, which every replica reads from PostgreSQL at start. So a cursor from
 * another list, an edited cursor and a made-up one are each refused with 400 {@code cursor} instead
 * of quietly giving an empty or shifted page. The key authenticates cursors and nothing else: knowing
 * it lets one build a cursor, never read outside one's scope (every query filters by the caller's
 * scope whatever the cursor says).
 *
 * <p>Form: {@code base64url(["<list>", key parts...]) "." base64url(tag)}, at most 512 characters.
 */
public final class Cursors implements Page.Signer {
  public static final int MAX_LENGTH = 512;
  private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
  private static final int TAG_BYTES = 16;
  private final Mac prototype;

  public Cursors(byte[] key) {
    if (key.length < 16) throw new IllegalArgumentException("a cursor key needs at least 128 bits");
    try {
      prototype = Mac.getInstance("HmacSHA256");
      prototype.init(new SecretKeySpec(key, "HmacSHA256"));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is not available", e);
    }
  }

  /** The cursor that continues {@code list} after the item whose sort key is {@code key}. */
  @Override
  public String encode(String list, List<String> key) {
    List<Object> parts = new ArrayList<>(key.size() + 1);
    parts.add(list);
    parts.addAll(key);
    String body = B64.encodeToString(new JsonArray(parts).encode().getBytes(StandardCharsets.UTF_8));
    return body + "." + B64.encodeToString(tag(body));
  }

  /** The sort key in a cursor this installation made for {@code list}; 400 naming {@code cursor} otherwise. */
  public List<String> decode(String list, String cursor) {
    int dot = cursor.indexOf('.');
    if (cursor.length() > MAX_LENGTH || dot <= 0) throw invalid();
    String body = cursor.substring(0, dot);
    byte[] given;
    try {
      given = Base64.getUrlDecoder().decode(cursor.substring(dot + 1));
    } catch (IllegalArgumentException e) {
      throw invalid();
    }
    if (!MessageDigest.isEqual(given, tag(body))) throw invalid();
    JsonArray parts;
    try {
      parts = new JsonArray(new String(Base64.getUrlDecoder().decode(body), StandardCharsets.UTF_8));
    } catch (RuntimeException e) {
      throw invalid();
    }
    if (parts.size() < 2 || !list.equals(parts.getValue(0))) throw invalid();
    List<String> key = new ArrayList<>(parts.size() - 1);
    for (int i = 1; i < parts.size(); i++) {
      if (!(parts.getValue(i) instanceof String s)) throw invalid();
      key.add(s);
    }
    return List.copyOf(key);
  }

  private byte[] tag(String body) {
    Mac mac;
    try {
      mac = (Mac) prototype.clone();
    } catch (CloneNotSupportedException e) {
      throw new IllegalStateException(e);
    }
    byte[] full = mac.doFinal(body.getBytes(StandardCharsets.US_ASCII));
    return java.util.Arrays.copyOf(full, TAG_BYTES);
  }

  private static Refusal invalid() {
    return Refusal.invalid("cursor", "is not a cursor this API returned for this list");
  }
}
