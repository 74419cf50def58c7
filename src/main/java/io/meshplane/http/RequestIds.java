package io.meshplane.http;

import io.vertx.ext.web.RoutingContext;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Pattern;

/**
 * Gives every request an id (the client's if sane, else a new one) and echoes it on every response. The
 * agent's ingress edge names its denials the same way ({@link #choose}).
 */
public final class RequestIds {
  public static final String HEADER = "X-Request-Id";
  private static final String KEY = "request_id";
  private static final Pattern SANE = Pattern.compile("^[A-Za-z0-9._:\\-]{1,128}$");
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private RequestIds() {}

  public static void handle(RoutingContext ctx) {
    String id = choose(ctx.request().getHeader(HEADER));
    ctx.put(KEY, id);
    ctx.response().putHeader(HEADER, id);
    ctx.next();
  }

  /** The client's id when it sent a sane one, else a new one. */
  public static String choose(String clientId) {
    return clientId != null && SANE.matcher(clientId).matches() ? clientId : generate();
  }

  public static String of(RoutingContext ctx) {
    String id = ctx.get(KEY);
    return id == null ? "unknown" : id;
  }

  /** 128 random bits as hex; ThreadLocalRandom because a request id needs uniqueness, not secrecy. */
  static String generate() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    char[] out = new char[32];
    long a = r.nextLong();
    long b = r.nextLong();
    for (int i = 0; i < 16; i++) {
      out[i] = HEX[(int) (a >>> (60 - 4 * i)) & 0xf];
      out[16 + i] = HEX[(int) (b >>> (60 - 4 * i)) & 0xf];
    }
    return new String(out);
  }
}
