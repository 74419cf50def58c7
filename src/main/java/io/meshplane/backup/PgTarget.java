package io.meshplane.backup;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The database of {@code MESH_PG_URL} ({@code postgresql://user[:password]@host[:port]/db[?params]},
 * as the service reads it), for JDBC and for the PostgreSQL tools. The password never appears in
 * {@link #toolUrl()} or {@link #toString()}: the tools get it through {@code PGPASSWORD}.
 */
final class PgTarget {
  private static final Pattern URL = Pattern.compile(
      "postgres(?:ql)?://(?:([^:@/?]*)(?::([^@/?]*))?@)?(\\[[0-9A-Fa-f:.]+\\]|[^:/?@\\[\\]]+)(?::(\\d{1,5}))?/([^?]+)(?:\\?(.*))?");

  private final String rawUser;
  private final String user;
  private final String password;
  private final String host;
  private final int port;
  private final String rawDatabase;
  private final String database;
  private final String query;

  private PgTarget(String rawUser, String password, String host, int port, String rawDatabase, String query) {
    this.rawUser = rawUser;
    this.user = decode(rawUser);
    this.password = password;
    this.host = host;
    this.port = port;
    this.rawDatabase = rawDatabase;
    this.database = decode(rawDatabase);
    this.query = query;
  }

  /**
   * @param env where {@code MESH_PG_URL} (and, when the URL has no password, {@code PGPASSWORD}) are read
   */
  static PgTarget fromEnvironment(Map<String, String> env) {
    String url = env.get("MESH_PG_URL");
    if (url == null || url.isBlank()) throw new Refused("MESH_PG_URL is not set (postgresql://user@host:port/database)");
    // The URL is never quoted back: it may hold a password.
    Matcher m = URL.matcher(url.trim());
    if (!m.matches()) {
      throw new Refused("MESH_PG_URL is not a postgresql://user[:password]@host[:port]/database URL (\"embedded\" is not one:"
          + " use postgresql://postgres@127.0.0.1:<port>/postgres with the embedded server's port)");
    }
    if (m.group(1) == null || m.group(1).isEmpty()) throw new Refused("MESH_PG_URL names no user (postgresql://user@host:port/database)");
    String password = m.group(2) != null ? decode(m.group(2)) : null;
    // a password given as a parameter (?password=) goes the same way: never onto a command line
    StringBuilder query = new StringBuilder();
    if (m.group(6) != null) {
      for (String param : m.group(6).split("&")) {
        if (param.startsWith("password=")) {
          if (password == null) password = decode(param.substring("password=".length()));
        } else if (!param.isEmpty()) {
          query.append(query.length() == 0 ? "" : "&").append(param);
        }
      }
    }
    if (password == null) password = env.get("PGPASSWORD");
    int port = m.group(4) == null ? 5432 : Integer.parseInt(m.group(4));
    if (port < 1 || port > 65535) throw new Refused("MESH_PG_URL: the port is not 1-65535");
    return new PgTarget(m.group(1), password, m.group(3), port, m.group(5), query.length() == 0 ? null : query.toString());
  }

  Connection connect() throws SQLException {
    Properties props = new Properties();
    props.setProperty("user", user);
    if (password != null) props.setProperty("password", password);
    props.setProperty("connectTimeout", "10");
    props.setProperty("loginTimeout", "15");
    props.setProperty("ApplicationName", "meshplane snapshot");
    return DriverManager.getConnection(jdbcUrl(), props);
  }

  String jdbcUrl() {
    return "jdbc:postgresql://" + host + ":" + port + "/" + rawDatabase + (query == null ? "" : "?" + query);
  }

  /** For pg_dump's {@code --dbname}: the same URL without the password. */
  String toolUrl() {
    return "postgresql://" + rawUser + "@" + host + ":" + port + "/" + rawDatabase + (query == null ? "" : "?" + query);
  }

  /** What the tools need in their environment: the password, if there is one. */
  Map<String, String> toolEnvironment() {
    Map<String, String> env = new HashMap<>();
    if (password != null) env.put("PGPASSWORD", password);
    return env;
  }

  String user() {
    return user;
  }

  String password() {
    return password;
  }

  String database() {
    return database;
  }

  @Override
  public String toString() {
    return database + " on " + host + ":" + port + " as " + user;
  }

  private static String decode(String s) {
    if (s.indexOf('%') < 0) return s;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%') {
        if (i + 2 >= s.length() || !HexFormat.isHexDigit(s.charAt(i + 1)) || !HexFormat.isHexDigit(s.charAt(i + 2))) {
          throw new Refused("MESH_PG_URL has a % that is not followed by two hex digits");
        }
        out.write(HexFormat.fromHexDigits(s, i + 1, i + 3));
        i += 2;
      } else {
        byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
        out.write(b, 0, b.length);
      }
    }
    return out.toString(StandardCharsets.UTF_8);
  }
}
