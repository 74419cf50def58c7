package io.meshplane.agent;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.function.Consumer;

/**
 * {@code meshplane simulate --control FILE}: commands to a running simulation, appended to a file as lines
 * ({@code echo "offline 0.05" >> FILE}). A daemon thread of its own (never an event loop) reads what was
 * appended every second and hands each complete line to the simulator, in order: {@code offline FRACTION}
 * takes that fraction of the fleet offline (the nodes whose {@link #selected} draw is below it; those
 * already offline stay), {@code online} brings every offline node back. Blank lines and lines starting
 * with {@code #} are skipped; a file that does not exist yet is waited for; one that shrinks is read
 * again from its start.
 */
final class SimControl {
  /** A command: {@code fraction} > 0 takes that fraction offline; 0 brings every offline node back. */
  record Command(double fraction) {
    boolean online() {
      return fraction == 0;
    }
  }

  static final long POLL_MS = 1_000;
  /** The longest line read; anything longer is refused as a whole. */
  static final int MAX_LINE = 200;

  private final Path file;
  private final Consumer<Command> commands;
  private final Consumer<String> refused;
  private long offset;
  private volatile boolean stopped;

  SimControl(Path file, Consumer<Command> commands, Consumer<String> refused) {
    this.file = file;
    this.commands = commands;
    this.refused = refused;
  }

  /** Whether node {@code n} is among the first {@code fraction} of the fleet to go offline: n × φ mod 1 below it, evenly spread. */
  static boolean selected(int n, double fraction) {
    double draw = (n * 0.6180339887498949) % 1.0;
    return draw < fraction;
  }

  /** A line's command, or null with why not through {@code why[0]}; a blank or comment line: null and no reason. */
  static Command parse(String line, String[] why) {
    String t = line.strip();
    if (t.isEmpty() || t.startsWith("#")) return null;
    String[] w = t.split("\\s+");
    if (w.length == 1 && w[0].equals("online")) return new Command(0);
    if (w.length == 2 && w[0].equals("offline")) {
      try {
        double f = Double.parseDouble(w[1]);
        if (f > 0 && f <= 1) return new Command(f);
      } catch (NumberFormatException e) {
        // refused below
      }
    }
    why[0] = "'" + printable(t) + "' is not 'offline FRACTION' (0 < FRACTION <= 1) or 'online'";
    return null;
  }

  void start() {
    Thread t = new Thread(this::loop, "meshplane-simulate-control");
    t.setDaemon(true);
    t.start();
  }

  void stop() {
    stopped = true;
  }

  private void loop() {
    while (!stopped) {
      try {
        poll();
        Thread.sleep(POLL_MS);
      } catch (InterruptedException e) {
        return;
      } catch (IOException | RuntimeException e) {
        refused.accept("reading " + file + ": " + e.getMessage());
        try {
          Thread.sleep(POLL_MS);
        } catch (InterruptedException ie) {
          return;
        }
      }
    }
  }

  /** Reads the complete lines appended since the last call and hands them over. */
  void poll() throws IOException {
    if (!Files.exists(file)) return;
    try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
      long size = f.length();
      if (size < offset) offset = 0;
      if (size == offset) return;
      byte[] bytes = new byte[(int) Math.min(size - offset, 64 * 1024)];
      f.seek(offset);
      f.readFully(bytes);
      int start = 0;
      for (int i = 0; i < bytes.length; i++) {
        if (bytes[i] != '\n') continue;
        String line = new String(bytes, start, i - start, StandardCharsets.UTF_8);
        start = i + 1;
        String[] why = new String[1];
        Command c = line.length() > MAX_LINE ? null : parse(line, why);
        if (line.length() > MAX_LINE) why[0] = "a line longer than " + MAX_LINE + " characters";
        if (c != null) commands.accept(c);
        else if (why[0] != null) refused.accept(why[0]);
      }
      if (start == 0 && bytes.length == 64 * 1024) start = bytes.length; // no newline in 64 KiB: skipped
      offset += start;
    }
  }

  private static String printable(String s) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < s.length() && sb.length() < 60; i++) {
      char c = s.charAt(i);
      sb.append(c < 0x20 || c == 0x7f ? '?' : c);
    }
    return sb.toString();
  }

  static String describe(Command c) {
    return c.online() ? "online" : String.format(Locale.ROOT, "offline %.4f", c.fraction());
  }
}
