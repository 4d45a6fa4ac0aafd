package io.leaderhook.test.josdk;

import java.time.Instant;

/**
 * One JSON object per line on stdout, as opshell's logger writes them: "ts" (RFC 3339, ns),
 * "logger", "msg", "processID" and the given fields. The failover tests read only these lines;
 * JOSDK's and fabric8's own messages go through slf4j-simple to stderr as plain text, which
 * the recorder skips.
 */
final class Log {
  private final String logger;
  private final String processID;

  Log(String logger, String processID) {
    this.logger = logger;
    this.processID = processID;
  }

  void info(String msg, Object... keyValues) {
    write(msg, null, keyValues);
  }

  void error(Throwable err, String msg, Object... keyValues) {
    write(msg, err, keyValues);
  }

  private synchronized void write(String msg, Throwable err, Object... keyValues) {
    StringBuilder b = new StringBuilder(256).append('{');
    field(b, "ts", Instant.now().toString());
    field(b, "logger", logger);
    field(b, "msg", msg);
    if (err != null) field(b, "error", describe(err));
    field(b, "processID", processID);
    for (int i = 0; i + 1 < keyValues.length; i += 2) field(b, String.valueOf(keyValues[i]), keyValues[i + 1]);
    b.setLength(b.length() - 1);
    System.out.println(b.append('}'));
    System.out.flush();
  }

  /** The error and its causes on one line: JOSDK wraps the one that says what went wrong. */
  private static String describe(Throwable err) {
    StringBuilder b = new StringBuilder(String.valueOf(err));
    for (Throwable c = err.getCause(); c != null && c != c.getCause(); c = c.getCause()) b.append(": caused by ").append(c);
    return b.toString();
  }

  private static void field(StringBuilder b, String key, Object value) {
    quote(b, key).append(':');
    if (value instanceof Boolean || value instanceof Number) b.append(value);
    else quote(b, String.valueOf(value));
    b.append(',');
  }

  static StringBuilder quote(StringBuilder b, String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
          else b.append(c);
        }
      }
    }
    return b.append('"');
  }
}
