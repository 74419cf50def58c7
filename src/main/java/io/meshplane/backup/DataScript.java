package io.meshplane.backup;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;

/**
 * The dump's data as pg_restore renders it ({@code --data-only}), read strictly and only then run.
 * Outside comments and blank lines it may hold nothing but: a fixed list of {@code SET} lines (checked,
 * not run: the load sets its own), pg_restore's restrict and unrestrict guard lines (psql meta-commands; not run),
 * {@code COPY public.<table> (<columns>) FROM stdin;} blocks whose table and column list are exactly
 * the migrated schema's and which end with a line {@code \.}, and
 * {@code SELECT pg_catalog.setval('public.<sequence>', <n>, <true|false>);} for the schema's sequences.
 * Each table and sequence at most once. The same reader checks the file and then runs it, so what runs
 * is what was checked: COPY blocks through JDBC's COPY API (their rows are data to the server, never
 * SQL), the setval lines as they are.
 */
final class DataScript {
  /** What the data holds: rows per table, and the sequences it sets. */
  record Summary(Map<String, Long> rows, Set<String> sequences) {}

  private static final Set<String> SETTINGS = Set.of(
      "SET statement_timeout = 0;",
      "SET lock_timeout = 0;",
      "SET idle_in_transaction_session_timeout = 0;",
      "SET transaction_timeout = 0;",
      "SET client_encoding = 'UTF8';",
      "SET standard_conforming_strings = on;",
      "SELECT pg_catalog.set_config('search_path', '', false);",
      "SET check_function_bodies = false;",
      "SET xmloption = content;",
      "SET client_min_messages = warning;",
      "SET row_security = off;",
      "SET default_tablespace = '';",
      "SET default_table_access_method = heap;");
  private static final Pattern RESTRICT = Pattern.compile("\\\\(un)?restrict ([A-Za-z0-9]{1,128})");
  private static final Pattern ANY_COPY = Pattern.compile("COPY public\\.[^ ]+ \\([^;]*\\) FROM stdin;");
  private static final Pattern SETVAL = Pattern.compile("SELECT pg_catalog\\.setval\\(('(?:[^']|'')+'), (-?[0-9]{1,19}), (true|false)\\);");
  private static final byte[] END_OF_COPY = {'\\', '.'};
  private static final int MAX_LINE = 64 * 1024 * 1024;
  private static final int CHUNK = 256 * 1024;

  private DataScript() {}

  /** Checks the form only (before the schema exists): nothing but the lines above. */
  static Summary checkForm(Path file) throws IOException {
    try {
      return read(file, null, null);
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Checks the file against the migrated schema: exact COPY headers, known sequences, every table and sequence present. */
  static Summary check(Path file, CatalogSchema schema) throws IOException {
    try {
      Summary s = read(file, schema, null);
      List<String> missing = new ArrayList<>();
      for (String t : schema.tables()) if (!s.rows().containsKey(t)) missing.add("the data of table " + t);
      for (String q : schema.sequences()) if (!s.sequences().contains(q)) missing.add("the value of sequence " + q);
      if (!missing.isEmpty()) throw new Refused("the dump's data lacks " + String.join(", ", missing));
      return s;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Runs the checked file on {@code c}, inside the caller's transaction. */
  static Summary load(Path file, CatalogSchema schema, Connection c) throws IOException, SQLException {
    return read(file, schema, c);
  }

  private static Summary read(Path file, CatalogSchema schema, Connection run) throws IOException, SQLException {
    Map<String, String> headers = new HashMap<>();
    Map<String, String> literals = new HashMap<>();
    if (schema != null) {
      for (String t : schema.tables()) headers.put(schema.copyHeader(t), t);
      for (String s : schema.sequences()) literals.put(schema.sequenceLiteral(s), s);
    }
    Map<String, Long> rows = new LinkedHashMap<>();
    Map<String, Boolean> sequences = new LinkedHashMap<>();
    String restrictKey = null;
    boolean unrestricted = false;
    boolean statements = false;
    try (InputStream in = Files.newInputStream(file)) {
      Lines lines = new Lines(in);
      for (byte[] raw; (raw = lines.next()) != null; ) {
        String line = text(raw, lines.number());
        if (line.isEmpty() || line.startsWith("--")) continue;
        if (unrestricted) throw unexpected(lines.number(), line, " after its unrestrict line");
        Matcher r = RESTRICT.matcher(line);
        if (r.matches()) {
          if (r.group(1) == null && restrictKey == null && !statements) {
            restrictKey = r.group(2);
          } else if (r.group(1) != null && r.group(2).equals(restrictKey)) {
            unrestricted = true;
          } else {
            throw unexpected(lines.number(), line, "");
          }
          continue;
        }
        statements = true;
        if (SETTINGS.contains(line)) continue;
        if (line.startsWith("COPY ")) {
          String table = schema == null ? (ANY_COPY.matcher(line).matches() ? line : null) : headers.get(line);
          if (table == null) throw unexpected(lines.number(), line, schema == null ? "" : ": not a table of Meshplane's schema with its columns");
          if (rows.containsKey(table)) throw unexpected(lines.number(), line, ": the table's data is given twice");
          rows.put(table, copy(lines, run, line));
          continue;
        }
        Matcher s = SETVAL.matcher(line);
        if (s.matches()) {
          String seq = schema == null ? s.group(1) : literals.get(s.group(1));
          if (seq == null) throw unexpected(lines.number(), line, ": not a sequence of Meshplane's schema");
          if (sequences.put(seq, true) != null) throw unexpected(lines.number(), line, ": the sequence is set twice");
          if (run != null) {
            try (Statement st = run.createStatement()) {
              st.execute(line);
            }
          }
          continue;
        }
        throw unexpected(lines.number(), line, "");
      }
    }
    if (restrictKey != null && !unrestricted) throw new Refused("the dump's data ends without its \\unrestrict line (cut short?)");
    return new Summary(rows, sequences.keySet());
  }

  /** Reads (and with {@code run}, loads) one COPY block's rows up to its {@code \.} line; returns how many rows. */
  private static long copy(Lines lines, Connection run, String header) throws IOException, SQLException {
    CopyIn in = run == null ? null : run.unwrap(PGConnection.class).getCopyAPI().copyIn(header);
    try {
      ByteArrayOutputStream chunk = new ByteArrayOutputStream(CHUNK + 1024);
      long count = 0;
      for (byte[] row; (row = lines.next()) != null; ) {
        if (java.util.Arrays.equals(row, END_OF_COPY)) {
          if (in != null) {
            if (chunk.size() > 0) in.writeToCopy(chunk.toByteArray(), 0, chunk.size());
            long loaded = in.endCopy();
            if (loaded != count) throw new Refused("the data of " + header + " loaded " + loaded + " rows of " + count);
          }
          return count;
        }
        count++;
        if (in != null) {
          chunk.write(row);
          chunk.write('\n');
          if (chunk.size() >= CHUNK) {
            in.writeToCopy(chunk.toByteArray(), 0, chunk.size());
            chunk.reset();
          }
        }
      }
      throw new Refused("the dump's data ends inside a COPY block (no \\. line after the rows of " + Printable.of(header) + ")");
    } finally {
      if (in != null && in.isActive()) in.cancelCopy();
    }
  }

  private static String text(byte[] raw, long number) {
    try {
      return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(raw)).toString();
    } catch (CharacterCodingException e) {
      throw new Refused("the dump's data, line " + number + ": not UTF-8 text");
    }
  }

  private static Refused unexpected(long number, String line, String why) {
    return new Refused("the dump's data, line " + number + ", holds what a restore never runs" + why + ": " + Printable.of(line));
  }

  /** The file's lines as bytes, without their LF; the last line must end with one. */
  private static final class Lines {
    private final InputStream in;
    private final byte[] buf = new byte[1 << 16];
    private int pos;
    private int end;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);
    private long number;

    Lines(InputStream in) {
      this.in = in;
    }

    byte[] next() throws IOException {
      line.reset();
      while (true) {
        if (pos == end) {
          end = in.read(buf);
          pos = 0;
          if (end <= 0) {
            end = 0;
            if (line.size() == 0) return null;
            throw new Refused("the dump's data does not end with a line end (cut short?)");
          }
        }
        int start = pos;
        while (pos < end && buf[pos] != '\n') pos++;
        if (line.size() + (pos - start) > MAX_LINE) {
          throw new Refused("the dump's data has a line longer than " + (MAX_LINE >> 20) + " MiB (line " + (number + 1) + ")");
        }
        line.write(buf, start, pos - start);
        if (pos < end) {
          pos++;
          number++;
          return line.toByteArray();
        }
      }
    }

    long number() {
      return number;
    }
  }
}
